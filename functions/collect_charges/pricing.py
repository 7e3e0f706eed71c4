"""Pricing Subscriptions into charge rows, in bounded batches.

Each activated Subscription gets a :class:`Plan`: per source (the fee, each meter), the next hour
to price (after the source's watermark, the last final charge hour, else the activation hour) and
the end (the pinned hour's end, or the deactivation's). :func:`price_plans` then prices the plans
in batches: a batch takes the next chunk of at most ``chunk_hours`` hours of each source of
Subscriptions in turn until it holds about ``batch_rows`` rows, reads the allocation rows of those
chunks only, writes its rows in one transaction (the watermarks advance with them, see migration
010) and commits. A Subscription with months of backlog is priced chunk after chunk, interleaved
with the others, so a run's memory is bounded by one batch whatever the backlog, and a run that
reaches its time budget stops between batches: the next run continues from the watermarks.

Fee hours before the pinned hour are final. Usage hours are final only before the *allocation
boundary* (:class:`UsageBoundary`): the first hour at or after the source's first hour this run
that the hour ledger does not hold as settled, so late allocation data is priced when it is final
and an hour never collected is never charged as zero. Finalized rows are never rewritten.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.errors import FinOpsError
from finops.fees import FeeSchedule, parse_fee
from finops.hours import HOUR, Hour, parse_timestamp, truncate_to_hour
from finops.ledger import first_unsettled
from finops.sources import matches, namespaces
from finops.subscriptions import meta, ref_of
from finops.usage import ActiveInterval, Margin, Meter, UsageRow, parse_margin, usage_charge
from infra.postgres import Database

log = logging.getLogger(__name__)

COLUMNS = (
    "cluster",
    "subscription_uid",
    "hour",
    "source",
    "namespace",
    "name",
    "offering_version_id",
    "subscription_version_id",
    "unit_price_micros",
    "quantity",
    "amount_micros",
    "currency",
    "is_finalized",
    "computed_at",
    "unpriced_rows",
)
RATE_COLUMNS = {  # spec.rates key -> its exact pricebooks column (numeric, currency units)
    "cpuHour": "cpu_hour",
    "ramGbHour": "ram_gb_hour",
    "pvGbHour": "pv_gb_hour",
    "gpuHour": "gpu_hour",
    "networkGiB": "network_gib",
}
FEE = "fee"


class UsageBoundary:
    """Where a source's usage stops being final: ``boundary(start)`` is the first hour at or after
    ``start`` that the hour ledger does not hold as settled (``finops.ledger.first_unsettled``),
    never after the pinned hour. Settled hours are read once per run, further back only on demand,
    and always *before* the usage rows of those hours are read: an hour a concurrent run settles
    in between then counts as not settled (its charge stays open and is priced again next run),
    never as settled with the rows read before it was."""

    def __init__(self, db: Database, cluster: str, aggregation: str, pinned: Hour) -> None:
        self.db, self.end = db, pinned.start
        self.key: dict[str, Any] = {"cluster": cluster, "aggregation": aggregation}
        self.ledger_start: datetime | None = (db.fetch_one("ledger_start", **self.key) or {}).get("hour")
        self.read_from = self.end
        self.settled: set[datetime] = set()

    def __call__(self, start: datetime) -> datetime:
        if start < self.read_from:
            rows = self.db.fetch_all("settled_hours", **self.key, start=start, end=self.read_from)
            self.settled.update(row["hour"] for row in rows)
            self.read_from = start
        return first_unsettled(start, self.end, self.settled, self.ledger_start)


@dataclass
class Plan:
    """One Subscription's pricing this run: per source, the next hour to price, up to ``end``."""

    key: str  # namespace/name, for messages
    uid: str
    namespace: str
    name: str
    versions: tuple[int, int]  # (offering version id, subscription version id)
    schedule: FeeSchedule | None
    margins: dict[Meter, Margin]
    sources: list[Mapping[str, Any]]  # spec.usageSources
    active: ActiveInterval
    pinned: Hour
    end: datetime  # exclusive: the pinned hour's end, or the hour after the last one charged
    cursor: dict[str, datetime]  # source -> next hour to price
    until: dict[str, datetime] = field(default_factory=dict)  # meter -> first hour not final
    unpriced_rows: int = 0
    error: str | None = None

    @property
    def meters(self) -> list[str]:
        return [meter.value for meter in self.margins]

    @property
    def done(self) -> bool:
        return self.error is not None or all(hour >= self.end for hour in self.cursor.values())

    def settle(self, boundary: UsageBoundary) -> None:
        """Where each meter's usage stops being final this run (read before any of its usage rows)."""
        for meter in self.margins:
            start = self.cursor[meter.value]
            self.until[meter.value] = boundary(start) if start < self.end else self.pinned.start

    def take(self, hours: int) -> dict[str, tuple[datetime, datetime]]:
        """The next chunk (at most ``hours`` hours of each unfinished source); the cursors move past it."""
        chunk = {}
        for source, start in self.cursor.items():
            if start < self.end:
                chunk[source] = (start, min(start + hours * HOUR, self.end))
                self.cursor[source] = chunk[source][1]
        return chunk


def plan_subscription(
    sub: Mapping[str, Any],
    offering: Mapping[str, Any],
    versions: tuple[int, int],
    pinned: Hour,
    watermarks: Mapping[str, datetime],
) -> Plan:
    """The Plan of an activated Subscription (``InvalidInput`` naming the field when it cannot be);
    ``Plan.settle`` then says where its usage is final."""
    namespace, name = ref_of(sub)
    status = sub.get("status") or {}
    activated = parse_timestamp(status["activatedAt"], field="status.activatedAt")
    deactivated = (
        parse_timestamp(status["deactivatedAt"], field="status.deactivatedAt") if status.get("deactivatedAt") else None
    )
    pricing = (offering.get("spec") or {}).get("pricing") or {}
    schedule = (
        FeeSchedule(parse_fee(pricing["subscriptionFee"]), activated, deactivated)
        if pricing.get("subscriptionFee")
        else None
    )
    sources = list((sub.get("spec") or {}).get("usageSources") or [])
    margins = {
        Meter(item["name"]): parse_margin(item.get("margins"), field=f"resourcePricing[{i}].margins")
        for i, item in enumerate(pricing.get("resourcePricing") or [])
        if item.get("name") != "subscription" and sources
    }
    end = pinned.end
    if deactivated is not None:
        stop = schedule.snapped_end if schedule is not None and schedule.snapped_end else deactivated
        end = min(end, truncate_to_hour(stop - timedelta(microseconds=1)) + HOUR)
    first = truncate_to_hour(activated)
    names = ([FEE] if schedule is not None else []) + [meter.value for meter in margins]
    cursor = {source: watermarks[source] + HOUR if source in watermarks else first for source in names}
    return Plan(
        key=f"{namespace}/{name}",
        uid=str(meta(sub).get("uid", "")),
        namespace=namespace,
        name=name,
        versions=versions,
        schedule=schedule,
        margins=margins,
        sources=sources,
        active=ActiveInterval(activated, deactivated),
        pinned=pinned,
        end=end,
        cursor=cursor,
    )


def _usage_row(row: Mapping[str, Any]) -> UsageRow:
    start = row["data_start"] or row["hour"]
    end = row["data_end"] or row["hour"] + HOUR
    rates = None if row["pricebook_id"] is None else {field: row[col] for field, col in RATE_COLUMNS.items()}
    return UsageRow(
        start=start,
        end=end,
        cpu_core_usage_avg=row["cpu_core_usage_avg"],
        gpu_usage_avg=None,
        ram_byte_usage_avg=row["ram_byte_usage_avg"],
        pv_byte_hours=row["pv_byte_hours"],
        network_transfer_bytes=row["network_transfer_bytes"],
        network_receive_bytes=row["network_receive_bytes"],
        rates=rates,
        key=f"{row['namespace']}/{row['pod']}",
    )


Chunk = dict[str, tuple[datetime, datetime]]  # source -> [start, end)


def _usage_span(chunk: Chunk) -> tuple[datetime, datetime] | None:
    spans = [span for source, span in chunk.items() if source != FEE]
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None


def usage_windows(work: Iterable[tuple[Plan, Chunk]]) -> dict[str, list[tuple[datetime, datetime]]]:
    """Per namespace, the disjoint hour ranges the chunks' meters read (overlaps merged, so a row
    shared by several Subscriptions is read once)."""
    wanted: dict[str, list[tuple[datetime, datetime]]] = {}
    for plan, chunk in work:
        span = _usage_span(chunk)
        if span is not None:
            for namespace in namespaces(plan.sources, plan.namespace):
                wanted.setdefault(namespace, []).append(span)
    merged: dict[str, list[tuple[datetime, datetime]]] = {}
    for namespace, spans in wanted.items():
        out: list[tuple[datetime, datetime]] = []
        for start, end in sorted(spans):
            if out and start <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
        merged[namespace] = out
    return merged


class Usage:
    """A batch's allocation rows, indexed by namespace, by controller and by pod, so each
    Subscription looks only at the rows its ``usageSources`` can name (not at every row of its
    namespace: many Subscriptions share one)."""

    def __init__(self, rows: Iterable[Mapping[str, Any]] = ()) -> None:
        self.by_namespace: dict[str, list[Mapping[str, Any]]] = {}
        self.by_controller: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        self.by_pod: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for row in rows:
            namespace = row["namespace"]
            self.by_namespace.setdefault(namespace, []).append(row)
            self.by_controller.setdefault((namespace, row["controller"]), []).append(row)
            self.by_pod.setdefault((namespace, row["pod"]), []).append(row)

    def candidates(self, sources: list[Mapping[str, Any]], default: str) -> list[Mapping[str, Any]]:
        """Every row some entry of ``sources`` may match (each once); ``matches`` decides."""
        found: dict[int, Mapping[str, Any]] = {}
        for source in sources:
            namespace, name = str(source.get("namespace") or default), source.get("name")
            if name is None:
                pool = self.by_namespace.get(namespace, [])
            elif source.get("resourceType") == "Pod":
                pool = self.by_pod.get((namespace, name), [])
            else:
                pool = self.by_controller.get((namespace, name), [])
            found.update((id(row), row) for row in pool)
        return list(found.values())


def read_usage(
    db: Database, cluster: str, aggregation: str, windows: Mapping[str, list[tuple[datetime, datetime]]]
) -> Usage:
    """The allocation rows of ``windows`` (one query)."""
    flat = [(namespace, start, end) for namespace, spans in windows.items() for start, end in spans]
    if not flat:
        return Usage()
    return Usage(
        db.fetch_all(
            "usage_rows",
            cluster=cluster,
            aggregation=aggregation,
            namespaces=[w[0] for w in flat],
            starts=[w[1] for w in flat],
            ends=[w[2] for w in flat],
        )
    )


def price_chunk(plan: Plan, chunk: Chunk, usage: Usage, cluster: str, now: datetime) -> list[tuple[Any, ...]]:
    """The charge rows of one chunk of one Plan (one per hour and source)."""
    rows: list[tuple[Any, ...]] = []
    offering_version, subscription_version = plan.versions
    pinned = plan.pinned.start

    def add(
        hour: datetime,
        source: str,
        unit: int | Decimal | None,
        quantity: Decimal,
        amount: int,
        final: bool,
        unpriced: int = 0,
    ) -> None:
        rows.append(
            (
                cluster,
                plan.uid,
                hour,
                source,
                plan.namespace,
                plan.name,
                offering_version,
                subscription_version,
                unit,
                quantity,
                amount,
                None,
                final,
                now,
                unpriced,
            )
        )

    if FEE in chunk and plan.schedule is not None:
        hour, end = chunk[FEE]
        while hour < end:
            add(
                hour,
                FEE,
                plan.schedule.fee.price_micros,
                Decimal(0),
                plan.schedule.amount(hour, hour + HOUR),
                hour < pinned,
            )
            hour += HOUR
    span = _usage_span(chunk)
    if span is None:
        return rows
    by_hour: dict[datetime, list[UsageRow]] = {}
    for row in usage.candidates(plan.sources, plan.namespace):
        if span[0] <= row["hour"] < span[1] and matches(row, plan.sources, plan.namespace):
            by_hour.setdefault(row["hour"], []).append(_usage_row(row))
    for meter, margin in plan.margins.items():
        if meter.value not in chunk:
            continue
        hour, end = chunk[meter.value]
        until = plan.until[meter.value]
        while hour < end:
            charge = usage_charge(meter, by_hour.get(hour, []), margin, plan.active)
            add(
                hour,
                meter.value,
                charge.unit_price_micros,
                charge.quantity,
                charge.amount_micros,
                hour < pinned and hour < until,
                charge.rows_dropped,
            )
            plan.unpriced_rows += charge.rows_dropped
            hour += HOUR
    return rows


@dataclass
class PricingRun:
    rows: int = 0
    batches: int = 0
    remaining: list[Plan] = field(default_factory=list)  # not priced through their end (time budget)


def price_plans(
    db: Database,
    cluster: str,
    aggregation: str,
    plans: Iterable[Plan],
    *,
    now: datetime,
    chunk_hours: int,
    batch_rows: int,
    budget_seconds: float | None = None,
) -> PricingRun:
    """Price ``plans`` batch by batch, each batch in its own transaction; stop between batches when
    another batch as long as the last one would end past ``budget_seconds`` (at least one batch is
    always written, so every run progresses)."""
    started = time.monotonic()
    batch_started = started
    run = PricingRun()
    queue = deque(plan for plan in plans if not plan.done)
    while queue:
        work: list[tuple[Plan, Chunk]] = []
        size = 0
        while queue and size < batch_rows:
            plan = queue.popleft()
            if plan.done:  # failed in an earlier batch
                continue
            chunk = plan.take(chunk_hours)
            work.append((plan, chunk))
            size += sum((end - start) // HOUR for start, end in chunk.values())
            if not plan.done:
                queue.append(plan)
        usage = read_usage(db, cluster, aggregation, usage_windows(work))
        priced: dict[int, list[tuple[Any, ...]]] = {}
        for plan, chunk in work:
            if plan.error is not None:
                continue
            try:
                priced.setdefault(id(plan), []).extend(price_chunk(plan, chunk, usage, cluster, now))
            except (FinOpsError, ValueError) as exc:  # this Subscription waits; the others go on
                plan.error = exc.message if isinstance(exc, FinOpsError) else f"{type(exc).__name__}: {exc}"
        failed = {id(plan) for plan, _ in work if plan.error is not None}
        rows = [row for key, found in priced.items() if key not in failed for row in found]
        with db.connection() as conn:
            db.execute("create_charge_staging", conn)
            db.copy_rows(conn, "charge_staging", COLUMNS, rows)
            db.execute("merge_charge_staging", conn)
        run.rows += len(rows)
        run.batches += 1
        now_at = time.monotonic()
        last_batch, batch_started = now_at - batch_started, now_at
        if queue and budget_seconds is not None and now_at - started + last_batch >= budget_seconds:
            run.remaining = [plan for plan in queue if not plan.done]
            break
    return run
