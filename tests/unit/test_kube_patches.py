"""RFC 7386 merge patch and RFC 6902 JSON patch in the sandbox API server (no I/O)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox.kube.patches import PatchError, get_pointer, json_equal, json_patch, merge_patch, parse_pointer

# RFC 7386 appendix A, every row.
RFC7386_EXAMPLES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_EXAMPLES)
def test_merge_patch_rfc_examples(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == expected
    assert target == before  # inputs are not modified


def test_json_patch_operations() -> None:
    doc: dict[str, Any] = {"spec": {"items": ["a", "c"], "n": 1}, "metadata": {"labels": {"x/y": "1"}}}
    patched = json_patch(
        doc,
        [
            {"op": "test", "path": "/spec/n", "value": 1},
            {"op": "add", "path": "/spec/items/1", "value": "b"},
            {"op": "add", "path": "/spec/items/-", "value": "d"},
            {"op": "replace", "path": "/spec/n", "value": 2},
            {"op": "copy", "from": "/spec/n", "path": "/spec/m"},
            {"op": "move", "from": "/metadata/labels/x~1y", "path": "/metadata/labels/z"},
            {"op": "remove", "path": "/spec/items/0"},
            {"op": "add", "path": "/status", "value": {"phase": "Done"}},
        ],
    )
    assert patched == {
        "spec": {"items": ["b", "c", "d"], "n": 2, "m": 2},
        "metadata": {"labels": {"z": "1"}},
        "status": {"phase": "Done"},
    }
    assert doc["spec"]["items"] == ["a", "c"]  # the input is untouched


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "test", "path": "/a", "value": 2}],
        [{"op": "test", "path": "/a", "value": True}],  # JSON: true is not 1
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "add", "path": "/list/5", "value": 1}],
        [{"op": "add", "path": "/list/01", "value": 1}],
        [{"op": "add", "path": "/missing/child", "value": 1}],
        [{"op": "move", "from": "/obj", "path": "/obj/inner"}],
        [{"op": "add", "path": "a", "value": 1}],
        [{"op": "add", "path": "/a"}],
        [{"op": "frobnicate", "path": "/a"}],
        [{"op": "remove", "path": ""}],
        {"op": "add", "path": "/a", "value": 1},
        ["not an operation"],
    ],
)
def test_json_patch_errors_leave_the_document_alone(operations: Any) -> None:
    doc = {"a": 1, "list": [0], "obj": {"x": 1}}
    with pytest.raises(PatchError):
        json_patch(
            doc, [{"op": "add", "path": "/b", "value": 1}, *operations] if isinstance(operations, list) else operations
        )
    assert doc == {"a": 1, "list": [0], "obj": {"x": 1}}


def test_whole_document_operations() -> None:
    assert json_patch({"a": 1}, [{"op": "add", "path": "", "value": {"b": 2}}]) == {"b": 2}
    assert json_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}]) == [1]


def test_pointers() -> None:
    assert parse_pointer("") == []
    assert parse_pointer("/a~1b/~0c/0") == ["a/b", "~c", "0"]
    assert get_pointer({"a/b": [{"~c": 3}]}, "/a~1b/0/~0c") == 3


def test_json_equal() -> None:
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal(1, True)
    assert not json_equal(0, False)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal("1", 1)


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
_json = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=10,
)
_objects = st.dictionaries(st.text(max_size=3), _json, max_size=4)


@given(_objects, _objects)
def test_merge_patch_is_idempotent(target: dict[str, Any], patch: dict[str, Any]) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


@given(_objects, st.text(max_size=3), _json)
def test_add_then_remove_restores_a_missing_key(doc: dict[str, Any], key: str, value: Any) -> None:
    doc.pop(key, None)
    pointer = "/" + key.replace("~", "~0").replace("/", "~1")
    added = json_patch(doc, [{"op": "add", "path": pointer, "value": value}])
    assert json_equal(get_pointer(added, pointer), value)
    assert (
        json_patch(added, [{"op": "test", "path": pointer, "value": value}, {"op": "remove", "path": pointer}]) == doc
    )
