"""Label and field selector parsing and matching in the sandbox API server (no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox.kube.selectors import (
    FieldRequirement,
    Requirement,
    SelectorError,
    fields_match,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "gold", "finops.stakater.com/tenant": "team-a"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", (Requirement("app", "=", frozenset({"web"})),)),
        ("app==web", (Requirement("app", "=", frozenset({"web"})),)),
        ("app != web", (Requirement("app", "!=", frozenset({"web"})),)),
        ("tier in (gold, silver)", (Requirement("tier", "in", frozenset({"gold", "silver"})),)),
        ("tier notin (bronze)", (Requirement("tier", "notin", frozenset({"bronze"})),)),
        ("app", (Requirement("app", "exists"),)),
        ("!legacy", (Requirement("legacy", "!"),)),
        ("app=", (Requirement("app", "=", frozenset({""})),)),
        ("", ()),
        ("   ", ()),
        (None, ()),
        (
            "app=web,tier in (a,b),!x",
            (
                Requirement("app", "=", frozenset({"web"})),
                Requirement("tier", "in", frozenset({"a", "b"})),
                Requirement("x", "!"),
            ),
        ),
    ],
)
def test_parse(selector: str | None, expected: tuple[Requirement, ...]) -> None:
    assert parse_label_selector(selector) == expected


def test_keys_starting_with_in_are_keys_not_operators() -> None:
    assert parse_label_selector("index=1,inside") == (
        Requirement("index", "=", frozenset({"1"})),
        Requirement("inside", "exists"),
    )


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("app=web", True),
        ("app=api", False),
        ("app!=api", True),
        ("missing!=x", True),  # != also matches objects without the label
        ("tier in (gold,silver)", True),
        ("tier in (silver)", False),
        ("missing in (a)", False),
        ("tier notin (gold)", False),
        ("missing notin (a)", True),  # notin also matches objects without the label
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("finops.stakater.com/tenant=team-a", True),
        ("app=web,tier=gold", True),
        ("app=web,tier=silver", False),  # comma is AND
        ("", True),
    ],
)
def test_matches(selector: str, matches: bool) -> None:
    assert labels_match(parse_label_selector(selector), LABELS) is matches


def test_no_labels_at_all() -> None:
    assert labels_match(parse_label_selector("!a,b!=c"), None)
    assert not labels_match(parse_label_selector("a"), None)


@pytest.mark.parametrize(
    "selector", ["app=web,", ",app", "tier in gold", "tier in (a,b", "app ~ web", "!", "=web", "a=b c"]
)
def test_malformed(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(selector)


def test_field_selectors() -> None:
    obj = {"metadata": {"name": "job-1", "namespace": "team-a"}}
    assert parse_field_selector("metadata.name=job-1") == (FieldRequirement("metadata.name", "job-1", True),)
    assert fields_match(parse_field_selector("metadata.name==job-1,metadata.namespace=team-a"), obj)
    assert not fields_match(parse_field_selector("metadata.namespace!=team-a"), obj)
    assert fields_match(parse_field_selector("metadata.namespace="), {"metadata": {"name": "cluster-scoped"}})
    assert fields_match(parse_field_selector(""), obj)


@pytest.mark.parametrize("selector", ["spec.phase=Done", "metadata.name"])
def test_unsupported_fields(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_field_selector(selector)


_names = st.text(alphabet="abcxyz09-.", min_size=1, max_size=8).filter(lambda s: s[0].isalnum())


@given(st.dictionaries(_names, _names, max_size=4), _names, _names)
def test_equality_and_inequality_are_complements(labels: dict[str, str], key: str, value: str) -> None:
    eq = labels_match(parse_label_selector(f"{key}={value}"), labels)
    ne = labels_match(parse_label_selector(f"{key}!={value}"), labels)
    assert eq is not ne
    assert labels_match(parse_label_selector(f"{key} in ({value})"), labels) is eq
    assert labels_match(parse_label_selector(f"{key} notin ({value})"), labels) is ne
