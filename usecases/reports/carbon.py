"""``finops report carbon``: grams CO2e per team, cost centre, namespace or application, beside cost.

Read from the hourly ``allocation_emissions`` the collector split each node's grams into
(``usecases.collect_allocations.carbon``, ``finops.carbon``): every figure is a sum of integers,
so the lines add up to the nodes' and disks' grams (``asset_emissions``) exactly, with nothing
rounded here; kilograms are grams / 1000, shown with their three decimals.

Like every report it states what it stands on: the ledger's coverage (``period_coverage``: an
unpriced hour is refused, since a row's share is its share of cost), and, per cluster, how many
stored hours have emissions and which do not (an OpenCost without carbon estimates): a missing
hour is never read as 0 g. The factors' sources and regions are listed with their grams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from finops.allocations import IDLE, UNALLOCATED
from finops.carbon import kilograms
from finops.ledger import ranges
from infra.postgres import Database
from usecases.reports.service import ReportDocument, ReportQuery, period_coverage

By = Literal["team", "cost-center", "namespace", "application"]
BY: tuple[By, ...] = ("team", "cost-center", "namespace", "application")


def carbon_report(db: Database, query: ReportQuery, by: By = "team") -> ReportDocument:
    """``{"period", "coverage", "by", "emissions": [{"cluster", "hours_stored", "hours_with_emissions",
    "hours_without"}], "factors": [...], "lines": [{"cluster", <by>, "grams", "kg"}], "total_grams",
    "total_kg"}``: lines per cluster, largest first, then ``__unallocated__`` and ``__idle__``."""
    coverage = period_coverage(db, query)
    window: dict[str, Any] = {
        "aggregation": query.aggregation,
        "cluster": query.cluster,
        "start": query.period.start,
        "end": query.period.end,
    }
    lines = [
        {"cluster": r["cluster"], by: r["line"] or UNALLOCATED, "grams": int(r["grams"])}
        for r in db.fetch_all("carbon_lines", **window, by=by)
    ]
    lines.sort(key=lambda line: (line["cluster"], _order(line[by]), -line["grams"], line[by]))
    factors = [
        {
            "cluster": r["cluster"],
            "source": r["factor_source"],
            "region": r["region"],
            "kind": r["kind"],
            "hours": r["hours"],
            "grams": int(r["grams"]),
            "kg": kilograms(int(r["grams"])),
        }
        for r in db.fetch_all("carbon_assets", **window)
    ]
    hours = [
        {
            "cluster": r["cluster"],
            "hours_stored": r["stored"],
            "hours_with_emissions": r["stored"] - len(r["without"]),
            "hours_without": ranges(r["without"]) or None,
        }
        for r in db.fetch_all("carbon_hours", **window)
    ]
    total = sum(line["grams"] for line in lines)
    body = {
        "period": query.period.as_document(),
        "coverage": coverage.as_document(),
        "by": by,
        "emissions": hours,
        "factors": factors,
        "lines": [{**line, "kg": kilograms(line["grams"])} for line in lines],
        "total_grams": total,
        "total_kg": kilograms(total),
        "assets_grams": sum(f["grams"] for f in factors),
    }
    return ReportDocument(body, (coverage,))


def _order(line: str) -> int:
    return {UNALLOCATED: 1, IDLE: 2}.get(line, 0)


def carbon_rows(body: dict[str, Any]) -> tuple[str, list[str], list[tuple[object, ...]]]:
    """The report as a titled table: one row per line, the total, then what it stands on."""
    by = body["by"]
    period = body["period"]
    title = f"Emissions per {by}, {period['start']} to {period['end']} (kg CO2e)"
    rows: list[tuple[object, ...]] = [(line["cluster"], line[by], line["grams"], line["kg"]) for line in body["lines"]]
    rows.append(("TOTAL", "", body["total_grams"], body["total_kg"]))
    for f in body["factors"]:
        where = f"{f['kind']}s: {f['source']}" + (f", {f['region']}" if f["region"] else "")
        rows.append((f["cluster"], f"factors {where}", f["grams"], f["kg"]))
    for h in body["emissions"]:
        note = f"hours with emissions {h['hours_with_emissions']} of {h['hours_stored']} stored"
        rows.append((h["cluster"], note + (f"; without: {h['hours_without']}" if h["hours_without"] else ""), "", ""))
    return title, ["cluster", by, "grams", "kg CO2e"], rows


def csv_rows(body: dict[str, Any]) -> Sequence[tuple[object, ...]]:
    """The lines only, for CSV (the total is their sum)."""
    return [(line["cluster"], line[body["by"]], line["grams"], line["kg"]) for line in body["lines"]]
