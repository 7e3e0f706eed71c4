"""Team showback and chargeback reports, read from the daily rollups.

Every report is one SQL aggregation over ``allocation_daily`` feeding the domain
(``finops.chargeback``), which settles each cluster's idle and shared costs and rounds once, so
the lines add up to the bill to the cent.

Every report also reads the hour ledger first (``period_coverage``): the rollups cannot say which
hours they hold, the ledger can. The coverage decides the clusters the report covers (so a
cluster's fixed costs are billed even without rows), travels with the report, and refuses the
report before anything is read when the period holds unpriced cost or another currency than the
policy's, or is incomplete and ``require_complete`` was asked (``finops.coverage``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any, Protocol

from finops.allocations import DEFAULT_AGGREGATION
from finops.chargeback import CostRow, IdleRow, LineKey, Period, Report, allocate
from finops.coverage import (
    Coverage,
    LedgerRun,
    PricingVersion,
    build_coverage,
    covered_clusters,
    require_complete,
    require_currency,
    require_priced,
)
from finops.errors import InvalidInput
from finops.money import format_amount
from finops.policy import Policy
from finops.reconcile_policy import Basis, parse_basis
from infra.postgres import Database
from usecases.reports import reconciled
from usecases.reports.chargeback_carbon import add_carbon
from usecases.rollups import rebuild_marked_days


def month_period(month: str) -> Period:
    """``2026-10`` as the half-open period [2026-10-01, 2026-11-01) UTC."""
    try:
        start = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC)
        end = (start + timedelta(days=32)).replace(day=1)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(f"month: {month!r} is not a month such as 2026-10") from exc
    return Period(start, end)


def previous_month(period: Period) -> Period:
    start = (period.start - timedelta(days=1)).replace(day=1)
    return Period(start, period.start)


DEFAULT_CLUSTER = "default"  # CLUSTER_ID's default: the cluster covered when nothing names one


@dataclass(frozen=True)
class ReportQuery:
    period: Period
    cluster: str | None = None
    aggregation: str = DEFAULT_AGGREGATION
    require_complete: bool = False  # refuse an incomplete period (``IncompleteData``) instead of warning
    default_cluster: str = DEFAULT_CLUSTER  # covered when no data, fixed cost or ``cluster`` names one
    now: datetime | None = None  # the coverage's present; None: the clock

    def params(self) -> dict[str, Any]:
        return {
            "aggregation": self.aggregation,
            "start": self.period.start.date(),
            "end": self.period.end.date(),
            "cluster": self.cluster,
        }


@dataclass(frozen=True)
class ReportDocument:
    """A report as JSON-able data, with the coverage of each period it read (for warnings)."""

    body: dict[str, Any]
    coverages: tuple[Coverage, ...]


def period_coverage(db: Database, query: ReportQuery, policy: Policy | None = None) -> Coverage:
    """The period's coverage over the clusters the report covers (``finops.coverage``), after the
    refusals: cost in another currency than the policy's (``InvalidInput``), unpriced cost, and an
    incomplete period when the query or the policy requires a complete one (``IncompleteData``)."""
    rebuild_marked_days(db, query.cluster, query.aggregation)  # never read a rollup a killed run left stale
    window: dict[str, Any] = {"aggregation": query.aggregation, "cluster": query.cluster}
    ledger = db.fetch_all("report_hour_ledger", start=query.period.start, end=query.period.end, **window)
    runs = [
        LedgerRun(
            r["cluster"],
            r["state"],
            r["first"],
            r["last"],
            r["unpriced"],
            r["currency"],
            r["reason"],
            int(r["row_count"] or 0),
            _version(r),
        )
        for r in ledger
    ]
    rollups = {r["cluster"]: r for r in db.fetch_all("report_rollup_clusters", **query.params())}
    named = [entry.cluster for entry in policy.shared.fixed] if policy else []
    clusters = covered_clusters(query.cluster, [*rollups, *(r.cluster for r in runs)], named, query.default_cluster)
    currencies = {name: list(r["currencies"]) for name, r in rollups.items()}
    coverage = build_coverage(query.period, clusters, runs, now=query.now or datetime.now(UTC), rollups=currencies)
    if policy is not None:
        require_currency(policy.currency, coverage)
    require_priced(coverage, policy.currency if policy else None, {n: r["unpriced_days"] for n, r in rollups.items()})
    if query.require_complete or (policy is not None and policy.require_complete):
        require_complete(coverage)
    return coverage


def _version(row: dict[str, Any]) -> PricingVersion | None:
    """The pricing version a ``report_hour_ledger`` run was stamped with (None: unpriced)."""
    if row["pricing_source"] is None or row["currency"] is None:
        return None
    return PricingVersion(row["pricing_source"], row["pricing_name"], row["currency"])


def chargeback(
    db: Database,
    policy: Policy,
    query: ReportQuery,
    by: LineKey | str = LineKey.TEAM,
    basis: Basis | str | None = None,
    *,
    carbon: bool = True,
) -> Report:
    """The period's chargeback: allocated, idle and shared cost per line, exact to the cent, with
    the period's coverage. Every covered cluster is settled, with or without rows, so the
    policy's fixed costs are billed (on ``__shared__`` when nobody has cost there).

    With ``carbon`` each line also carries its grams CO2e, split as its money is
    (``usecases.reports.chargeback_carbon``); the team report and the budgets, which show no
    grams, skip reading them.

    ``basis`` (default: the policy's) says what the figures stand on: on ``billed`` or
    ``amortised``, the days an imported bill covers are reconciled to it (``reconciled``) and the
    report carries the variance against the estimate."""
    basis = policy.reconciliation.basis if basis is None else parse_basis(basis)
    coverage = period_coverage(db, query, policy)
    clusters = coverage.cluster_names
    rows: list[CostRow] = []
    idle: list[IdleRow] = []
    for row in db.fetch_all("chargeback_rows", **query.params()):
        if row["entry_kind"] == "idle":
            idle.append(IdleRow(row["cluster"], row["micros"]))
        else:
            rows.append(CostRow(row["cluster"], row["namespace"], row["owner"], row["cost_center"], row["micros"]))
    # Cloud spend belongs to no cluster: it is part of the all-cluster report only. So one cluster's
    # estimate needs no bill at all (cost_api's routes and metrics ask for exactly that).
    if basis is Basis.ESTIMATE and query.cluster is not None:
        bill = reconciled.Reconciled(basis, direct=[])
    else:
        bill = reconciled.read(db, policy, query.period, clusters, basis, aggregation=query.aggregation)
    direct = bill.direct if query.cluster is None else []
    settle = partial(allocate, policy=policy, period=query.period, by=by, clusters=clusters, direct=direct)
    report = settle(rows, idle)
    grams = partial(add_carbon, db, aggregation=query.aggregation, cluster=query.cluster)
    if basis is Basis.ESTIMATE:
        return replace(grams(report, rows, idle) if carbon else report, coverage=coverage)
    on_bill = settle(bill.rows, bill.idle, bills=bill.bills)
    summary = reconciled.document(bill, on_bill, report)
    if carbon:  # the grams go as the money on the bill's basis does: the same receivers and weights
        on_bill = grams(on_bill, bill.rows, bill.idle)
    return replace(on_bill, coverage=coverage, basis=basis.value, reconciliation=summary)


class Ledger(Protocol):
    """Where the team report and the budgets read their figures: one database's rollups
    (``DatabaseLedger``) or the fleet bucket (``usecases.reports.fleet.FleetLedger``)."""

    def chargeback(
        self, policy: Policy, query: ReportQuery, by: LineKey | str = LineKey.TEAM, basis: Basis | str | None = None
    ) -> Report: ...

    def owner_namespaces(self, query: ReportQuery) -> list[dict[str, Any]]:
        """The period's namespaces with owner, cost centre, ``micros`` and ``<billed|requested|used>
        _<core|gib>_hours``, idle left out, most expensive first."""
        ...

    def cost_days(self, query: ReportQuery) -> list[date]:
        """The period's days that hold cost."""
        ...


@dataclass(frozen=True)
class DatabaseLedger:
    db: Database

    def chargeback(
        self, policy: Policy, query: ReportQuery, by: LineKey | str = LineKey.TEAM, basis: Basis | str | None = None
    ) -> Report:
        return chargeback(self.db, policy, query, by, basis, carbon=False)  # the team report and budgets show no grams

    def owner_namespaces(self, query: ReportQuery) -> list[dict[str, Any]]:
        return self.db.fetch_all("owner_namespaces", **query.params())

    def cost_days(self, query: ReportQuery) -> list[date]:
        return [row["day"] for row in self.db.fetch_all("daily_owner_costs", **query.params())]


def ledger_of(source: Database | Ledger) -> Ledger:
    return DatabaseLedger(source) if isinstance(source, Database) else source


def _usage(namespaces: list[dict[str, Any]], unit: str) -> dict[str, str | None]:
    """Billed, requested and used ``<unit>_hours`` summed over ``namespaces``, and used of billed."""
    sums = {
        k: sum((Decimal(r[f"{k}_{unit}_hours"]) for r in namespaces), Decimal(0))
        for k in ("billed", "requested", "used")
    }
    ratio = None if not sums["billed"] else str((sums["used"] / sums["billed"]).quantize(Decimal("0.01")))
    return {**{f"{k}_{unit}_hours": str(v.quantize(Decimal("0.01"))) for k, v in sums.items()}, "used_of_billed": ratio}


def team_report(
    source: Database | Ledger, policy: Policy, query: ReportQuery, team: str, *, top: int = 5, basis: str | None = None
) -> ReportDocument:
    """The monthly team report: total and change against the previous month, the most expensive
    namespaces, requests against usage, and the team's share of idle and shared cost. It stands on
    both months, so both carry their coverage and both are held to the same refusals. The totals
    are on ``basis`` (the chargeback's); the namespaces' costs are measured (estimate)."""
    ledger = ledger_of(source)
    current = ledger.chargeback(policy, query, basis=basis)
    before = ledger.chargeback(policy, replace(query, period=previous_month(query.period)), basis=basis)
    assert current.coverage is not None and before.coverage is not None  # chargeback always sets it
    line = next((li for li in current.lines if li.owner == team and li.kind.value == "owner"), None)
    previous = next((li for li in before.lines if li.owner == team and li.kind.value == "owner"), None)
    # Most expensive first, ties by cluster and namespace: the same top list from any ledger.
    namespaces = sorted(
        (r for r in ledger.owner_namespaces(query) if r["owner"] == team),
        key=lambda r: (-int(r["micros"]), r["cluster"], r["namespace"]),
    )
    total = line.total if line else Decimal("0.00")
    last = previous.total if previous else Decimal("0.00")
    body = {
        "team": team,
        "period": query.period.as_document(),
        "currency": policy.currency,
        "basis": current.basis,
        "total": str(total),
        "previous_total": str(last),
        "change": str(total - last),
        "change_percent": None if not last else str(((total - last) * 100 / last).quantize(Decimal("0.1"))),
        "allocated": str(line.allocated) if line else "0.00",
        "idle_share": str(line.idle) if line else "0.00",
        "shared_share": str(line.shared) if line else "0.00",
        "top_namespaces": [
            {"cluster": r["cluster"], "namespace": r["namespace"], "cost": format_amount(int(r["micros"]))}
            for r in namespaces[:top]
        ],
        "requests_vs_usage": {"cpu": _usage(namespaces, "core"), "memory": _usage(namespaces, "gib")},
        "coverage": current.coverage.as_document(),
        "previous_coverage": before.coverage.as_document(),
    }
    return ReportDocument(body, (current.coverage, before.coverage))


def daily_view(db: Database, query: ReportQuery) -> ReportDocument:
    """Cost per day and owner (idle on its own line), so a change shows within a day:
    ``{"period", "coverage", "days": [{"day", "owners": {owner: amount}}]}``."""
    coverage = period_coverage(db, query)
    days: Mapping[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in db.fetch_all("daily_owner_costs", **query.params()):
        owner = "(idle)" if row["entry_kind"] == "idle" else row["owner"] or "__unallocated__"
        days[row["day"]][owner] += int(row["micros"])
    listed = [
        {"day": day.isoformat(), "owners": {k: format_amount(v) for k, v in sorted(owners.items())}}
        for day, owners in sorted(days.items())
    ]
    body = {
        "period": query.period.as_document(),
        "basis": "estimate",
        "coverage": coverage.as_document(),
        "days": listed,
    }
    return ReportDocument(body, (coverage,))


def unlabelled(db: Database, query: ReportQuery) -> ReportDocument:
    """Namespaces missing the owner label, with their cost: the unallocated line, itemised
    (``{"period", "coverage", "namespaces": [{"cluster", "namespace", "cost"}]}``)."""
    coverage = period_coverage(db, query)
    listed = [
        {"cluster": r["cluster"], "namespace": r["namespace"], "cost": format_amount(int(r["micros"]))}
        for r in db.fetch_all("owner_namespaces", **query.params())
        if r["owner"] is None and r["namespace"]
    ]
    body = {"period": query.period.as_document(), "coverage": coverage.as_document(), "namespaces": listed}
    return ReportDocument(body, (coverage,))


def last_days(days: int, today: date) -> Period:
    end = datetime(today.year, today.month, today.day, tzinfo=UTC) + timedelta(days=1)
    return Period(end - timedelta(days=days), end)
