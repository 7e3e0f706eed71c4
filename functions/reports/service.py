"""Team showback and chargeback reports, read from the daily rollups.

Every report is one SQL aggregation over ``allocation_daily`` feeding the domain
(``finops.chargeback``), which settles each cluster's idle and shared costs and rounds once, so
the lines add up to the bill to the cent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.chargeback import CostRow, IdleRow, LineKey, Period, Report, allocate
from finops.errors import InvalidInput
from finops.money import format_amount
from finops.policy import Policy
from functions.reports.cloud import direct_costs
from infra.postgres import Database


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


@dataclass(frozen=True)
class ReportQuery:
    period: Period
    cluster: str | None = None
    aggregation: str = DEFAULT_AGGREGATION

    def params(self) -> dict[str, Any]:
        return {
            "aggregation": self.aggregation,
            "start": self.period.start.date(),
            "end": self.period.end.date(),
            "cluster": self.cluster,
        }


def chargeback(db: Database, policy: Policy, query: ReportQuery, by: LineKey | str = LineKey.TEAM) -> Report:
    """The period's chargeback: allocated, idle and shared cost per line, exact to the cent."""
    rows: list[CostRow] = []
    idle: list[IdleRow] = []
    for row in db.fetch_all("chargeback_rows", **query.params()):
        for currency in {row["currency"], row["min_currency"]} - {None}:
            if currency.strip() != policy.currency:
                raise InvalidInput(
                    f"policy.currency is {policy.currency} but cluster {row['cluster']}'s allocations are priced "
                    f"in {currency.strip()}; reports never convert currencies"
                )
        if row["entry_kind"] == "idle":
            idle.append(IdleRow(row["cluster"], row["micros"]))
        else:
            rows.append(CostRow(row["cluster"], row["namespace"], row["owner"], row["cost_center"], row["micros"]))
    clusters = None if query.cluster is None else [query.cluster]
    # Cloud spend belongs to no cluster: it is part of the all-cluster report only.
    direct = direct_costs(db, query.period, policy.currency) if query.cluster is None else []
    return allocate(rows, idle, policy, period=query.period, by=by, clusters=clusters, direct=direct)


def _ratio(used: Decimal, billed: Decimal) -> str | None:
    return None if not billed else str((used / billed).quantize(Decimal("0.01")))


def team_report(db: Database, policy: Policy, query: ReportQuery, team: str, *, top: int = 5) -> dict[str, Any]:
    """The monthly team report: total and change against the previous month, the most expensive
    namespaces, requests against usage, and the team's share of idle and shared cost."""
    current = chargeback(db, policy, query)
    before = chargeback(db, policy, ReportQuery(previous_month(query.period), query.cluster, query.aggregation))
    line = next((li for li in current.lines if li.owner == team and li.kind.value == "owner"), None)
    previous = next((li for li in before.lines if li.owner == team and li.kind.value == "owner"), None)
    namespaces = [r for r in db.fetch_all("owner_namespaces", **query.params()) if r["owner"] == team]

    def hours(key: str) -> Decimal:
        return sum((Decimal(r[key]) for r in namespaces), Decimal(0))

    total = line.total if line else Decimal("0.00")
    last = previous.total if previous else Decimal("0.00")
    return {
        "team": team,
        "period": query.period.as_document(),
        "currency": policy.currency,
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
        "requests_vs_usage": {
            "cpu": {
                "billed_core_hours": str(hours("billed_core_hours").quantize(Decimal("0.01"))),
                "requested_core_hours": str(hours("requested_core_hours").quantize(Decimal("0.01"))),
                "used_core_hours": str(hours("used_core_hours").quantize(Decimal("0.01"))),
                "used_of_billed": _ratio(hours("used_core_hours"), hours("billed_core_hours")),
            },
            "memory": {
                "billed_gib_hours": str(hours("billed_gib_hours").quantize(Decimal("0.01"))),
                "requested_gib_hours": str(hours("requested_gib_hours").quantize(Decimal("0.01"))),
                "used_gib_hours": str(hours("used_gib_hours").quantize(Decimal("0.01"))),
                "used_of_billed": _ratio(hours("used_gib_hours"), hours("billed_gib_hours")),
            },
        },
    }


def daily_view(db: Database, query: ReportQuery) -> list[dict[str, Any]]:
    """Cost per day and owner (idle on its own line), so a change shows within a day."""
    days: Mapping[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in db.fetch_all("daily_owner_costs", **query.params()):
        owner = "(idle)" if row["entry_kind"] == "idle" else row["owner"] or "__unallocated__"
        days[row["day"]][owner] += int(row["micros"])
    return [
        {"day": day.isoformat(), "owners": {k: format_amount(v) for k, v in sorted(owners.items())}}
        for day, owners in sorted(days.items())
    ]


def unlabelled(db: Database, query: ReportQuery) -> list[dict[str, Any]]:
    """Namespaces missing the owner label, with their cost: the unallocated line, itemised."""
    return [
        {"cluster": r["cluster"], "namespace": r["namespace"], "cost": format_amount(int(r["micros"]))}
        for r in db.fetch_all("owner_namespaces", **query.params())
        if r["owner"] is None and r["namespace"]
    ]


def last_days(days: int, today: date) -> Period:
    end = datetime(today.year, today.month, today.day, tzinfo=UTC) + timedelta(days=1)
    return Period(end - timedelta(days=days), end)
