"""Query parsing for the OpenCost sandbox: windows, steps, aggregate and filter syntax."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox.opencost.aggregation import key_function, parse_aggregate
from sandbox.opencost.allocation import Properties
from sandbox.opencost.filters import parse_filter
from sandbox.opencost.rendering import num
from sandbox.opencost.windows import QueryError, parse_accumulate, parse_bool, parse_step, parse_window, step_windows

NOW = int(datetime(2026, 3, 10, 14, 25, 30, tzinfo=UTC).timestamp())  # a Tuesday


def ts(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp())


@pytest.mark.parametrize(
    ("window", "start", "end"),
    [
        ("2h", "2026-03-10T13:00:00+00:00", "2026-03-10T15:00:00+00:00"),
        ("2d", "2026-03-09T00:00:00+00:00", "2026-03-11T00:00:00+00:00"),
        ("week", "2026-03-08T00:00:00+00:00", "2026-03-10T14:25:00+00:00"),
        ("lastweek", "2026-03-01T00:00:00+00:00", "2026-03-08T00:00:00+00:00"),
        ("month", "2026-03-01T00:00:00+00:00", "2026-03-10T14:25:00+00:00"),
        ("lastmonth", "2026-02-01T00:00:00+00:00", "2026-03-01T00:00:00+00:00"),
        ("1h offset 1h", "2026-03-10T12:25:00+00:00", "2026-03-10T13:25:00+00:00"),
        ("1773100800-1773104400", "2026-03-10T00:00:00+00:00", "2026-03-10T01:00:00+00:00"),
    ],
)
def test_windows(window: str, start: str, end: str) -> None:
    assert parse_window(window, NOW) == (ts(start), ts(end))


@pytest.mark.parametrize(
    "window", ["", "0x", "-1h", "2026-03-01,2026-03-02", "2026-03-01T00:00:00,2026-03-02T00:00:00"]
)
def test_bad_windows(window: str) -> None:
    with pytest.raises(QueryError):
        parse_window(window, NOW)


def test_steps_and_accumulate() -> None:
    start, end = parse_window("2026-03-01T00:00:00Z,2026-03-01T05:00:00Z", NOW)
    assert parse_step(None, start, end) == end - start
    assert parse_step("day", start, end) == 86400
    step = parse_step("2h", start, end)
    assert [(s - start, e - start) for s, e in step_windows(start, end, step)] == [
        (0, 7200),
        (7200, 14400),
        (14400, 18000),
    ]
    assert [parse_accumulate(v) for v in ("true", "false", None, "day")] == ["all", "none", "none", "day"]
    assert parse_bool("True") and not parse_bool("yes")  # Go's ParseBool; unparsable means false


def test_aggregate_parsing_and_keys() -> None:
    assert parse_aggregate(None) is None and parse_aggregate("") is None
    assert parse_aggregate("namespace, label:cost-center,namespace") == ("namespace", "label:cost_center")
    assert parse_aggregate("controllerKind") == ("controllerkind",)
    with pytest.raises(QueryError, match="invalid allocation property"):
        parse_aggregate("namespace,colour")
    props = Properties(
        cluster="c",
        namespace="shop",
        controller="web",
        controller_kind="deployment",
        labels={"team": "checkout", "cost_center": "cc-1"},
    )
    assert key_function(parse_aggregate("namespace,label:cost-center,controller") or ())(props) == (
        "shop/cc-1/deployment:web"
    )
    bare = Properties(cluster="c", namespace="legacy")
    assert key_function(("namespace", "controller", "team"))(bare) == "legacy/__unallocated__/__unallocated__"


def test_filters() -> None:
    shop = Properties(namespace="shop", labels={"team": "checkout"})
    kube = Properties(namespace="kube-system", labels={"team": "platform"})

    def matches(text: str) -> list[bool]:
        parsed = parse_filter(text)
        assert parsed is not None
        return [parsed.matches(shop), parsed.matches(kube)]

    assert matches('namespace:"shop"') == [True, False]
    assert matches('namespace:"shop","kube-system"') == [True, True]
    assert matches('namespace!:"shop"') == [False, True]
    assert matches(' namespace <~: "kube-" ') == [False, True]
    assert matches('namespace:"shop" | label[team]:"platform"') == [True, True]
    assert matches('namespace:"shop"+team:"platform"') == [False, False]
    assert matches('(namespace:"shop"|namespace:"x")+label[team]!:"platform"') == [True, False]
    assert parse_filter("  ") is None
    for bad, needle in [
        ('annotation[x]:"y"', "not supported"),
        ('namespace:"a', "unterminated"),
        ("namespace", "operator"),
    ]:
        with pytest.raises(QueryError, match=needle):
            parse_filter(bad)


def test_numbers_are_rounded_like_opencost() -> None:
    assert [num(1.0), num(0.123456), num(float("nan")), num(2.5e-6), num(4294967296.0)] == [
        1,
        0.12346,
        None,
        0,
        4294967296,
    ]


_names = st.sampled_from(["", "a", "b", "__unmounted__"])
_labels = st.dictionaries(st.sampled_from(["team", "app"]), st.sampled_from(["x", "y"]), max_size=2)
_props = st.builds(
    Properties,
    cluster=_names,
    node=_names,
    container=_names,
    controller=_names,
    namespace=_names,
    pod=_names,
    services=st.sampled_from([(), ("lb",)]),
    labels=_labels,
    namespace_labels=_labels,
)


@given(_props, _props, _props, st.booleans())
def test_intersection_fast_path_matches_the_full_rule(a: Properties, b: Properties, c: Properties, keep: bool) -> None:
    fast = a.intersect(b, keep).intersect(c, keep)
    reference = a.intersection(b, keep).intersection(c, keep)
    assert fast.to_json_text() == reference.to_json_text()
