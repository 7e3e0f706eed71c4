"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), as pure functions.

These are the two patch formats the product's adapter sends, so their edge cases decide
whether the sandbox and a real apiserver agree: in a merge patch ``null`` deletes a key and a
list replaces the whole list; in a JSON patch ``-`` appends, ``test`` compares JSON values
(where ``true`` is not ``1``), and a failing operation leaves the document untouched.
Strategic merge patch is treated as a merge patch: the product's objects are custom
resources, for which the apiserver itself rejects strategic merge, and for built-in kinds
the difference only shows in list merging the product never relies on.
"""

from __future__ import annotations

import copy
from typing import Any

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = (MERGE_PATCH, STRATEGIC_MERGE_PATCH, JSON_PATCH)


class PatchError(ValueError):
    """A JSON patch is malformed or one of its operations cannot be applied."""


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch; neither argument is modified."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_equal(a: Any, b: Any) -> bool:
    """Equality in the JSON sense: ``True`` is not ``1`` and ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def parse_pointer(pointer: str) -> list[str]:
    """RFC 6901: ``/a~1b/0`` → ``["a/b", "0"]``; ``""`` is the whole document."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer {pointer!r} must start with '/'")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


_END = "-"  # the index just past the last element of an array


def _index(token: str, size: int, *, allow_end: bool) -> int:
    if allow_end and token == _END:
        return size
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > size or (index == size and not allow_end):
        raise PatchError(f"array index {index} out of range (length {size})")
    return index


def _resolve(doc: Any, tokens: list[str], pointer: str) -> Any:
    node = doc
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"path {pointer!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), allow_end=False)]
        else:
            raise PatchError(f"path {pointer!r} does not exist")
    return node


def get_pointer(doc: Any, pointer: str) -> Any:
    return _resolve(doc, parse_pointer(pointer), pointer)


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1], pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), allow_end=True), value)
    else:
        raise PatchError(f"cannot add at {pointer!r}: parent is not an object or array")
    return doc


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    """Remove the value at ``pointer``; returns ``(new_doc, removed_value)``."""
    tokens = parse_pointer(pointer)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _resolve(doc, tokens[:-1], pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {pointer!r} does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(last, len(parent), allow_end=False))
    raise PatchError(f"path {pointer!r} does not exist")


def _operation_field(operation: dict[str, Any], field: str) -> Any:
    if field not in operation:
        raise PatchError(f"operation {operation.get('op')!r} is missing {field!r}")
    return operation[field]


def _apply_one(doc: Any, operation: Any) -> Any:
    if not isinstance(operation, dict):
        raise PatchError(f"a JSON patch operation must be an object, got {operation!r}")
    op = operation.get("op")
    path = _operation_field(operation, "path")
    if not isinstance(path, str):
        raise PatchError("'path' must be a string")
    if op == "add":
        return _add(doc, path, copy.deepcopy(_operation_field(operation, "value")))
    if op == "remove":
        return _remove(doc, path)[0]
    if op == "replace":
        value = copy.deepcopy(_operation_field(operation, "value"))
        if not parse_pointer(path):
            return value
        get_pointer(doc, path)
        return _add(_remove(doc, path)[0], path, value)
    if op in ("move", "copy"):
        source = _operation_field(operation, "from")
        if not isinstance(source, str):
            raise PatchError("'from' must be a string")
        if op == "copy":
            return _add(doc, path, copy.deepcopy(get_pointer(doc, source)))
        if path != source and path.startswith(source + "/"):
            raise PatchError(f"cannot move {source!r} into its own child {path!r}")
        doc, value = _remove(doc, source)
        return _add(doc, path, value)
    if op == "test":
        expected = _operation_field(operation, "value")
        if not json_equal(get_pointer(doc, path), expected):
            raise PatchError(f"test operation failed: value at {path!r} is not {expected!r}")
        return doc
    raise PatchError(f"unknown JSON patch operation {op!r}")


def json_patch(doc: Any, operations: Any) -> Any:
    """Apply an RFC 6902 patch atomically: on any error ``doc`` is unchanged and nothing returns."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be an array of operations")
    result = copy.deepcopy(doc)
    for operation in operations:
        result = _apply_one(result, operation)
    return result
