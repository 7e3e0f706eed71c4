"""The chargeback's inputs on a basis: the bill's lines given to clusters, and each cluster's rows
reconciled to them (``finops.reconciliation`` holds the method).

Read for every report, whatever its basis: the period's bill lines (``cloud_costs``), and the
provider ids of every covered cluster's nodes, disks and load balancers (``cluster_assets``).
A line that is a cluster's never counts as a direct cost: on the ``estimate`` basis the
cluster's measurement stands for it (counting both would charge the node twice), on ``billed``
and ``amortised`` it replaces the measurement. Only then, for those two bases, each cluster's
rows are read per day, node and namespace from ``provider_allocations`` (the rollups do not keep
the node) with its assets per day, and reconciled.

The variance the report shows beside the figures: per node, disk and load balancer, the estimate
against the bill over the billed days; per line of the report, the difference between this
report and the same report on the ``estimate`` basis.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.bill_lines import ResourceIndex, assign
from finops.chargeback import BillExtras, CostRow, DirectCost, IdleRow, Period, Report, billed_inputs
from finops.errors import InvalidInput
from finops.money import format_amount
from finops.policy import Policy
from finops.reconcile_policy import Basis
from finops.reconciliation import Asset, BillCharge, ClusterReconciliation, EstimateRow, reconcile
from infra.postgres import Database


@dataclass
class Reconciled:
    """What ``allocate`` needs on a basis, and what the report says about it."""

    basis: Basis
    direct: list[DirectCost]
    rows: list[CostRow] = field(default_factory=list)
    idle: list[IdleRow] = field(default_factory=list)
    bills: dict[str, BillExtras] = field(default_factory=dict)
    clusters: list[ClusterReconciliation] = field(default_factory=list)


def days_of(period: Period) -> list[date]:
    first, last = period.start.date(), period.end.date()
    return [first + timedelta(days=n) for n in range((last - first).days)]


def direct_costs(db: Database, policy: Policy, period: Period, clusters: Iterable[str]) -> list[DirectCost]:
    """The period's cloud spend outside ``clusters`` (their lines are their measurement's), for
    ``finops.chargeback.allocate(..., direct=...)``; amortised when the bill gives it."""
    return read(db, policy, period, clusters, Basis.ESTIMATE).direct


def read(
    db: Database,
    policy: Policy,
    period: Period,
    clusters: Iterable[str],
    basis: Basis,
    *,
    aggregation: str = DEFAULT_AGGREGATION,
) -> Reconciled:
    """The period's bill lines given to ``clusters`` (the report's), the rest as direct costs, and
    on a bill basis each cluster reconciled."""
    covered = frozenset(clusters)
    window: dict[str, Any] = {"start": period.start, "end": period.end}
    ids: dict[str, list[Asset]] = {name: [] for name in covered}
    for row in db.fetch_all("asset_provider_ids", **window):
        if row["cluster"] in covered:
            ids[row["cluster"]].append(Asset(period.start.date(), row["kind"], row["name"], row["provider_id"], 0))
    lines = [(_charge(row), row) for row in db.fetch_all("bill_lines", **window)]
    for _, row in lines:
        if row["currency"].strip() != policy.currency:
            raise InvalidInput(
                f"policy.currency is {policy.currency} but cloud costs imported from {row['source']} are in "
                f"{row['currency'].strip()}; reports never convert currencies"
            )
    mine, direct = assign((charge for charge, _ in lines), ResourceIndex(ids), policy.reconciliation, covered)
    rows_of = {charge.ref: row for charge, row in lines}
    result = Reconciled(basis, [_direct(charge, rows_of[charge.ref], basis) for charge in direct])
    if basis is Basis.ESTIMATE:
        return result
    days = days_of(period)
    for cluster in sorted(covered):
        params: dict[str, Any] = {"cluster": cluster, "aggregation": aggregation, **window}
        estimate = [_estimate(row) for row in node_rows(db, cluster, aggregation, days)]
        assets = [_asset(row) for row in db.fetch_all("reconcile_assets", **params)]
        done = reconcile(cluster, days, estimate, assets, mine.get(cluster, []), policy.reconciliation, basis)
        result.clusters.append(done)
    inputs = billed_inputs(result.clusters)
    result.rows, result.idle, result.bills = inputs.rows, inputs.idle, inputs.bills
    return result


def node_rows(db: Database, cluster: str, aggregation: str, days: list[date]) -> list[dict[str, Any]]:
    """The cluster's cost per day, node and namespace over ``days`` (consecutive): settled days
    from ``allocation_node_daily``, stored there by the first report that reads them (their hours
    are final or lost, never rewritten), the others from the hourly rows."""
    if not days:
        return []
    key: dict[str, Any] = {"cluster": cluster, "aggregation": aggregation}
    span: dict[str, Any] = {"first": days[0], "last": days[-1] + timedelta(days=1)}
    live: list[date] = []
    for row in db.fetch_all("node_days", **key, **span):
        if not row["stored"] and row["settled"]:
            db.execute("store_node_day", **key, day=row["day"])
        elif not row["stored"]:
            live.append(row["day"])
    rows = db.fetch_all("stored_node_rows", **key, **span)
    for first, last in _runs(live):
        start, end = (datetime.combine(day, time(), UTC) for day in (first, last))
        rows += db.fetch_all("reconcile_rows", **key, start=start, end=end)
    return rows


def _runs(days: list[date]) -> list[tuple[date, date]]:
    """Consecutive days as half-open ranges."""
    runs: list[list[date]] = []
    for day in days:
        if runs and runs[-1][1] == day:
            runs[-1][1] = day + timedelta(days=1)
        else:
            runs.append([day, day + timedelta(days=1)])
    return [(first, last) for first, last in runs]


def document(reconciled: Reconciled, report: Report, estimate: Report | None) -> dict[str, Any]:
    """The report's ``reconciliation`` section: per cluster what the bill covered and the variance
    per resource; per line the difference from ``estimate`` (the same report on the estimate
    basis), when given."""
    clusters = []
    for done in reconciled.clusters:
        clusters.append(
            {
                "cluster": done.cluster,
                "billed_days": _ranges(done.billed_days),
                "estimated_days": _ranges(done.estimated_days),
                "billed_hours": 24 * len(done.billed_days),
                "estimated_hours": 24 * len(done.estimated_days),
                "total": format_amount(done.total_micros),
                "unreconciled": format_amount(done.unreconciled_micros),
                "unreconciled_lines": list(done.unreconciled_lines),
                "shared_from_bill": format_amount(done.shared_micros),
                "resources": [
                    {
                        "kind": item.kind,
                        "name": item.name,
                        "provider_id": item.provider_id,
                        "estimate": format_amount(item.estimate_micros),
                        "billed": format_amount(round(item.billed_micros)),
                        "variance": format_amount(round(item.billed_micros) - item.estimate_micros),
                        "status": item.status,
                    }
                    for item in done.resources
                ],
            }
        )
    if estimate is None:  # no estimate to compare with (an export): no per-line variance
        return {"basis": reconciled.basis.value, "clusters": clusters}
    before = {(line.kind, line.owner): line.total for line in estimate.lines}
    lines = []
    for line in report.lines:
        measured = before.get((line.kind, line.owner), Decimal("0.00"))
        lines.append(
            {
                "owner": line.owner,
                "kind": line.kind.value,
                "estimate": str(measured),
                "total": str(line.total),
                "variance": str(line.total - measured),
            }
        )
    return {"basis": reconciled.basis.value, "clusters": clusters, "lines": lines}


def _ranges(days: Iterable[date]) -> list[dict[str, str]]:
    """Consecutive days as half-open ranges ``[start, end)``."""
    return [{"start": first.isoformat(), "end": last.isoformat()} for first, last in _runs(sorted(days))]


def _charge(row: Mapping[str, Any]) -> BillCharge:
    tags = row["tags"] if isinstance(row["tags"], Mapping) else json.loads(row["tags"] or "{}")
    return BillCharge(
        ref=f"{row['source']}#{row['row_number']}",
        start=row["charge_start"],
        end=row["charge_end"],
        billed_micros=row["billed_cost_micros"],
        effective_micros=row["effective_cost_micros"],
        category=row["charge_category"],
        resource_id=row["resource_id"],
        account=row["account"],
        tags=tags,
        commitment=row["commitment_id"],
    )


def _direct(charge: BillCharge, row: Mapping[str, Any], basis: Basis) -> DirectCost:
    # On the estimate, spend outside the clusters counts as it always did: amortised when the bill says.
    amount = charge.amount(Basis.AMORTISED if basis is Basis.ESTIMATE else basis)
    return DirectCost(
        owner=row["team"],
        cost_center=row["cost_center"],
        amount_micros=amount,
        label=row["service"] or "cloud",
        start=charge.start,
        end=charge.end,
        shared=charge.category in ("tax", "support", "purchase"),
    )


def _estimate(row: Mapping[str, Any]) -> EstimateRow:
    return EstimateRow(
        day=row["day"],
        node=row["node"],
        namespace=row["namespace"],
        owner=row["owner"],
        cost_center=row["cost_center"],
        entry_kind=row["entry_kind"],
        total_micros=int(row["total"]),
        pv_micros=int(row["pv"]),
        lb_micros=int(row["lb"]),
        other_micros=int(row["other"]),
    )


def _asset(row: Mapping[str, Any]) -> Asset:
    return Asset(row["day"], row["kind"], row["name"], row["provider_id"] or "", int(row["estimate"]))
