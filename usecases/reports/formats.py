"""Loading a policy file and rendering reports as a table, JSON or CSV.

An incomplete period is announced by one ``WARNING:`` line (``warning``): above the table, which
is read by people and should carry it wherever it is pasted; on stderr for JSON and CSV, whose
stdout stays parseable (JSON carries ``"coverage"`` itself).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from finops.chargeback import Report
from finops.coverage import Coverage
from finops.errors import InvalidInput
from finops.policy import Policy, parse_policy
from usecases.reports.chargeback_carbon import carbon_note
from usecases.reports.text_table import render

_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy YAML file. Each error is a line naming the file: a YAML syntax
    error with its line and column, else every invalid key (``finops.policy``)."""
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise InvalidInput(f"policy file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"policy file {path} is not UTF-8 text (byte {exc.start})") from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise InvalidInput(f"policy file {path}{where}: not valid YAML: {problem}") from exc
    except yaml.YAMLError as exc:
        raise InvalidInput(f"policy file {path}: not valid YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise InvalidInput(f"policy file {path}: expected a mapping of policy keys")
    try:
        return parse_policy(document)
    except InvalidInput as exc:
        raise InvalidInput("\n".join(f"policy file {path}: {line}" for line in exc.message.splitlines())) from exc


def warning(coverages: Iterable[Coverage | None]) -> str | None:
    """One line naming the gaps of every incomplete period, or None when all are complete."""
    gaps = [coverage.summary() for coverage in coverages if coverage is not None and not coverage.complete]
    if not gaps:
        return None
    return f"WARNING: {' | '.join(gaps)}; the figures cover the collected hours only"


def chargeback_csv(report: Report) -> str:
    """The report's lines as CSV, with a final total row; amounts are decimal strings. The grams
    CO2e and kilograms of each line follow (``finops.chargeback_carbon``); an empty field is a
    line without measured emissions, never 0 g (which hours have none goes to stderr:
    ``chargeback_warnings``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["owner", "allocated", "idle", "shared", "total", "share", "currency", "grams_co2e", "kg_co2e"])
    for line in report.lines:
        doc = line.as_document()
        money = [doc["owner"], doc["allocated"], doc["idle"], doc["shared"], doc["total"], doc["share"]]
        writer.writerow([*money, report.currency, _blank(doc["grams_co2e"]), _blank(doc["kg_co2e"])])
    carbon = report.carbon or {}
    total: list[object] = ["TOTAL", report.allocated, report.idle, report.shared, report.total, "1.0000"]
    writer.writerow([*total, report.currency, _blank(carbon.get("total_grams")), _blank(carbon.get("total_kg"))])
    return out.getvalue()


def _blank(value: object) -> object:
    return "" if value is None else value


def chargeback_warnings(report: Report) -> str | None:
    """The report's coverage warning and its carbon note (stored hours without emissions), one
    line each, or None."""
    found = [w for w in (warning([report.coverage]), carbon_note(report)) if w]
    return "\n".join(found) or None


Rows = list[tuple[object, ...]]


def rows_csv(headers: list[str], rows: Rows) -> str:
    """A header line and the rows, as CSV."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return out.getvalue()


def titled_table(title: str, headers: list[str], rows: Rows) -> str:
    """A title line over the rows as a text table (numbers right-aligned), or over "(none)"."""
    right = tuple(i for i, value in enumerate(rows[0]) if _numeric(value)) if rows else ()
    return f"{title}\n" + (render(headers, rows, right=right) if rows else "(none)")


def _numeric(value: object) -> bool:
    return isinstance(value, (int, Decimal)) or (isinstance(value, str) and _NUMBER.fullmatch(value) is not None)


def team_rows(body: dict[str, Any]) -> tuple[str, list[str], Rows]:
    """The team report as (title, headers, rows): its figures, then its top namespaces."""
    figures = ("total", "previous_total", "change", "change_percent", "allocated", "idle_share", "shared_share")
    rows: Rows = [("figure", name, "", body[name] if body[name] is not None else "-") for name in figures]
    rows += [("namespace", r["namespace"], r["cluster"], r["cost"]) for r in body["top_namespaces"]]
    for resource, usage in body["requests_vs_usage"].items():
        rows += [(f"{resource} usage", name, "", value if value is not None else "-") for name, value in usage.items()]
    period = body["period"]
    title = f"Team {body['team']}, {period['start']} to {period['end']} ({body['currency']}, basis {body['basis']})"
    return title, ["kind", "name", "cluster", "value"], rows


def daily_rows(body: dict[str, Any]) -> tuple[str, list[str], Rows]:
    """The daily view as (title, headers, rows): one row per day and owner."""
    rows: Rows = [(day["day"], owner, cost) for day in body["days"] for owner, cost in day["owners"].items()]
    period = body["period"]
    return f"Cost per day and owner, {period['start']} to {period['end']}", ["day", "owner", "cost"], rows


def unlabelled_rows(body: dict[str, Any]) -> tuple[str, list[str], Rows]:
    """Namespaces without the owner label as (title, headers, rows)."""
    rows: Rows = [(r["cluster"], r["namespace"], r["cost"]) for r in body["namespaces"]]
    period = body["period"]
    title = f"Namespaces without the owner label, {period['start']} to {period['end']}"
    return title, ["cluster", "namespace", "cost"], rows


def budgets_rows(body: dict[str, Any]) -> tuple[str, list[str], Rows]:
    """The budgets report as (title, headers, rows): one row per budget."""
    rows: Rows = [
        (
            f"{'owner' if 'owner' in b else 'cost centre'} {b.get('owner') or b.get('cost_center')}",
            b["amount"],
            b["month_to_date"],
            b["percent_used"],
            b["forecast"] or "-",
            b["percent_forecast"] or "-",
            "OVER" if b["over_budget_forecast"] else "",
        )
        for b in body["budgets"]
    ]
    title = f"Budgets {body['month']['start'][:7]} ({body['currency']}); method: {body['method']}"
    headers = ["budget", "amount", "month to date", "used %", "forecast", "forecast used %", "forecast over"]
    return title, headers, rows


def chargeback_table(report: Report) -> str:
    """The report as a table; with a ``kg CO2e`` column when some hour of it has emissions ("-":
    a line with none measured)."""
    grams = report.carbon is not None and report.carbon.get("total_grams") is not None
    rows: list[tuple[object, ...]] = [
        (li.owner, li.allocated, li.idle, li.shared, li.total, li.share)
        + ((_dash(li.as_document()["kg_co2e"]),) if grams else ())
        for li in report.lines
    ]
    total = ("TOTAL", report.allocated, report.idle, report.shared, report.total, "")
    rows.append(total + ((report.carbon["total_kg"],) if grams and report.carbon else ()))
    period = report.period.as_document()
    title = (
        f"Chargeback {period['start']} to {period['end']} ({report.currency}, basis {report.basis}), "
        f"clusters: {', '.join(report.clusters)}"
    )
    headers = ["owner", "allocated", "idle", "shared", "total", "share"] + (["kg CO2e"] if grams else [])
    table = render(headers, rows, right=(1, 2, 3, 4, 5, 6))
    warned = chargeback_warnings(report)
    return (f"{warned}\n" if warned else "") + title + "\n" + table + _variance(report.reconciliation)


def _dash(value: object) -> object:
    return "-" if value is None else value


def _variance(summary: Any) -> str:
    """On a bill basis: which days the bill covered, and the variance per resource and per line."""
    if not summary:
        return ""
    parts = []
    for cluster in summary["clusters"]:
        billed = ", ".join(f"{r['start']}..{r['end']}" for r in cluster["billed_days"]) or "none"
        estimated = ", ".join(f"{r['start']}..{r['end']}" for r in cluster["estimated_days"]) or "none"
        parts.append(
            f"\n{cluster['cluster']}: billed days {billed}; on estimate {estimated}; "
            f"unreconciled {cluster['unreconciled']} ({len(cluster['unreconciled_lines'])} lines)"
        )
        resources = [
            (
                r["kind"],
                r["name"] or "(no node)",
                r["provider_id"],
                r["estimate"],
                r["billed"],
                r["variance"],
                r["status"],
            )
            for r in cluster["resources"]
        ]
        head = ["kind", "name", "provider id", "estimate", "billed", "variance", "status"]
        parts.append(render(head, resources, right=(3, 4, 5)))
    lines = [(li["owner"], li["estimate"], li["total"], li["variance"]) for li in summary["lines"]]
    parts.append(
        "\nPer line, against the estimate:\n"
        + render(["owner", "estimate", summary["basis"], "variance"], lines, right=(1, 2, 3))
    )
    return "\n" + "\n".join(parts)


def as_json(document: Any) -> str:
    return json.dumps(document, indent=2, default=str)
