"""Hours of generated allocations written through ``collect_allocations``' own per-hour path
(``_write_hour``), for the tests that compare what is built from them: the incremental rollups
(``test_incremental_rollups``) and the fleet files (``test_fleet_equality``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from finops.hours import Hour
from infra.opencost import Allocation
from infra.postgres import Database
from usecases.collect_allocations.pricing import ActivePricing
from usecases.collect_allocations.service import CollectOptions, HourContext, _write_hour

AGGREGATION = "namespace,controllerKind,controller,pod,container"
NOW = datetime(2026, 11, 23, tzinfo=UTC)  # every hour ended long ago: an empty answer is lost at once
NAMESPACES = ("shop", "search", "batch", "")  # '' is the cluster's idle row


@dataclass(frozen=True)
class Entry:
    """One container's hour (or the idle row), with figures of varied scales and some unknowns."""

    namespace: str
    container: int
    team: str | None  # the namespace's owner label this hour
    cpu_cost: Decimal
    ram_cost: Decimal | None
    minutes: Decimal
    cpu_request: Decimal
    cpu_usage: Decimal | None
    ram_byte_hours: Decimal
    ram_request: Decimal
    cost_center: str | None = None  # the namespace's cost-centre label this hour

    def allocation(self) -> tuple[str, Allocation]:
        if not self.namespace:
            return "__idle__", {
                "name": "__idle__",
                "minutes": self.minutes,
                "cpuCost": self.cpu_cost,
                "totalCost": self.cpu_cost,
                "ramByteHours": self.ram_byte_hours,
            }
        name = f"{self.namespace}/Deployment/app/pod-{self.container}/c{self.container}"
        labels = {"team": self.team} if self.team else {}
        if self.cost_center:
            labels["cost-center"] = self.cost_center
        total = self.cpu_cost + (self.ram_cost or 0)
        return name, {
            "name": name,
            "properties": {
                "namespace": self.namespace,
                "namespaceLabels": labels,
                "controllerKind": "Deployment",
                "controller": "app",
                "pod": f"pod-{self.container}",
                "container": f"c{self.container}",
            },
            "minutes": self.minutes,
            "cpuCoreRequestAverage": self.cpu_request,
            "cpuCoreUsageAverage": self.cpu_usage,
            "cpuCoreHours": self.cpu_request * self.minutes / 60,
            "ramByteRequestAverage": self.ram_request,
            "ramByteUsageAverage": self.ram_request / 3,
            "ramByteHours": self.ram_byte_hours,
            "cpuCost": self.cpu_cost,
            "ramCost": self.ram_cost,
            "totalCost": total,
        }


class HourSource:
    """An allocation source answering each hour with the entries the test set for it last."""

    def __init__(self) -> None:
        self.answers: dict[datetime, Sequence[Entry]] = {}

    def allocation(self, start: datetime, end: datetime, **_: Any) -> list[dict[str, Allocation]]:
        entries = self.answers.get(start, ())
        return [dict(e.allocation() for e in entries)] if entries else []


def decimals(max_digits: int) -> st.SearchStrategy[Decimal]:
    """Exact decimals of 0 to 9 places, as OpenCost's JSON numbers parse."""
    return st.builds(lambda n, places: Decimal(n).scaleb(-places), st.integers(0, 10**max_digits), st.integers(0, 9))


entries = st.builds(
    Entry,
    namespace=st.sampled_from(NAMESPACES),
    container=st.integers(0, 2),
    team=st.sampled_from([None, "alpha", "beta"]),
    cpu_cost=decimals(8),
    ram_cost=st.none() | decimals(8),
    minutes=st.sampled_from([Decimal(60), Decimal(30), Decimal("12.5")]),
    cpu_request=decimals(4),
    cpu_usage=st.none() | decimals(4),
    ram_byte_hours=decimals(13),
    ram_request=decimals(12),
    cost_center=st.sampled_from([None, "cc-1", "cc-2"]),
)


def hour_answer(found: list[Entry]) -> list[Entry]:
    """One entry per container (the natural key) and one owner label per namespace, as OpenCost
    answers: the first entry of a namespace decides its label for the hour."""
    by_key: dict[tuple[str, int], Entry] = {}
    for entry in found:
        by_key.setdefault((entry.namespace, 0 if not entry.namespace else entry.container), entry)
    return list(by_key.values())


@dataclass(frozen=True)
class Write:
    hour: datetime
    entries: list[Entry]  # empty: OpenCost answers the hour with no allocations
    finalize: bool
    currency: str | None
    retry_lost: bool


class Collector:
    """Writes hours of one fresh cluster through ``collect_allocations``' own per-hour path."""

    def __init__(self, db: Database, cluster: str | None = None) -> None:
        self.db = db
        self.cluster = cluster or f"fold-{uuid.uuid4().hex[:12]}"
        self.source = HourSource()
        self.options = CollectOptions(self.cluster, AGGREGATION, 0, "team", "cost-center")

    def write(self, step: Write, source: HourSource | None = None) -> None:
        source = source or self.source
        source.answers[step.hour] = step.entries
        pricing = ActivePricing(None, step.currency, "test", None)
        ctx = HourContext(self.options, pricing, NOW, str(uuid.uuid4()), timedelta(hours=6), step.retry_lost)
        _write_hour(self.db, source, ctx, Hour(step.hour), step.finalize)

    def give_up(self, hour: datetime) -> None:
        self.db.fetch_all(
            "give_up_before",
            cluster=self.cluster,
            aggregation=AGGREGATION,
            start=hour,
            horizon=hour + timedelta(hours=1),
            reason="test",
        )

    def differences(self, day: date) -> list[dict[str, Any]]:
        """What ``finops verify`` would report for the day (empty: rollup and rows agree)."""
        return self.db.fetch_all(
            "verify_rollups",
            cluster=self.cluster,
            aggregation=AGGREGATION,
            first_day=day,
            end_day=day + timedelta(days=1),
        )

    def marked(self) -> set[date]:
        rows = self.db.fetch_all("marked_days", cluster=self.cluster, aggregation=AGGREGATION)
        return {r["day"] for r in rows}

    def rollup_rows(self) -> int:
        with self.db.connection() as conn:
            found = conn.execute("SELECT count(*) AS n FROM allocation_daily WHERE cluster = %s", (self.cluster,))
            row = found.fetchone()
        return int(row["n"]) if row else 0
