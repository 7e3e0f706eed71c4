"""Cloud estimates: what an application's cloud resources are expected to cost per month, as a
tool computed it from the application's infrastructure code and CI pushed it (``cost_api``).

Today's one source is Infracost's JSON output (``infracost breakdown --format json``)::

    {"version": "0.2", "currency": "USD", "timeGenerated": "...", "totalMonthlyCost": "742.64",
     "projects": [{"name": "...", "breakdown": {"totalMonthlyCost": "742.64", "resources": [
        {"name": "aws_instance.web", "monthlyCost": "742.64", "hourlyCost": "1.0173...",
         "costComponents": [{"name": ..., "unit": ..., "monthlyQuantity": ..., "price": ..., "monthlyCost": ...}],
         "subresources": [{"name": "ebs_block_device[0]", "monthlyCost": "177", ...}]}]}}]}

Rules, decided here once:

- **Exact.** Amounts are decimal strings (Infracost writes them so) parsed into ``Decimal`` from the
  text; a JSON number, an exponent, a sign or more than ``MAX_INTEGER_DIGITS`` integer digits
  (``MAX_PLACES`` decimals) is refused, naming the field (``projects[0].breakdown.resources[2]
  .monthlyCost``): a number means another producer whose figures may already be binary floats.
  ``null`` is "unknown" (a usage-based resource with no usage given), never 0.
- **What is read.** ``breakdown`` only (``pastBreakdown`` and ``diff`` describe a change, not the
  estimate); keys we do not use are ignored, so a newer Infracost is accepted.
- **Flattened.** Each resource and each subresource (recursively, depth first, in the tool's
  order) is one row with its path of names. A resource's ``monthlyCost`` already includes its
  subresources', so the estimate's total adds the top-level resources only.
- **Totals.** The project's ``totalMonthlyCost`` is kept beside the sum of its resources; they
  should agree (Infracost adds the same figures exactly). A disagreement is reported as a warning,
  not refused: the rows are what the tab itemises, so the figure shown is their sum, and the
  stated total is there for whoever wants to see the file said otherwise.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from finops.errors import InvalidInput
from finops.hours import parse_timestamp

SOURCES = ("infracost",)
MAX_INTEGER_DIGITS = 12  # 10^12 currency units a month: far beyond any bill, and exact in micros
MAX_PLACES = 30  # Infracost divides by 730 hours: its hourly figures carry about 18 decimals
MAX_ROWS = 20_000  # resources and subresources of one push
MAX_TEXT = 1024
MAX_PROJECTS = 500
MAX_AMOUNT = Decimal(10) ** MAX_INTEGER_DIGITS
_DECIMAL = re.compile(r"([0-9]+)(?:\.([0-9]+))?")
_CURRENCY = re.compile(r"[A-Z]{3}")
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # PostgreSQL text refuses NUL; UTF-8 has no surrogates


@dataclass(frozen=True)
class Component:
    name: str
    unit: str
    monthly_quantity: Decimal | None
    price: Decimal | None
    monthly_cost: Decimal | None

    def document(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "unit": self.unit,
            "monthlyQuantity": text_of(self.monthly_quantity),
            "price": text_of(self.price),
            "monthlyCost": text_of(self.monthly_cost),
        }


@dataclass(frozen=True)
class Resource:
    """One resource or subresource, flattened: ``path`` names it from its top-level resource down."""

    project: str
    path: tuple[str, ...]
    monthly_cost: Decimal | None
    hourly_cost: Decimal | None
    components: tuple[Component, ...]

    @property
    def depth(self) -> int:
        return len(self.path) - 1


@dataclass(frozen=True)
class Project:
    name: str
    monthly: Decimal  # sum of its top-level resources' known monthly costs
    stated_monthly: Decimal | None  # the tool's totalMonthlyCost
    resources: int  # top-level


@dataclass(frozen=True)
class Estimate:
    source: str
    currency: str
    tool_version: str
    generated_at: datetime | None
    stated_monthly: Decimal | None
    projects: tuple[Project, ...]
    resources: tuple[Resource, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def monthly(self) -> Decimal:
        return sum((p.monthly for p in self.projects), Decimal(0))

    @property
    def top_level(self) -> int:
        return sum(1 for r in self.resources if r.depth == 0)

    @property
    def unpriced(self) -> int:
        """Top-level resources whose monthly cost is unknown."""
        return sum(1 for r in self.resources if r.depth == 0 and r.monthly_cost is None)

    def projects_document(self) -> list[dict[str, Any]]:
        return [
            {
                "name": p.name,
                "monthly": text_of(p.monthly),
                "statedMonthly": text_of(p.stated_monthly),
                "resources": p.resources,
            }
            for p in self.projects
        ]

    @property
    def digest(self) -> str:
        """sha256 of what is stored (never of the request's bytes: whitespace is not content)."""
        content = {
            "currency": self.currency,
            "version": self.tool_version,
            "generatedAt": None if self.generated_at is None else self.generated_at.isoformat(),
            "stated": text_of(self.stated_monthly),
            "projects": self.projects_document(),
            "resources": [
                [
                    r.project,
                    list(r.path),
                    text_of(r.monthly_cost),
                    text_of(r.hourly_cost),
                    [c.document() for c in r.components],
                ]
                for r in self.resources
            ],
        }
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def text_of(value: Decimal | None) -> str | None:
    """An exact amount as plain decimal text (no exponent), as it is stored and served."""
    return None if value is None else f"{value:f}"


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return "a JSON number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def amount(value: object, where: str) -> Decimal | None:
    """A non-negative decimal string (``null``: unknown); anything else is refused naming ``where``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f'{where}: must be a decimal string such as "742.64" or null, got {_type_name(value)}')
    match = _DECIMAL.fullmatch(value)
    if match is None:
        shown = value[:40]
        why = "is negative" if shown.startswith("-") else "is not a plain decimal (digits, one '.', no exponent)"
        raise InvalidInput(f"{where}: {shown!r} {why}")
    if len(match[1].lstrip("0")) > MAX_INTEGER_DIGITS:
        raise InvalidInput(f"{where}: {value[:40]!r} has more than {MAX_INTEGER_DIGITS} integer digits")
    if len(match[2] or "") > MAX_PLACES:
        raise InvalidInput(f"{where}: {value[:40]!r} has more than {MAX_PLACES} decimal places")
    return Decimal(value)  # from text: exact, whatever the context


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}: must be an object, got {_type_name(value)}")
    return value


def _array(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidInput(f"{where}: must be an array, got {_type_name(value)}")
    return value


def _required(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise InvalidInput(f"{where}.{key}: required")
    return obj[key]


def _text(value: object, where: str, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{where}: must be a string, got {_type_name(value)}")
    if not value and not empty:
        raise InvalidInput(f"{where}: must not be empty")
    if len(value) > MAX_TEXT:
        raise InvalidInput(f"{where}: longer than {MAX_TEXT} characters")
    if _UNSTORABLE.search(value):
        raise InvalidInput(f"{where}: contains a NUL character or a lone surrogate, which cannot be stored")
    return value


class _Flattener:
    def __init__(self) -> None:
        self.rows: list[Resource] = []

    def resource(self, raw: object, where: str, project: str, parents: tuple[str, ...]) -> Decimal | None:
        obj = _object(raw, where)
        name = _text(_required(obj, "name", where), f"{where}.name")
        monthly = amount(_required(obj, "monthlyCost", where), f"{where}.monthlyCost")
        hourly = amount(obj.get("hourlyCost"), f"{where}.hourlyCost")
        components = tuple(
            self._component(c, f"{where}.costComponents[{i}]")
            for i, c in enumerate(_array(obj.get("costComponents") or [], f"{where}.costComponents"))
        )
        if len(self.rows) >= MAX_ROWS:
            raise InvalidInput(f"{where}: more than {MAX_ROWS} resources and subresources in one estimate")
        path = (*parents, name)
        self.rows.append(Resource(project, path, monthly, hourly, components))
        for i, sub in enumerate(_array(obj.get("subresources") or [], f"{where}.subresources")):
            self.resource(sub, f"{where}.subresources[{i}]", project, path)
        return monthly

    @staticmethod
    def _component(raw: object, where: str) -> Component:
        obj = _object(raw, where)
        return Component(
            name=_text(obj.get("name", ""), f"{where}.name", empty=True),
            unit=_text(obj.get("unit", ""), f"{where}.unit", empty=True),
            monthly_quantity=amount(obj.get("monthlyQuantity"), f"{where}.monthlyQuantity"),
            price=amount(obj.get("price"), f"{where}.price"),
            monthly_cost=amount(obj.get("monthlyCost"), f"{where}.monthlyCost"),
        )


def _bounded(total: Decimal, where: str) -> Decimal:
    if total >= MAX_AMOUNT:
        raise InvalidInput(f"{where}: {text_of(total)} is beyond {MAX_INTEGER_DIGITS} integer digits")
    return total


def parse_infracost(document: object) -> Estimate:
    """An Infracost JSON document as an ``Estimate``, or ``InvalidInput`` naming the first bad field."""
    root = _object(document, "body")
    version = _text(_required(root, "version", "body"), "version")
    if not re.fullmatch(r"0\.[0-9]{1,3}", version):
        raise InvalidInput(f"version: {version[:20]!r} is not an Infracost JSON format version this reads (0.x)")
    currency = _text(_required(root, "currency", "body"), "currency")
    if not _CURRENCY.fullmatch(currency):
        raise InvalidInput(f"currency: {currency[:20]!r} is not an ISO 4217 code such as USD")
    generated = root.get("timeGenerated")
    generated_at = None
    if generated is not None:
        generated_at = parse_timestamp(_text(generated, "timeGenerated"), field="timeGenerated")
    stated = amount(root.get("totalMonthlyCost"), "totalMonthlyCost")
    raw_projects = _array(_required(root, "projects", "body"), "projects")
    if not raw_projects:
        raise InvalidInput("projects: empty; an Infracost breakdown has at least one project")
    if len(raw_projects) > MAX_PROJECTS:
        raise InvalidInput(f"projects: more than {MAX_PROJECTS}")
    flat = _Flattener()
    projects: list[Project] = []
    warnings: list[str] = []
    for i, raw in enumerate(raw_projects):
        where = f"projects[{i}]"
        obj = _object(raw, where)
        name = _text(_required(obj, "name", where), f"{where}.name", empty=True)
        breakdown = _object(_required(obj, "breakdown", where), f"{where}.breakdown")
        project_stated = amount(breakdown.get("totalMonthlyCost"), f"{where}.breakdown.totalMonthlyCost")
        resources = _array(_required(breakdown, "resources", f"{where}.breakdown"), f"{where}.breakdown.resources")
        monthly = Decimal(0)
        for j, resource in enumerate(resources):
            cost = flat.resource(resource, f"{where}.breakdown.resources[{j}]", name, ())
            monthly += cost or 0
        _bounded(monthly, f"{where}.breakdown.resources")
        if project_stated is not None and project_stated != monthly:
            warnings.append(
                f"{where}.breakdown.totalMonthlyCost is {text_of(project_stated)} but its resources add up to "
                f"{text_of(monthly)}; the resources' sum is shown"
            )
        projects.append(Project(name, monthly, project_stated, len(resources)))
    _bounded(sum((p.monthly for p in projects), Decimal(0)), "projects")
    stated_totals = [p.stated_monthly for p in projects if p.stated_monthly is not None]
    if stated is not None and len(stated_totals) == len(projects) and stated != sum(stated_totals, Decimal(0)):
        warnings.append(
            f"totalMonthlyCost is {text_of(stated)} but the projects' totals add up to "
            f"{text_of(sum(stated_totals, Decimal(0)))}"
        )
    return Estimate(
        "infracost", currency, version, generated_at, stated, tuple(projects), tuple(flat.rows), tuple(warnings)
    )
