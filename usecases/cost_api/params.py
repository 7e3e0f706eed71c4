"""The read API's parameters, each declared once: the OpenAPI document states it
(``functions.cost_api.routes``) and the dispatcher parses every request by the same declaration
before a view runs, so what the document accepts and what is served cannot drift.

A value is a string of the query or the path. It is accepted when it matches the declaration
exactly (an integer in its bounds, one of an enumeration, a string matching its pattern); an
empty value is never a value (``allowEmptyValue`` is false): it is refused like any other, with a
one-line 400 naming the parameter. An absent optional parameter takes its default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from finops.cloud_estimates import SOURCES
from finops.errors import InvalidInput
from finops.lines import LineKey
from finops.reconcile_policy import Basis
from infra.settings import CostApiSettings
from usecases.reports import carbon, gpus

# Argo CD application namespaces and Kubernetes namespaces are DNS labels; application names are
# DNS subdomains (RFC 1123). The patterns are ASCII only: a Unicode digit is never a digit here.
# (``finops.labels``: 63 and 253 characters at most, said by ``max_length``).
LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# A UTC month of the years 1970 to 2999 (a period of the years 0 or 9999 cannot be computed).
MONTH = r"^(19[7-9][0-9]|2[0-9]{3})-(0[1-9]|1[0-2])$"


@dataclass(frozen=True)
class Param:
    """One parameter: its OpenAPI schema and its parser. ``maximum`` may name the setting that
    bounds it (e.g. ``DAILY_HISTORY_DAYS``)."""

    name: str
    description: str
    kind: str = "string"  # "integer", "string" (with ``pattern`` or ``enum``) or "boolean"
    location: str = "query"
    default: Any = None  # an optional parameter's value when absent; None: the view's own
    minimum: int | None = None
    maximum: int | str | None = None
    pattern: str | None = None
    max_length: int | None = None
    enum: tuple[str, ...] = ()

    def most(self, s: CostApiSettings | None) -> int | None:
        if isinstance(self.maximum, str):
            return int(getattr(s or CostApiSettings.model_construct(), self.maximum))
        return self.maximum

    def schema(self, s: CostApiSettings | None = None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.kind}
        if self.kind == "integer":
            schema |= {"minimum": self.minimum, "maximum": self.most(s)}
        if self.pattern:
            schema["pattern"] = self.pattern
        if self.max_length:
            schema |= {"minLength": 1, "maxLength": self.max_length}
        if self.enum:
            schema["enum"] = list(self.enum)
        if self.default is not None:
            schema["default"] = self.default
        return schema

    def document(self, s: CostApiSettings | None = None) -> dict[str, Any]:
        """The OpenAPI parameter object."""
        bound = f" (at most {self.maximum})" if isinstance(self.maximum, str) else ""
        return {
            "name": self.name,
            "in": self.location,
            "required": self.location == "path",
            "description": self.description + bound,
            "schema": self.schema(s),
            **({"allowEmptyValue": False} if self.location == "query" else {}),
        }

    def parse(self, raw: str | None, s: CostApiSettings | None = None) -> Any:
        """``raw`` (None: absent) as the declared value; ``InvalidInput`` naming the parameter."""
        if raw is None:
            return self.default
        if self.kind == "integer":
            low, high = self.minimum, self.most(s)
            # At most 18 digits: int() refuses (ValueError) strings past 4,300 digits
            value = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else None
            if value is not None and (low is None or low <= value) and (high is None or value <= high):
                return value
            raise InvalidInput(f"{self.name}: {raw[:80]!r} must be a whole number from {low} to {high}")
        if self.kind == "boolean":
            if raw in ("true", "false"):
                return raw == "true"
            raise InvalidInput(f"{self.name}: {raw[:80]!r} must be true or false")
        if self.enum and raw not in self.enum:
            raise InvalidInput(f"{self.name}: {raw[:80]!r} is not one of {', '.join(self.enum)}")
        too_long = self.max_length is not None and len(raw) > self.max_length
        if too_long or (self.pattern and not re.fullmatch(self.pattern, raw, flags=re.ASCII)):
            raise InvalidInput(f"{self.name}: {raw[:80]!r} is not {self.description.split(' (')[0]}")
        return raw


def parse_all(params: tuple[Param, ...], given: Mapping[str, str], s: CostApiSettings) -> dict[str, Any]:
    """Every declared parameter of one request, parsed (those not declared are ignored)."""
    return {p.name: p.parse(given.get(p.name), s) for p in params}


APP_NAMESPACE = Param(
    "appNamespace", "the Argo CD application's namespace (a DNS label)", location="path", pattern=LABEL, max_length=63
)
APP_NAME = Param(
    "appName", "the Argo CD application's name (a DNS subdomain)", location="path", pattern=SUBDOMAIN, max_length=253
)
NAMESPACE = Param("namespace", "a Kubernetes namespace (a DNS label)", location="path", pattern=LABEL, max_length=63)


def days(default: int, most: int | str, what: str = "trailing UTC days") -> Param:
    return Param("days", what, "integer", default=default, minimum=1, maximum=most)


def limit(default: int, most: int) -> Param:
    return Param("limit", "how many applications at most", "integer", default=default, minimum=1, maximum=most)


MONTH_PARAM = Param("month", "a UTC month such as 2026-10 (default: the current month)", pattern=MONTH)
BASIS = Param("basis", "what the figures stand on (default: the policy's)", enum=tuple(b.value for b in Basis))
BY = Param("by", "what one line stands for", enum=tuple(k.value for k in LineKey), default=LineKey.TEAM.value)
GPU_BY = Param("by", "what one line stands for (a workload: namespace/controller)", enum=gpus.BY, default="team")
CARBON_BY = Param("by", "what one line stands for", enum=carbon.BY, default="team")
REQUIRE_COMPLETE = Param(
    "require_complete",
    "true: refuse (409) a month whose hours are not all final and priced",
    "boolean",
    default=False,
)
SOURCE = Param("source", "the tool that produced the body", enum=SOURCES, default=SOURCES[0])
