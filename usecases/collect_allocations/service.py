"""One ``collect_allocations`` run: copy OpenCost's allocations into PostgreSQL hour by hour.

The hour ledger (``allocation_hours``, ``finops.ledger``) is the authority: every hour is missing,
open, final or lost. The run's hour is pinned from its trigger and written open. Before it, the
run fetches every hour that is not settled (missing or open) from the ``HOURS_LOOKBACK`` hours
before the pinned one, or from the first hour the ledger knows of if that is earlier (so an outage
of any length is caught up), back to the horizon of ``OPENCOST_HISTORY_HOURS``; unsettled hours
beyond the horizon are given up as lost, with the reason. A history load (``collect_range``)
fetches every unsettled hour of a range, lost ones included.

Each hour is fetched, then replaced whole in its own transaction under a per-hour advisory lock,
together with its assets (``assets``: nodes, disks, load balancers), its ledger state and its fold
into its UTC day's rollup (``usecases.rollups``, which also says when a day is rebuilt instead): an
interrupted run keeps the hours it finished, overlapping runs serialise per hour, and a replay
writes identical rows. Replacing the hour (delete, then ``COPY``) has the effect of an upsert on
the natural key (the primary key) plus removal of rows OpenCost no longer reports, at the speed of
a plain ``COPY``. A final hour is never rewritten. An hour OpenCost answers with no allocations
keeps what it had and stays open until ``EMPTY_HOUR_GRACE_HOURS`` after it ended, then it is lost.

Every invocation (the hourly ping and a history load alike) is bounded by
``COLLECT_BUDGET_SECONDS``: no hour starts once it is spent (the first hour always does, so each
ping makes progress), and no OpenCost retry starts after it. An invocation therefore lasts at most
the budget plus one OpenCost attempt (twice ``OPENCOST_TIMEOUT_SECONDS`` in the worst case) and
the rollups. The hours not started are reported as ``remaining``; the ledger keeps them
unsettled, so the next ping continues with them.

With ``FLEET_BUCKET`` set, the run then writes the final hours not yet there to the fleet bucket
as Parquet, within the same budget (``usecases.collect_allocations.fleet``).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from finops.carbon import EmissionTable
from finops.errors import InvalidInput
from finops.gpu_hours import GpuOptions
from finops.hours import HOUR, Hour, pin_hour, truncate_to_hour
from finops.ledger import HourState, empty_answer, hours_to_collect, ranges, window_start
from finops.ledger import horizon as history_horizon
from finops.pricing import Setting
from infra.heap import relaxed_gc
from infra.kube import KubeClient
from infra.objectstore import ObjectStore
from infra.postgres import Database
from infra.postgres.copy_text import copy_lines
from usecases.collect_allocations.answers import Answer, ShardOptions, fetch_hour
from usecases.collect_allocations.assets import store_assets
from usecases.collect_allocations.carbon import store_emissions
from usecases.collect_allocations.fleet import FleetUploads, upload_final_hours
from usecases.collect_allocations.gpus import HourGpus
from usecases.collect_allocations.inventory import Inventory, fetch_inventory
from usecases.collect_allocations.pricing import ActivePricing, resolve_pricing
from usecases.collect_allocations.rows import COLUMNS, RowBuilder
from usecases.collect_allocations.sources import AllocationSource, PricedSource, Source
from usecases.rollups import fold_hour, rebuild_marked_days, unfold_hour

log = logging.getLogger(__name__)

Progress = Callable[[int, int, Hour], None]  # (hours done, hours planned, the hour just done)


@dataclass(frozen=True)
class CollectOptions:
    cluster: str
    aggregation: str
    hours_lookback: int
    owner_label: str
    cost_center_label: str
    insert_timeout_seconds: float | None = None  # a CostJob's databaseInsertTimeout, per hour written
    history_hours: int = 360  # how far back OpenCost still answers (its Prometheus retention)
    empty_grace_hours: int = 6  # an empty answer is retried this long after the hour ended
    budget_seconds: float = 240  # work one invocation does before answering
    source: Source = "opencost"  # recorded on every row and ledger entry
    shards: ShardOptions = field(default_factory=ShardOptions)  # OPENCOST_SHARD_*: huge hours in namespace batches
    pricing: Setting = field(
        default_factory=Setting
    )  # PRICING_SOURCE/PRICING_CURRENCY (when no FinOpsProvider decides)
    fleet: FleetBucket | None = None  # FLEET_BUCKET: final hours as Parquet files (usecases...fleet)
    gpus: GpuOptions = field(default_factory=GpuOptions)  # GPU_BASIS, GPU_MIG_BY: the GPU split
    carbon: EmissionTable | None = None  # CARBON_EMISSION_TABLE: the Prometheus source's emissions (carbon)


@dataclass(frozen=True)
class FleetBucket:
    prefix: str  # s3://bucket/prefix/ (or a local folder), ending in /
    endpoint_url: str | None = None  # an S3-compatible store
    timeout: float = 30.0  # seconds one upload attempt waits on the store


@dataclass
class CollectResult:
    """What a run did; ``warnings`` make the outcome ``partial``."""

    pinned_hour: Hour | None  # None for a history load
    hours_written: list[Hour] = field(default_factory=list)
    hours_skipped: list[Hour] = field(default_factory=list)
    hours_empty: list[Hour] = field(default_factory=list)  # answered empty, left open
    hours_lost: dict[datetime, str] = field(default_factory=dict)  # given up by this run, with the reason
    remaining: int = 0  # hours left for the next invocation (time budget spent)
    days_rolled_up: int = 0
    rows: int = 0
    pricebook: str | None = None
    pricebook_id: int | None = None
    fleet: FleetUploads | None = None  # None: no FLEET_BUCKET
    warnings: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return "partial" if self.warnings else "success"

    def counts(self) -> dict[str, Any]:
        return {
            "hour": None if self.pinned_hour is None else str(self.pinned_hour),
            "hours_written": len(self.hours_written),
            "hours_skipped": len(self.hours_skipped),
            "hours_empty": len(self.hours_empty),
            "hours_lost": len(self.hours_lost),
            "lost": ranges(self.hours_lost) or None,
            "remaining": self.remaining,
            "days_rolled_up": self.days_rolled_up,
            "rows_written": self.rows,
            "pricebook": self.pricebook,
        } | (
            {}
            if self.fleet is None
            else {"fleet_uploaded": len(self.fleet.uploaded), "fleet_pending": self.fleet.pending}
        )

    def finish(self, now: datetime) -> None:
        """Turn what needs attention into warnings (the outcome is then ``partial``). An hour still
        running that OpenCost has nothing for yet (a ping in its first minute) is retried by the
        next run like any empty hour, but needs no attention."""
        for reason in sorted(set(self.hours_lost.values())):
            lost = [hour for hour, why in self.hours_lost.items() if why == reason]
            self.warnings.append(f"{len(lost)} hour(s) lost ({ranges(lost)}): {reason}")
        if ended := [hour for hour in self.hours_empty if hour.end <= now]:
            self.warnings.append(
                f"{len(ended)} hour(s) answered empty by OpenCost, left open and retried: "
                f"{ranges([h.start for h in ended])}"
            )
        if self.remaining:
            self.warnings.append(f"time budget spent: {self.remaining} hour(s) remain for the next run")
        if self.fleet is not None and self.fleet.error:
            self.warnings.append(
                f"fleet bucket: {self.fleet.pending} final hour(s) not uploaded, retried next run: {self.fleet.error}"
            )


def collect(
    db: Database,
    source: AllocationSource,
    kube: KubeClient,
    options: CollectOptions,
    *,
    scheduled: datetime | None,
    now: datetime,
    run_id: str,
) -> CollectResult:
    """The hourly run: catch up every unsettled hour back to the horizon, then the pinned hour."""
    pinned = pin_hour(scheduled, now)
    result = CollectResult(pinned_hour=pinned)
    key: dict[str, Any] = {"cluster": options.cluster, "aggregation": options.aggregation}
    ledger_start = (db.fetch_one("ledger_start", **key) or {}).get("hour")
    horizon = history_horizon(pinned, options.history_hours)
    if ledger_start is not None and ledger_start < horizon:
        reason = f"older than OPENCOST_HISTORY_HOURS ({options.history_hours} h): OpenCost no longer has it"
        for row in db.fetch_all("give_up_before", **key, start=ledger_start, horizon=horizon, reason=reason):
            result.hours_lost[row["hour"]] = reason
    start = window_start(
        pinned, lookback=options.hours_lookback, history_hours=options.history_hours, ledger_start=ledger_start
    )
    ledger = {
        row["hour"]: HourState(row["state"])
        for row in db.fetch_all("ledger_hours", **key, start=start, end=pinned.start)
    }
    result.hours_skipped = sorted(Hour(hour) for hour, state in ledger.items() if state.settled)
    _collect_hours(db, source, kube, options, hours_to_collect(pinned, start, ledger), result, now, run_id)
    return result


def collect_range(
    db: Database,
    source: AllocationSource,
    kube: KubeClient,
    options: CollectOptions,
    *,
    start: datetime,
    end: datetime,
    now: datetime,
    run_id: str,
    progress: Progress | None = None,
) -> CollectResult:
    """A history load: every hour of ``[start, end)`` that is not final, lost ones included (a load
    is the explicit way to try them again), oldest first; hours still running are written open.
    Resumable and idempotent: final hours are skipped, so calling it again continues."""
    first, current = truncate_to_hour(start), truncate_to_hour(now)
    if end <= first:
        raise InvalidInput(f"to: {end.isoformat()} is not after from: {start.isoformat()}")
    if end > current + HOUR:
        raise InvalidInput(f"to: {end.isoformat()} is in the future (the current hour ends {current + HOUR:%H:%M}Z)")
    key: dict[str, Any] = {"cluster": options.cluster, "aggregation": options.aggregation}
    ledger = {row["hour"]: HourState(row["state"]) for row in db.fetch_all("ledger_hours", **key, start=first, end=end)}
    todo: list[tuple[Hour, bool]] = []
    result = CollectResult(pinned_hour=None)
    hour = first
    while hour < end:
        if ledger.get(hour) is HourState.FINAL:
            result.hours_skipped.append(Hour(hour))
        else:
            todo.append((Hour(hour), hour < current))
        hour += HOUR
    _collect_hours(db, source, kube, options, todo, result, now, run_id, retry_lost=True, progress=progress)
    return result


def _collect_hours(
    db: Database,
    source: AllocationSource,
    kube: KubeClient,
    options: CollectOptions,
    todo: list[tuple[Hour, bool]],
    result: CollectResult,
    now: datetime,
    run_id: str,
    *,
    retry_lost: bool = False,
    progress: Progress | None = None,
) -> None:
    """Write ``todo`` within the time budget, then rebuild every marked day, even after a failure."""
    pricing = resolve_pricing(db, kube, options.cluster, options.pricing, options.source)
    result.pricebook, result.pricebook_id = pricing.label, pricing.pricebook_id
    if isinstance(source, PricedSource):
        source = source.priced(pricing.rates)
    if pricing.warning:
        result.warnings.append(pricing.warning)
    deadline = time.monotonic() + options.budget_seconds
    grace = timedelta(hours=options.empty_grace_hours)
    ctx = HourContext(options, pricing, now, run_id, grace, retry_lost, retry_until=deadline)
    try:
        for done, (hour, finalize) in enumerate(todo):
            if done and time.monotonic() >= deadline:
                result.remaining = len(todo) - done
                break
            written = _write_hour(db, source, ctx, hour, finalize)
            if written is None:
                result.hours_skipped.append(hour)
            elif written.state is HourState.LOST:
                result.hours_lost[hour.start] = written.reason or "lost"
            elif written.empty:
                result.hours_empty.append(hour)
            else:
                result.hours_written.append(hour)
                result.rows += written.rows
            if progress is not None:
                progress(done + 1, len(todo), hour)
    finally:
        # Rebuilt whatever happened above: a day whose hours were written never waits for a
        # successful run to reach the reports. The fleet bucket likewise gets the final hours
        # committed before a failure (after their transactions: only committed hours).
        result.days_rolled_up = rebuild_marked_days(db, options.cluster, options.aggregation)
        if options.fleet is not None:
            store = ObjectStore(endpoint_url=options.fleet.endpoint_url, timeout=options.fleet.timeout)
            result.fleet = upload_final_hours(
                db, store, options.fleet.prefix, options.cluster, options.aggregation, deadline=deadline
            )
    result.finish(now)


@dataclass(frozen=True)
class Written:
    state: HourState
    rows: int = 0
    empty: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class HourContext:
    """What every hour of one run is written with."""

    options: CollectOptions
    pricing: ActivePricing
    now: datetime
    run_id: str
    grace: timedelta  # an empty answer is retried this long after the hour ended
    retry_lost: bool  # a history load tries lost hours again
    retry_until: float | None = None  # no OpenCost retry starts after this (the run's time budget)


def _write_hour(db: Database, source: AllocationSource, ctx: HourContext, hour: Hour, finalize: bool) -> Written | None:
    """Replace one hour's rows and ledger state; None when it is settled (another run finalized
    it meanwhile, or it is lost and this is not a history load). No OpenCost retry starts after
    ``ctx.retry_until`` (the run's time budget)."""
    # Fetched outside the transaction (``answers``, ``assets``): no lock is held while OpenCost answers.
    answer = fetch_hour(source, hour, ctx.options.aggregation, ctx.options.shards, retry_until=ctx.retry_until)
    try:
        inventory = fetch_inventory(source, hour, ctx.options.carbon, retry_until=ctx.retry_until)
        return _store_hour(db, answer, inventory, ctx, hour, finalize)
    finally:
        answer.close()


def _store_hour(
    db: Database, answer: Answer, inventory: Inventory, ctx: HourContext, hour: Hour, finalize: bool
) -> Written | None:
    """``_write_hour``'s transaction: the answer is read (parsed) only here, as COPY consumes it."""
    key = {"cluster": ctx.options.cluster, "aggregation": ctx.options.aggregation, "hour": hour.start}
    # A new month's partition in its own short transaction: creating it locks the parent table
    # until commit, which must not be held while waiting for the day's lock below.
    db.execute("ensure_allocation_partition", hour=hour.start)
    with db.connection() as conn:
        if ctx.options.insert_timeout_seconds:
            db.execute("set_statement_timeout", conn, milliseconds=int(ctx.options.insert_timeout_seconds * 1000))
        db.execute("lock_allocation_hour", conn, **key)
        before = db.fetch_one("hour_state", conn, **key)
        state = HourState(before["state"]) if before else HourState.MISSING
        if state is HourState.FINAL or (state is HourState.LOST and not ctx.retry_lost):
            return None
        entries = answer.entries()
        first = next(entries, None)
        if first is None:
            empty_state, reason = empty_answer(hour, finalize=finalize, now=ctx.now, grace=ctx.grace)
            if state is HourState.LOST:  # a retried lost hour stays lost
                empty_state = HourState.LOST
            db.execute(
                "record_empty_hour",
                conn,
                **key,
                state=empty_state,
                reason=reason,
                empty_since=ctx.now,
                run_id=ctx.run_id,
                source=ctx.options.source,
            )
            log.info("hour answered empty", extra={"fields": {"hour": str(hour), "state": empty_state.value}})
            return Written(empty_state, empty=True, reason=reason)
        folding = unfold_hour(db, conn, key, ctx.pricing.currency)  # the day's rollup loses the old rows
        if state is not HourState.MISSING:
            db.execute("delete_allocation_hour", conn, **key)
        builder = RowBuilder(
            cluster=ctx.options.cluster,
            aggregation=ctx.options.aggregation,
            hour=hour.start,
            finalized=finalize,
            pricebook_id=ctx.pricing.pricebook_id,
            currency=ctx.pricing.currency,
            owner_label_key=ctx.options.owner_label,
            cost_center_label_key=ctx.options.cost_center_label,
            collected_at=ctx.now,
            source=ctx.options.source,
        )
        gpus = HourGpus(
            ctx.options.gpus,
            hour=hour.start,
            assets=inventory.assets,
            devices=inventory.devices,
            figures=inventory.figures,
            rates=ctx.pricing.rates,
            priced=ctx.pricing.currency is not None,
        )
        with relaxed_gc():  # COPY's text, not per-value adaptation; the GPU rows split at the stream's end
            lines = builder.lines(itertools.chain([first], entries), hold=gpus.holds, then=gpus.rewrite)
            count = copy_lines(conn, "provider_allocations", COLUMNS, lines)
        late = builder.late_owners()
        if late:  # rows streamed before their namespace's labels arrived
            teams, centers = zip(*late.values(), strict=True)
            db.execute(
                "fill_hour_owners", conn, **key, namespaces=list(late), teams=list(teams), cost_centers=list(centers)
            )
        tail = {
            "pricebook_id": ctx.pricing.pricebook_id,
            "currency": ctx.pricing.currency,
            "finalized": finalize,
            "collected_at": ctx.now,
            "source": ctx.options.source,
        }
        count += gpus.write_idle(db, conn, key, tail)  # one row per GPU model, when the hour was split
        written = HourState.FINAL if finalize else HourState.OPEN
        db.execute(
            "record_allocation_hour",
            conn,
            **key,
            state=written,
            row_count=count,
            pricebook_id=ctx.pricing.pricebook_id,
            currency=ctx.pricing.currency,
            run_id=ctx.run_id,
            reason=None,
            empty_since=None,
            source=ctx.options.source,
        )
        db.execute("record_hour_gpus", conn, **key, **gpus.ledger)
        store_assets(db, conn, key, inventory.assets)
        store_emissions(db, conn, key, inventory.assets, inventory.emissions)  # grams CO2e, split as cost (carbon)
        fold_hour(db, conn, key, folding)  # and gains the new ones (or the day is marked)
    log.info("hour stored", extra={"fields": {"hour": str(hour), "rows": count, "state": written.value}})
    return Written(written, rows=count)
