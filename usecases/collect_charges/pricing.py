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
from finops.sources import matches, namespaces
from finops.subscriptions import meta, ref_of
from finops.usage import ActiveInterval, Margin, Meter, UsageRow, parse_margin, usage_charge
from infra.postgres import Database
from usecases.collect_charges.usage_rows import Usage, UsageBoundary, read_usage, usage_row

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
FEE = "fee"


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
            by_hour.setdefault(row["hour"], []).append(usage_row(row))
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
