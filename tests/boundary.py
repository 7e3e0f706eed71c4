"""The period-boundary world: hours on both sides of October 2026's bounds (UTC), written through
``collect_allocations``' own per-hour path (rows, hour ledger and the folded daily rollup), for
every test of a period query (reports, FOCUS export, budgets, reconciliation, cost_api).

One workload container of namespace ``shop`` (team ``alpha``, cost centre ``cc-1``, node
``node-a``) and the cluster's idle row, in four hours of ``UNITS`` dollars each:

    2026-09-30 23:00  September's last hour      3   (September only)
    2026-10-01 00:00  October's first hour        5
    2026-10-31 23:00  October's last hour         7
    2026-11-01 00:00  November's first hour      11   (November only)

so October holds 5 + 7 = 12 units and nothing else; a bound written ``<=`` for ``<`` (or ``>``
for ``>=``) adds 11 or drops 5. Each unit's cost is split over every cost column with its own
digits (``PARTS``, micros), so a dropped term shows in the figure; the idle row costs half a unit.
Figures expected by the tests are computed here by hand from these constants, never by the code
under test.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.hours import Hour
from infra.postgres import Database
from usecases.collect_allocations.pricing import ActivePricing
from usecases.collect_allocations.service import CollectOptions, HourContext, _write_hour

AGGREGATION = "namespace,controllerKind,controller,pod,container"
CLUSTER = "edge"
OCTOBER = "2026-10"
UNITS = {
    datetime(2026, 9, 30, 23, tzinfo=UTC): 3,
    datetime(2026, 10, 1, 0, tzinfo=UTC): 5,
    datetime(2026, 10, 31, 23, tzinfo=UTC): 7,
    datetime(2026, 11, 1, 0, tzinfo=UTC): 11,
}
# One unit's cost per column, in micros: each column its own digits.
PARTS = {
    "cpuCost": 1_000_000,
    "ramCost": 200_000,
    "gpuCost": 30_000,
    "pvCost": 4_000,
    "networkCost": 500,
    "loadBalancerCost": 60,
    "sharedCost": 7,
    "externalCost": 9,
}
UNIT = sum(PARTS.values())  # 1_234_576 micros: a unit's total
IDLE_UNIT = 500_000  # the idle row's cost per unit, micros
OCTOBER_UNITS = 5 + 7
# allocation_daily's summed columns: money (micros) and quantities, as the rollup folds them.
ROLLUP_COLUMNS = (
    "cpu_cost_micros",
    "gpu_cost_micros",
    "ram_cost_micros",
    "pv_cost_micros",
    "lb_cost_micros",
    "network_cost_micros",
    "total_cost_micros",
    "billed_core_hours",
    "requested_core_hours",
    "used_core_hours",
    "billed_gib_hours",
    "requested_gib_hours",
    "used_gib_hours",
)
NOW = datetime(2026, 11, 20, tzinfo=UTC)  # every hour ended long ago


def dollars(micros: int) -> Decimal:
    return Decimal(micros).scaleb(-6)


def units_in(first: datetime, end: datetime) -> int:
    """The units of the hours in [first, end): the expected figure, counted from the table above."""
    return sum(units for hour, units in UNITS.items() if first <= hour < end)


def allocation(units: int, *, team: str = "alpha", namespace: str = "shop") -> dict[str, Any]:
    name = f"{namespace}/Deployment/app/pod-0/c0"
    costs = {field: dollars(micros * units) for field, micros in PARTS.items()}
    return {
        "name": name,
        "properties": {
            "namespace": namespace,
            "namespaceLabels": {"team": team, "cost-center": "cc-1"},
            "controllerKind": "Deployment",
            "controller": "app",
            "pod": "pod-0",
            "container": "c0",
            "node": "node-a",
        },
        "minutes": Decimal(60),
        "cpuCoreRequestAverage": Decimal(2),
        "cpuCoreUsageAverage": Decimal(1),
        "cpuCoreHours": Decimal(3),
        "ramByteRequestAverage": Decimal(2 * 2**30),
        "ramByteUsageAverage": Decimal(2**30),
        "ramByteHours": Decimal(3 * 2**30),
        **costs,
        "totalCost": dollars(UNIT * units),
    }


def idle(units: int) -> dict[str, Any]:
    cost = dollars(IDLE_UNIT * units)
    return {
        "name": "__idle__",
        "properties": {"node": "node-a"},
        "minutes": Decimal(60),
        "cpuCost": cost,
        "totalCost": cost,
    }


class HourAnswers:
    """An allocation source answering each hour with the allocations set for it."""

    def __init__(self) -> None:
        self.answers: dict[datetime, list[dict[str, Any]]] = {}

    def allocation(self, start: datetime, end: datetime, **_: Any) -> list[dict[str, Any]]:
        entries = self.answers.get(start, [])
        return [{e["name"]: e for e in entries}] if entries else []


class Writer:
    """Writes hours of one cluster through the collector's per-hour path (rows, ledger, rollup)."""

    def __init__(self, db: Database, cluster: str = CLUSTER, now: datetime = NOW) -> None:
        self.db = db
        self.now = now
        self.cluster = cluster
        self.source = HourAnswers()
        self.options = CollectOptions(cluster, AGGREGATION, 0, "team", "cost-center")

    def write(
        self, hour: datetime, entries: list[dict[str, Any]], currency: str | None = "USD", *, final: bool = True
    ) -> None:
        self.source.answers[hour] = entries
        pricing = ActivePricing(None, currency, "test", None)
        ctx = HourContext(self.options, pricing, self.now, str(uuid.uuid4()), timedelta(hours=6), False)
        _write_hour(self.db, self.source, ctx, Hour(hour), final)

    def give_up(self, start: datetime, horizon: datetime) -> None:
        """Every hour of [start, horizon) not written is lost (its day can then settle)."""
        self.db.fetch_all(
            "give_up_before", cluster=self.cluster, aggregation=AGGREGATION, start=start, horizon=horizon, reason="test"
        )


def write_boundaries(db: Database) -> Writer:
    """The four hours of ``UNITS``; October 31st's other hours given up, so that day is settled."""
    writer = Writer(db)
    for hour, units in UNITS.items():
        writer.write(hour, [allocation(units), idle(units)])
    last = date(2026, 10, 31)
    writer.give_up(datetime.combine(last, datetime.min.time(), UTC), datetime(2026, 11, 1, tzinfo=UTC))
    return writer
