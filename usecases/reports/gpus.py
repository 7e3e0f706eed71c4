"""``finops report gpus``: GPU-hours, GPU cost and measured use per team, namespace or workload,
with each GPU model's idle on its own line, and the workloads ranked by what a busy GPU-hour cost
them.

Read from the hourly rows the collector split (``usecases.collect_allocations.gpus``): a row's
GPU cost and GPU-hours are its share of its GPU under the cluster's ``GPU_BASIS``, and what nobody
used is an ``__idle__/gpu:<model>`` row. So the lines add up to what the GPUs cost. Amounts are
rounded once, to cents, by largest remainder within each cluster and currency, so they add up to
its total rounded half-even.

**Cost per busy GPU-hour** (the insight): a line's GPU cost over its busy GPU-hours (its measured
use in GPUs x hours, a MIG slice's use counted as its share of the GPU), both over its measured
rows only. A workload that holds a whole GPU and keeps it 10 % busy pays ten times what the GPU's
hour costs per hour of work; it leads the ranking. A line nobody measured has none (``null``),
never 0. Under ``GPU_BASIS=usage`` a line pays for what it used, so the figure is close to its
GPUs' price; the ranking says most under ``request`` and ``max``.

Like every report it states its coverage, and per cluster which basis split its hours: an hour
that was not split (``gpu_basis`` NULL) keeps its source's GPU figures, and is counted as such.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any, Literal

from finops.allocations import UNALLOCATED
from finops.money import from_micros
from finops.rounding import largest_remainder
from infra.postgres import Database
from usecases.reports.service import ReportDocument, ReportQuery, period_coverage

By = Literal["team", "namespace", "workload"]
BY: tuple[By, ...] = ("team", "namespace", "workload")
_CENT = Decimal("0.01")
_HOURS = Decimal("0.001")


def gpu_report(db: Database, query: ReportQuery, by: By = "team") -> ReportDocument:
    """``{"period", "coverage", "by", "bases": [{"cluster", "gpu_basis", "gpu_mig_by", "hours"}],
    "lines": [{"cluster", "currency", <by>, "kind", "gpu_hours", "cost", "busy_gpu_hours",
    "cost_per_busy_gpu_hour"}], "totals": [{"cluster", "currency", "gpu_hours", "cost"}]}``; lines
    per cluster by cost, largest first, then ``__unallocated__``, then the idle lines."""
    coverage = period_coverage(db, query)
    window: dict[str, Any] = {
        "aggregation": query.aggregation,
        "cluster": query.cluster,
        "start": query.period.start,
        "end": query.period.end,
    }
    found = db.fetch_all("gpu_lines", **window, by=by)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in found:
        groups[(row["cluster"], row["currency"] or "")].append(row)
    lines: list[dict[str, Any]] = []
    totals = []
    for (cluster, currency), rows in sorted(groups.items()):
        micros = sum(int(r["micros"]) for r in rows)
        total = from_micros(micros).quantize(_CENT, rounding=ROUND_HALF_EVEN)
        cents = largest_remainder([Fraction(int(r["micros"]), 10_000) for r in rows], int(total * 100))
        mine = [_line(r, by, (Decimal(c) / 100).quantize(_CENT)) for r, c in zip(rows, cents, strict=True)]
        mine.sort(key=lambda line: (line["kind"] != "workload", line[by] == UNALLOCATED, -line["cost"], line[by]))
        lines.extend(mine)
        hours = sum((Decimal(r["gpu_hours"]) for r in rows), Decimal(0))
        totals.append({"cluster": cluster, "currency": currency, "gpu_hours": _hours(hours), "cost": str(total)})
    bases = [dict(r) for r in db.fetch_all("gpu_bases", **window)]
    body = {
        "period": query.period.as_document(),
        "coverage": coverage.as_document(),
        "by": by,
        "bases": bases,
        "lines": [{**line, "cost": str(line["cost"])} for line in lines],
        "totals": totals,
    }
    return ReportDocument(body, (coverage,))


def _line(row: dict[str, Any], by: By, cost: Decimal) -> dict[str, Any]:
    idle = str(row["line"] or "").startswith("__idle__")
    busy = row["busy_hours"]
    per_busy = None if idle else per_busy_hour(row["measured_micros"], busy)
    return {
        "cluster": row["cluster"],
        "currency": row["currency"],
        by: row["line"] or UNALLOCATED,
        "kind": "idle" if idle else "workload",
        "gpu_hours": _hours(Decimal(row["gpu_hours"])),
        "cost": cost,
        "busy_gpu_hours": None if busy is None else _hours(Decimal(busy)),
        "cost_per_busy_gpu_hour": per_busy,
    }


def per_busy_hour(measured_micros: int | None, busy_hours: Decimal | None) -> str | None:
    """What a busy GPU-hour cost: the measured rows' GPU cost over their busy GPU-hours, to the
    cent; None when nothing was measured, or nothing was busy."""
    if measured_micros is None or busy_hours is None or busy_hours <= 0:
        return None
    return str((from_micros(int(measured_micros)) / Decimal(busy_hours)).quantize(_CENT, rounding=ROUND_HALF_EVEN))


def _hours(value: Decimal) -> str:
    return str(value.quantize(_HOURS, rounding=ROUND_HALF_EVEN))


def ranking(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The workload lines by cost per busy GPU-hour, dearest first (unmeasured ones last)."""
    measured = [line for line in body["lines"] if line["cost_per_busy_gpu_hour"] is not None]
    return sorted(measured, key=lambda line: (-Decimal(line["cost_per_busy_gpu_hour"]), line[body["by"]]))


def gpu_rows(body: dict[str, Any]) -> tuple[str, list[str], list[tuple[object, ...]]]:
    """The report as a titled table: the lines, each cluster's total, and the basis of its hours."""
    by = body["by"]
    period = body["period"]
    title = f"GPUs per {by}, {period['start']} to {period['end']}"
    rows: list[tuple[object, ...]] = [
        (
            line["cluster"],
            line[by],
            line["gpu_hours"],
            f"{line['cost']} {line['currency']}",
            line["busy_gpu_hours"] or "-",
            line["cost_per_busy_gpu_hour"] or "-",
        )
        for line in body["lines"]
    ]
    for total in body["totals"]:
        rows.append((total["cluster"], "TOTAL", total["gpu_hours"], f"{total['cost']} {total['currency']}", "", ""))
    for basis in body["bases"]:
        how = f"basis {basis['gpu_basis']}, MIG by {basis['gpu_mig_by']}" if basis["gpu_basis"] else "not split"
        rows.append((basis["cluster"], f"{basis['hours']} hours: {how}", "", "", "", ""))
    return title, ["cluster", by, "GPU-hours", "GPU cost", "busy GPU-hours", "per busy GPU-hour"], rows


def csv_rows(body: dict[str, Any]) -> Sequence[tuple[object, ...]]:
    """The lines only, for CSV (the totals are their sums)."""
    return [
        (
            line["cluster"],
            line[body["by"]],
            line["kind"],
            line["gpu_hours"],
            line["cost"],
            line["currency"],
            line["busy_gpu_hours"] or "",
            line["cost_per_busy_gpu_hour"] or "",
        )
        for line in body["lines"]
    ]
