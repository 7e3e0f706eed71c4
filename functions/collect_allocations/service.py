"""One ``collect_allocations`` run: copy OpenCost's allocations into PostgreSQL hour by hour.

The run's hour is pinned from its trigger. The ``HOURS_LOOKBACK`` hours before it are written
finalized (hours already final are skipped), then the pinned hour itself is written unfinalized.
Each hour is fetched, then replaced whole in its own transaction under a per-hour advisory lock:
an interrupted run keeps the hours it finished, overlapping runs serialise per hour, and a replay
writes identical rows. Replacing the hour (delete, then ``COPY``) has the effect of an upsert on
the natural key (cluster, aggregation, hour, namespace, name; the primary key, so nothing can
duplicate even outside the lock) plus removal of rows OpenCost no longer reports, at the speed
of a plain ``COPY``. A finalized hour is never rewritten.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from finops.errors import OpenCostUnavailable
from finops.hours import Hour, lookback, pin_hour
from functions.collect_allocations.pricing import ActivePricing, KubeReader, resolve_pricebook
from functions.collect_allocations.rows import COLUMNS, RowBuilder
from infra.heap import paused_gc
from infra.opencost import OpenCostClient
from infra.postgres import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CollectOptions:
    cluster: str
    aggregation: str
    hours_lookback: int
    owner_label: str
    cost_center_label: str
    retention_months: int = 0
    insert_timeout_seconds: float | None = None  # a CostJob's databaseInsertTimeout, per hour written


@dataclass
class CollectResult:
    """What a run did; ``warnings`` make the outcome ``partial``."""

    pinned_hour: Hour
    hours_written: list[Hour] = field(default_factory=list)
    hours_skipped: list[Hour] = field(default_factory=list)
    rows: int = 0
    pricebook: str | None = None
    pricebook_id: int | None = None
    partitions_dropped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return "partial" if self.warnings else "success"

    def counts(self) -> dict[str, Any]:
        return {
            "hour": str(self.pinned_hour),
            "hours_written": len(self.hours_written),
            "hours_skipped": len(self.hours_skipped),
            "rows_written": self.rows,
            "pricebook": self.pricebook,
            "partitions_dropped": len(self.partitions_dropped),
        }


def collect(
    db: Database,
    opencost: OpenCostClient,
    kube: KubeReader,
    options: CollectOptions,
    *,
    scheduled: datetime | None,
    now: datetime,
    run_id: str,
) -> CollectResult:
    pinned = pin_hour(scheduled, now)
    result = CollectResult(pinned_hour=pinned)
    pricing = resolve_pricebook(db, kube, options.cluster)
    result.pricebook, result.pricebook_id = pricing.label, pricing.pricebook_id
    if pricing.warning:
        result.warnings.append(pricing.warning)

    earlier = lookback(pinned, options.hours_lookback)
    final = set()
    if earlier:
        final = {
            row["hour"]
            for row in db.fetch_all(
                "finalized_hours",
                cluster=options.cluster,
                aggregation=options.aggregation,
                start=earlier[0].start,
                end=pinned.end,
            )
        }
    for hour in [*earlier, pinned]:
        finalized = hour != pinned
        if hour.start in final:
            result.hours_skipped.append(hour)
            continue
        written = _write_hour(db, opencost, options, pricing, hour, finalized=finalized, now=now, run_id=run_id)
        if written is None:
            result.hours_skipped.append(hour)
        else:
            result.hours_written.append(hour)
            result.rows += written
    days = sorted({hour.start.date() for hour in result.hours_written})
    for day in days:
        refresh_daily(db, options.cluster, options.aggregation, day)
    if options.retention_months:
        result.partitions_dropped = drop_expired_partitions(db, options.retention_months, now)
    return result


def refresh_daily(db: Database, cluster: str, aggregation: str, day: date) -> None:
    """Recompute one day's rollup from its hours, in one transaction under the day's lock."""
    key = {"cluster": cluster, "aggregation": aggregation, "day": day}
    with db.connection() as conn:
        db.execute("lock_allocation_day", conn, **key)
        db.execute("delete_allocation_day", conn, **key)
        db.execute("rollup_allocation_day", conn, **key)


def drop_expired_partitions(db: Database, months: int, now: datetime) -> list[str]:
    """Drop the monthly partitions that ended more than ``months`` whole months before ``now``'s."""
    month = now.year * 12 + now.month - 1 - months
    cutoff = datetime(month // 12, month % 12 + 1, 1, tzinfo=UTC)
    dropped = [row["partition"] for row in db.fetch_all("drop_allocation_partitions", cutoff=cutoff)]
    if dropped:
        log.info("retention dropped partitions", extra={"fields": {"partitions": dropped}})
    return dropped


def _write_hour(
    db: Database,
    opencost: OpenCostClient,
    options: CollectOptions,
    pricing: ActivePricing,
    hour: Hour,
    *,
    finalized: bool,
    now: datetime,
    run_id: str,
) -> int | None:
    """Replace one hour's rows; None when another run finalized it meanwhile."""
    # Fetch outside the transaction: no lock is held while OpenCost answers.
    sets = opencost.allocation(hour.start, hour.end, aggregate=options.aggregation, accumulate=True, include_idle=True)
    if len(sets) > 1:
        raise OpenCostUnavailable(f"OpenCost answered {len(sets)} sets for one accumulated hour ({hour})")
    step_set = sets[0] if sets else {}
    builder = RowBuilder(
        cluster=options.cluster,
        aggregation=options.aggregation,
        hour=hour.start,
        finalized=finalized,
        pricebook_id=pricing.pricebook_id,
        currency=pricing.currency,
        owner_label_key=options.owner_label,
        cost_center_label_key=options.cost_center_label,
        collected_at=now,
    )
    key = {"cluster": options.cluster, "aggregation": options.aggregation, "hour": hour.start}
    with db.connection() as conn:
        if options.insert_timeout_seconds:
            db.execute("set_statement_timeout", conn, milliseconds=int(options.insert_timeout_seconds * 1000))
        db.execute("lock_allocation_hour", conn, **key)
        state = db.fetch_one("hour_is_finalized", conn, **key)
        if state is not None and state["is_finalized"]:
            return None
        db.execute("ensure_allocation_partition", conn, hour=hour.start)
        if state is not None:  # written before, unfinalized: replace it
            db.execute("delete_allocation_hour", conn, **key)
        with paused_gc():
            count = db.copy_rows(conn, "provider_allocations", COLUMNS, builder.rows(step_set))
        db.execute(
            "record_allocation_hour",
            conn,
            **key,
            is_finalized=finalized,
            row_count=count,
            pricebook_id=pricing.pricebook_id,
            run_id=run_id,
        )
    log.info(
        "hour stored",
        extra={"fields": {"hour": str(hour), "rows": count, "finalized": finalized}},
    )
    return count
