"""The ``filter=`` parameter: a subset of OpenCost's v2 filter language (reference §1.4).

A malformed filter, or a field not implemented, is a 400 naming the problem, never unfiltered data
(real OpenCost before v1.115 *does* silently ignore ``filter``).

Grammar (whitespace allowed between tokens)::

    filter := or ;  or := and ('|' and)* ;  and := atom ('+' atom)*
    atom   := '(' or ')' | field ['[' key ']'] op value (',' value)*
    op     := ':' | '!:' | '~:' | '!~:' | '<~:' | '!<~:' | '~>:' | '!~>:'   (eq, contains, prefix, suffix)
    value  := '"' chars '"'    (backslash escapes the next character)

Fields: ``namespace``, ``cluster``, ``node``, ``pod``, ``container``, ``controllerName``,
``controllerKind``, ``label[k]`` and the label aliases ``team``, ``department``, ``environment``
(label ``env``), ``owner``, ``product`` (label ``app``). ``services``, ``provider`` and
``annotation[k]`` are OpenCost fields the sandbox does not implement (400).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sandbox.opencost.allocation import Properties
from sandbox.opencost.model import sanitize_label
from sandbox.opencost.windows import QueryError

_OPS = ("!~>:", "!<~:", "!~:", "!:", "~>:", "<~:", "~:", ":")
_ALIASES = {"team": "team", "department": "department", "environment": "env", "owner": "owner", "product": "app"}
_FIELDS: dict[str, Callable[[Properties], str]] = {
    "namespace": lambda p: p.namespace,
    "cluster": lambda p: p.cluster,
    "node": lambda p: p.node,
    "pod": lambda p: p.pod,
    "container": lambda p: p.container,
    "controllername": lambda p: p.controller,
    "controllerkind": lambda p: p.controller_kind,
}
_UNSUPPORTED = {"services", "provider", "annotation"}


@dataclass(frozen=True, slots=True)
class Filter:
    """A parsed filter; ``matches`` tests one allocation's properties."""

    matches: Callable[[Properties], bool]
    canonical: str


def parse_filter(text: str | None) -> Filter | None:
    if text is None or not text.strip():
        return None
    parser = _Parser(text)
    matcher, canonical = parser.parse_or()
    parser.skip_space()
    if parser.pos != len(text):
        raise parser.error("unexpected text")
    return Filter(matcher, canonical)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> QueryError:
        return QueryError(f"invalid 'filter' parameter: {what} at position {self.pos}: {self.text!r}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip_space()
        return self.text.startswith(token, self.pos)

    def parse_or(self) -> tuple[Callable[[Properties], bool], str]:
        parts = [self.parse_and()]
        while self.peek("|"):
            self.pos += 1
            parts.append(self.parse_and())
        if len(parts) == 1:
            return parts[0]
        matchers = [m for m, _ in parts]
        return (lambda p: any(m(p) for m in matchers)), "(" + "|".join(c for _, c in parts) + ")"

    def parse_and(self) -> tuple[Callable[[Properties], bool], str]:
        parts = [self.parse_atom()]
        while self.peek("+"):
            self.pos += 1
            parts.append(self.parse_atom())
        if len(parts) == 1:
            return parts[0]
        matchers = [m for m, _ in parts]
        return (lambda p: all(m(p) for m in matchers)), "(" + "+".join(c for _, c in parts) + ")"

    def parse_atom(self) -> tuple[Callable[[Properties], bool], str]:
        if self.peek("("):
            self.pos += 1
            inner = self.parse_or()
            if not self.peek(")"):
                raise self.error("missing ')'")
            self.pos += 1
            return inner
        getter, field = self.parse_field()
        op = next((op for op in _OPS if self.peek(op)), None)
        if op is None:
            raise self.error(f"missing operator after field {field!r}")
        self.pos += len(op)
        values = [self.parse_value()]
        while self.peek(","):
            self.pos += 1
            values.append(self.parse_value())
        canonical = f"{field}{op}" + ",".join(f'"{v}"' for v in values)
        return _compare(getter, op, tuple(values)), canonical

    def parse_field(self) -> tuple[Callable[[Properties], str], str]:
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] == "_"):
            self.pos += 1
        name = self.text[start : self.pos]
        if not name:
            raise self.error("expected a field name")
        key = None
        if self.text.startswith("[", self.pos):
            end = self.text.find("]", self.pos)
            if end < 0:
                raise self.error("missing ']'")
            key = self.text[self.pos + 1 : end].strip()
            self.pos = end + 1
        lowered = name.lower()
        if lowered in _UNSUPPORTED:
            raise QueryError(f"invalid 'filter' parameter: filter field {name!r} is not supported by the sandbox")
        if lowered == "label":
            if not key:
                raise self.error("label filter needs a key, e.g. label[team]")
            label = sanitize_label(key)
            return (lambda p: p.labels.get(label, "")), f"label[{label}]"
        if key is not None:
            raise self.error(f"field {name!r} takes no [key]")
        if lowered in _ALIASES:
            alias = _ALIASES[lowered]
            return (lambda p: p.labels.get(alias, "")), lowered
        if lowered not in _FIELDS:
            raise QueryError(f"invalid 'filter' parameter: unknown filter field {name!r}")
        return _FIELDS[lowered], lowered

    def parse_value(self) -> str:
        self.skip_space()
        if not self.text.startswith('"', self.pos):
            raise self.error('expected a double-quoted value like "my-namespace"')
        self.pos += 1
        chars: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < len(self.text):
                chars.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if char == '"':
                self.pos += 1
                return "".join(chars)
            chars.append(char)
            self.pos += 1
        raise self.error("unterminated string")


def _compare(getter: Callable[[Properties], str], op: str, values: tuple[str, ...]) -> Callable[[Properties], bool]:
    negate = op.startswith("!")
    kind = op.lstrip("!")
    tests: dict[str, Callable[[str, str], bool]] = {
        ":": lambda actual, v: actual == v,
        "~:": lambda actual, v: v in actual,
        "<~:": lambda actual, v: actual.startswith(v),
        "~>:": lambda actual, v: actual.endswith(v),
    }
    test = tests[kind]

    def matches(props: Properties) -> bool:
        actual = getter(props)
        hit = any(test(actual, v) for v in values)
        return not hit if negate else hit

    return matches
