"""Label and field selectors, parsed the way ``k8s.io/apimachinery/pkg/labels`` parses them.

The product filters by label (``finops.stakater.com/tenant=a``, ``tier in (gold,silver)``),
so the sandbox must answer those lists exactly as a real apiserver would, including the
less obvious rules: ``k!=v`` and ``k notin (...)`` also match objects without the label, and
a comma is a logical AND. A hand-written scanner keeps error messages precise and avoids a
regular expression that would mis-split the commas inside ``in (a,b)``.

Field selectors are limited to what the apiserver supports for every resource (including
custom resources): ``metadata.name`` and ``metadata.namespace`` with ``=``, ``==`` or ``!=``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]

_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./")
_VALUE_CHARS = _KEY_CHARS - {"/"}
SUPPORTED_FIELDS = ("metadata.name", "metadata.namespace")


class SelectorError(ValueError):
    """The selector text is malformed or uses an unsupported field."""


@dataclass(frozen=True)
class Requirement:
    """One comma-separated term of a label selector."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("=", "in"):
            return present and value in self.values
        return not present or value not in self.values  # "!=" and "notin"


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def at_end(self) -> bool:
        self.skip_spaces()
        return self.pos >= len(self.text)

    def peek(self, token: str) -> bool:
        self.skip_spaces()
        return self.text.startswith(token, self.pos)

    def take(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.take(token):
            raise self.error(f"expected {token!r}")

    def word(self, allowed: frozenset[str]) -> str:
        self.skip_spaces()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in allowed:
            self.pos += 1
        return self.text[start : self.pos]

    def keyword(self, word: str) -> bool:
        """``in``/``notin`` only count when followed by a space or ``(``, not as a key prefix."""
        self.skip_spaces()
        end = self.pos + len(word)
        if self.text.startswith(word, self.pos) and (
            end == len(self.text) or self.text[end].isspace() or self.text[end] == "("
        ):
            self.pos = end
            return True
        return False

    def error(self, what: str) -> SelectorError:
        return SelectorError(f"unable to parse requirement at position {self.pos} of {self.text!r}: {what}")


def _value_set(scanner: _Scanner) -> frozenset[str]:
    scanner.expect("(")
    values = {scanner.word(_VALUE_CHARS)}
    while scanner.take(","):
        values.add(scanner.word(_VALUE_CHARS))
    scanner.expect(")")
    return frozenset(values)


def _requirement(scanner: _Scanner) -> Requirement:
    if scanner.take("!"):
        key = scanner.word(_KEY_CHARS)
        if not key:
            raise scanner.error("expected a label key after '!'")
        return Requirement(key, "!")
    key = scanner.word(_KEY_CHARS)
    if not key:
        raise scanner.error("expected a label key")
    if scanner.at_end() or scanner.peek(","):
        return Requirement(key, "exists")
    if scanner.take("!="):
        return Requirement(key, "!=", frozenset({scanner.word(_VALUE_CHARS)}))
    if scanner.take("==") or scanner.take("="):
        return Requirement(key, "=", frozenset({scanner.word(_VALUE_CHARS)}))
    if scanner.keyword("notin"):
        return Requirement(key, "notin", _value_set(scanner))
    if scanner.keyword("in"):
        return Requirement(key, "in", _value_set(scanner))
    raise scanner.error("expected one of '=', '==', '!=', 'in', 'notin'")


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    """Parse ``a=b,c!=d,e in (f,g),h,!i``; an empty or missing selector selects everything."""
    if not text or not text.strip():
        return ()
    scanner = _Scanner(text)
    requirements = [_requirement(scanner)]
    while not scanner.at_end():
        scanner.expect(",")
        requirements.append(_requirement(scanner))
    return tuple(requirements)


def labels_match(requirements: tuple[Requirement, ...], labels: Mapping[str, str] | None) -> bool:
    return all(r.matches(labels or {}) for r in requirements)


@dataclass(frozen=True)
class FieldRequirement:
    """``metadata.name=x`` (``equal``) or ``metadata.name!=x`` (not ``equal``)."""

    field: str
    value: str
    equal: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        actual = metadata.get(self.field.removeprefix("metadata."), "") or ""
        return (actual == self.value) is self.equal


def parse_field_selector(text: str | None) -> tuple[FieldRequirement, ...]:
    if not text or not text.strip():
        return ()
    requirements = []
    for term in text.split(","):
        for operator in ("!=", "==", "="):
            field, found, value = term.partition(operator)
            if found:
                break
        else:
            raise SelectorError(f"invalid field selector term {term!r}: expected '=', '==' or '!='")
        equal = operator != "!="
        field, value = field.strip(), value.strip()
        if field not in SUPPORTED_FIELDS:
            raise SelectorError(f'field label not supported: "{field}"')
        requirements.append(FieldRequirement(field, value, equal))
    return tuple(requirements)


def fields_match(requirements: tuple[FieldRequirement, ...], obj: Mapping[str, Any]) -> bool:
    return all(r.matches(obj) for r in requirements)
