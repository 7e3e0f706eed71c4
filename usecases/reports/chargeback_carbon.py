"""The chargeback's carbon column: read the period's stored grams and put them on the report's lines.

The split is the domain's (``finops.chargeback_carbon``: each line's grams go as its money does,
idle by the policy's ``idle`` option, shared namespaces' by ``shared.split``); this module reads
what it needs from the hourly ``allocation_emissions`` the collector wrote, and states what the
grams stand on: per covered cluster, the stored hours and those of them without emissions (an
OpenCost without carbon estimates, the Prometheus source). Such hours are named, never counted
as 0 g; with no hour measured at all the column is null.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from finops.carbon import kilograms
from finops.chargeback import CostRow, IdleRow, Report
from finops.chargeback_carbon import GramsRow, line_grams, with_grams
from finops.ledger import ranges
from infra.postgres import Database


def add_carbon(
    db: Database,
    report: Report,
    rows: Iterable[CostRow],
    idle: Iterable[IdleRow],
    *,
    aggregation: str,
    cluster: str | None,
) -> Report:
    """``report`` (settled with ``rows`` and ``idle``) with each line's grams CO2e and a
    ``carbon`` summary: ``{"total_grams", "total_kg", "complete", "clusters": [{"cluster",
    "hours_stored", "hours_with_emissions", "hours_without"}]}``."""
    window: dict[str, Any] = {
        "aggregation": aggregation,
        "cluster": cluster,
        "start": report.period.start,
        "end": report.period.end,
    }
    stored = {r["cluster"]: r for r in db.fetch_all("carbon_hours", **window)}
    hours: list[dict[str, Any]] = []
    for name in report.clusters:
        found = stored.get(name)
        count, without = (found["stored"], list(found["without"])) if found else (0, [])
        hours.append(
            {
                "cluster": name,
                "hours_stored": count,
                "hours_with_emissions": count - len(without),
                "hours_without": ranges(without) or None,
            }
        )
    measured = {name for name, h in zip(report.clusters, hours, strict=True) if h["hours_with_emissions"]}
    grams = [
        GramsRow(r["cluster"], r["namespace"], r["owner"], r["cost_center"], int(r["grams"]), r["is_idle"])
        for r in db.fetch_all("chargeback_grams", **window)
        if r["cluster"] in report.clusters
    ]
    lines = line_grams(rows, idle, grams, report.policy, by=report.by, measured=measured)
    total = sum(amount for amount in lines.values() if amount is not None) if measured else None
    carbon = {
        "total_grams": total,
        "total_kg": None if total is None else kilograms(total),
        "complete": bool(measured) and all(h["hours_without"] is None for h in hours),
        "clusters": hours,
    }
    return with_grams(report, lines if measured else {}, carbon)


def carbon_note(report: Report) -> str | None:
    """One ``WARNING:`` line naming the covered clusters' stored hours without emissions (their
    grams are not in the column), or None when every stored hour has them, or when none has: with
    no emissions at all the column is empty, not partial, and says so itself."""
    if report.carbon is None or report.carbon["total_grams"] is None:
        return None
    gaps = [
        f"cluster {h['cluster']}: {h['hours_stored'] - h['hours_with_emissions']} of {h['hours_stored']} stored hours"
        f" without emissions ({h['hours_without']})"
        for h in report.carbon["clusters"]  # type: ignore[attr-defined]
        if h["hours_without"]
    ]
    if not gaps:
        return None
    return f"WARNING: carbon: {' | '.join(gaps)}; grams CO2e cover the hours with emissions only"
