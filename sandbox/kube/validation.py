"""Validation of a custom resource's body against its CRD's structural schema, as a real
kube-apiserver does after pruning and defaulting (``sandbox.kube.schema``): ``type``,
``nullable``, ``enum``, ``required``, ``minimum``/``maximum``, ``minLength``/``maxLength``,
``maxItems``, ``pattern``, ``items``, ``x-kubernetes-int-or-string``, list-map keys and the
``date-time`` format (other keywords are accepted unchecked), each failure a ``FieldError`` worded
like the real server's."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

Schema = Mapping[str, Any]


@dataclass(frozen=True)
class FieldError:
    """One field error of a 422 answer: ``field`` is a path like ``status.costs[0].current``."""

    field: str
    reason: str  # the Status cause reason: FieldValueInvalid, FieldValueRequired, ...
    message: str  # the whole text, field path included

    def cause(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _quote(value: Any) -> str:
    """A value as the server prints it in a field error: strings quoted, numbers bare."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _has_type(value: Any, wanted: str) -> bool:
    actual = _json_type(value)
    if wanted == "number":
        return actual in ("integer", "number")
    if wanted == "integer" and isinstance(value, float):
        return value.is_integer()  # JSON has one number type: 3.0 is an integer
    return actual == wanted


def _date_time_ok(value: str) -> bool:
    """RFC 3339 as the server checks it, loosely."""
    text = value.strip()
    if not re.match(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}", text):
        return False
    try:
        datetime.fromisoformat(re.sub(r"[zZ]$", "+00:00", text.replace("t", "T")))
    except ValueError:
        return False
    return True


def validate(schema: Schema, value: Any, path: str = "", *, root: bool = True) -> list[FieldError]:
    """Every structural error of ``value`` against ``schema``, in document order (``[]`` if valid)."""
    found: list[FieldError] = []
    _validate(schema, value, path, found, root=root)
    return found


def _invalid(found: list[FieldError], path: str, value: Any, detail: str) -> None:
    found.append(FieldError(path, "FieldValueInvalid", f"{path}: Invalid value: {_quote(value)}: {detail}"))


def _validate(schema: Schema, value: Any, path: str, found: list[FieldError], *, root: bool) -> None:
    where = path or "<root>"
    if value is None:
        if schema.get("nullable") or not (schema.get("type") or schema.get("x-kubernetes-int-or-string")):
            return
        wanted = "integer or string" if schema.get("x-kubernetes-int-or-string") else schema["type"]
        _invalid(found, where, "null", f'{where} in body must be of type {wanted}: "null"')
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (_has_type(value, "integer") or isinstance(value, str)):
            actual = _json_type(value)
            _invalid(found, where, actual, f'{where} in body must be of type integer,string: "{actual}"')
            return
    elif isinstance(schema.get("type"), str) and not _has_type(value, schema["type"]):
        actual = _json_type(value)
        _invalid(found, where, actual, f'{where} in body must be of type {schema["type"]}: "{actual}"')
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_quote(option) for option in schema["enum"])
        message = f"{where}: Unsupported value: {_quote(value)}: supported values: {supported}"
        found.append(FieldError(where, "FieldValueNotSupported", message))
    if isinstance(value, str):
        _validate_string(schema, value, where, found)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(schema, value, where, found)
    elif isinstance(value, list):
        _validate_array(schema, value, path, found)
    elif isinstance(value, dict):
        _validate_object(schema, value, path, found, root=root)


def _validate_string(schema: Schema, value: str, where: str, found: list[FieldError]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        _invalid(found, where, value, f"{where} in body should be at least {schema['minLength']} chars long")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        message = f"{where}: Too long: may not be more than {schema['maxLength']} bytes"
        found.append(FieldError(where, "FieldValueTooLong", message))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        _invalid(found, where, value, f"{where} in body should match '{schema['pattern']}'")
    if schema.get("format") == "date-time" and not _date_time_ok(value):
        _invalid(found, where, value, f"{where} in body must be of type date-time: {_quote(value)}")


def _validate_number(schema: Schema, value: float, where: str, found: list[FieldError]) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        _invalid(found, where, value, f"{where} in body should be greater than or equal to {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        _invalid(found, where, value, f"{where} in body should be less than or equal to {schema['maximum']}")


def _validate_array(schema: Schema, value: list[Any], path: str, found: list[FieldError]) -> None:
    where = path or "<root>"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        message = f"{where}: Too many: {len(value)}: must have at most {schema['maxItems']} items"
        found.append(FieldError(where, "FieldValueTooMany", message))
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            _validate(items, item, f"{path}[{index}]", found, root=False)
    if schema.get("x-kubernetes-list-type") == "map":
        keys = list(schema.get("x-kubernetes-list-map-keys") or [])
        seen: set[str] = set()
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = json.dumps({k: item.get(k) for k in keys}, sort_keys=True)
            if key in seen:
                child = f"{path}[{index}]"
                message = f"{child}: Duplicate value: {key}"
                found.append(FieldError(child, "FieldValueDuplicate", message))
            seen.add(key)


def _validate_object(schema: Schema, value: dict[str, Any], path: str, found: list[FieldError], *, root: bool) -> None:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value and not (root and name == "metadata"):
            child = join(path, name)
            found.append(FieldError(child, "FieldValueRequired", f"{child}: Required value"))
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if root and name == "metadata":
            continue
        sub = properties.get(name)
        if sub is None and isinstance(extra, Mapping):
            sub = extra
        if sub is not None:
            _validate(sub, item, join(path, name), found, root=False)
