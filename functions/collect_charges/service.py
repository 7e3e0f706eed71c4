"""One ``collect_charges`` run: reconcile, then price every activated Subscription hour by hour.

From each Subscription's watermark (per source: the fee, each meter) to the pinned hour, one row
per hour and source goes to ``subscription_charges``. Fee hours before the pinned hour are final;
usage hours are final only before the *allocation boundary*: the first hour at or after the
source's watermark that the hour ledger does not hold as settled (final or lost; a missing hour
counts as not settled, see ``finops.ledger``), so late allocation data is priced when it is final
and an hour that was never collected is never charged as zero; the pinned hour is
rewritten open on every run. Finalized rows are never recomputed, so a PriceBook change reprices
only open hours. All rows of a run are written in one transaction: a run killed midway writes
nothing, and its rerun writes what an uninterrupted run would have.

Then ``status.costs`` (hour, day and month buckets: ``current`` from the charge rows, ``projected``
with the fee over the bucket plus the usage run-rate, for usage-only Offerings too) and the
finalizer release of settled, deleted Subscriptions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.errors import FinOpsError, InvalidInput
from finops.fees import FeeSchedule, parse_fee
from finops.hours import HOUR, Hour, parse_timestamp, pin_hour, truncate_to_hour
from finops.ledger import first_unsettled
from finops.sources import matches, namespaces
from finops.subscriptions import meta, ref_of, reference
from finops.usage import ActiveInterval, Meter, UsageRow, parse_margin, usage_charge
from functions.collect_charges.status import release_finalizer, write_costs
from functions.reconcile.service import Kube, MtoTarget, OpenCostTarget, reconcile_all
from infra.postgres import Database

log = logging.getLogger(__name__)

COLUMNS = (
    "cluster", "subscription_uid", "hour", "source", "namespace", "name", "offering_version_id",
    "subscription_version_id", "unit_price_micros", "quantity", "amount_micros", "currency", "is_finalized",
    "computed_at", "unpriced_rows",
)  # fmt: skip
RATE_COLUMNS = {  # spec.rates key -> its exact pricebooks column (numeric, currency units)
    "cpuHour": "cpu_hour",
    "ramGbHour": "ram_gb_hour",
    "pvGbHour": "pv_gb_hour",
    "gpuHour": "gpu_hour",
    "networkGiB": "network_gib",
}


@dataclass
class ChargesResult:
    pinned_hour: Hour
    subscriptions: int = 0
    rows: int = 0
    finalizers_released: int = 0
    unpriced_rows: int = 0  # usage rows in range that had no rate for their meter (not charged)
    errors: dict[str, str] = field(default_factory=dict)
    reconcile: dict[str, Any] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        return "partial" if self.problems() else "success"

    def problems(self) -> list[str]:
        """What needs the operator: Subscriptions not priced, usage that could not be charged."""
        found = [f"{key}: {error}" for key, error in self.errors.items()]
        if self.unpriced_rows:
            found.append(f"{self.unpriced_rows} usage row(s) had no PriceBook rate and were not charged")
        return found

    def counts(self) -> dict[str, Any]:
        return {
            "hour": str(self.pinned_hour),
            "subscriptions_priced": self.subscriptions,
            "rows_written": self.rows,
            "finalizers_released": self.finalizers_released,
            "usage_rows_unpriced": self.unpriced_rows,
            "errors": len(self.errors),
            **self.reconcile,
        }


@dataclass
class Prefetched:
    """What pricing reads, fetched once per run instead of once per Subscription."""

    watermarks: dict[str, dict[str, datetime]] = field(default_factory=dict)  # uid -> source -> last final hour
    usage: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)  # namespace -> allocation rows
    start: datetime | None = None  # the usage rows cover [start, pinned end)
    namespaces: set[str] = field(default_factory=set)


def prefetch(
    db: Database,
    cluster: str,
    aggregation: str,
    subscriptions: Sequence[Mapping[str, Any]],
    pinned: Hour,
    boundary: UsageBoundary | None = None,
) -> Prefetched:
    found = Prefetched()
    for row in db.fetch_all("all_charge_watermarks", cluster=cluster):
        found.watermarks.setdefault(row["uid"], {})[row["source"]] = row["hour"]
    wanted: set[str] = set()
    earliest = pinned.start
    for sub in subscriptions:
        sources = (sub.get("spec") or {}).get("usageSources") or []
        activated = (sub.get("status") or {}).get("activatedAt")
        if not sources or not activated:
            continue
        wanted.update(namespaces(sources, ref_of(sub)[0]))
        marks = {k: v for k, v in found.watermarks.get(str(meta(sub).get("uid", "")), {}).items() if k != "fee"}
        try:
            first = truncate_to_hour(parse_timestamp(activated, field="status.activatedAt"))
        except InvalidInput:
            continue  # reported when this Subscription is priced
        earliest = min(earliest, min(marks.values()) + HOUR if marks else first)
    found.start, found.namespaces = earliest, wanted
    if boundary is not None:
        boundary(earliest)  # which hours are settled, read before their rows (see UsageBoundary)
    if wanted:
        rows = db.fetch_all("usage_rows", cluster=cluster, aggregation=aggregation, start=earliest, end=pinned.end,
                            namespaces=sorted(wanted))  # fmt: skip
        for row in rows:
            found.usage.setdefault(row["namespace"], []).append(row)
    return found


@dataclass
class Priced:
    rows: list[tuple[Any, ...]]
    schedule: FeeSchedule | None
    meters: list[str]
    unpriced_rows: int = 0


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


def _usage_row(row: Mapping[str, Any]) -> UsageRow:
    start = row["data_start"] or row["hour"]
    end = row["data_end"] or row["hour"] + HOUR
    rates = None if row["pricebook_id"] is None else {field: row[col] for field, col in RATE_COLUMNS.items()}
    return UsageRow(
        start=start, end=end, cpu_core_usage_avg=row["cpu_core_usage_avg"], gpu_usage_avg=None,
        ram_byte_usage_avg=row["ram_byte_usage_avg"], pv_byte_hours=row["pv_byte_hours"],
        network_transfer_bytes=row["network_transfer_bytes"], network_receive_bytes=row["network_receive_bytes"],
        rates=rates, key=f"{row['namespace']}/{row['pod']}",
    )  # fmt: skip


def price_subscription(
    db: Database,
    cluster: str,
    aggregation: str,
    sub: Mapping[str, Any],
    offering: Mapping[str, Any],
    versions: tuple[int, int],
    pinned: Hour,
    boundary: Callable[[datetime], datetime],
    now: datetime,
    data: Prefetched,
) -> Priced:
    """The rows one Subscription needs this run (hours after each source's watermark)."""
    uid = str(meta(sub).get("uid", ""))
    namespace, name = ref_of(sub)
    status = sub.get("status") or {}
    activated = parse_timestamp(status["activatedAt"], field="status.activatedAt")
    deactivated = parse_timestamp(status["deactivatedAt"], field="status.deactivatedAt") if status.get(
        "deactivatedAt"
    ) else None  # fmt: skip
    pricing = (offering.get("spec") or {}).get("pricing") or {}
    schedule = FeeSchedule(parse_fee(pricing["subscriptionFee"]), activated, deactivated) if pricing.get(
        "subscriptionFee"
    ) else None  # fmt: skip
    sources = (sub.get("spec") or {}).get("usageSources") or []
    meters = {
        Meter(item["name"]): parse_margin(item.get("margins"), field=f"resourcePricing[{i}].margins")
        for i, item in enumerate(pricing.get("resourcePricing") or [])
        if item.get("name") != "subscription" and sources
    }
    watermarks = data.watermarks.get(uid, {})
    first = truncate_to_hour(activated)
    last_end = pinned.end
    if deactivated is not None:
        end = schedule.snapped_end if schedule is not None and schedule.snapped_end else deactivated
        last_end = min(last_end, truncate_to_hour(end - timedelta(microseconds=1)) + HOUR)
    rows: list[tuple[Any, ...]] = []
    unpriced = 0
    offering_version, subscription_version = versions

    def add(
        hour: datetime,
        source: str,
        unit: int | Decimal | None,
        quantity: Decimal,
        amount: int,
        final: bool,
        unpriced: int = 0,
    ) -> None:
        rows.append((cluster, uid, hour, source, namespace, name, offering_version, subscription_version, unit,
                     quantity, amount, None, final, now, unpriced))  # fmt: skip

    def hours_from(source: str) -> list[datetime]:
        start = watermarks[source] + HOUR if source in watermarks else first
        out, hour = [], start
        while hour < last_end:
            out.append(hour)
            hour += HOUR
        return out

    if schedule is not None:
        for hour in hours_from("fee"):
            add(
                hour,
                "fee",
                schedule.fee.price_micros,
                Decimal(0),
                schedule.amount(hour, hour + HOUR),
                hour < pinned.start,
            )
    if meters:
        todo = {meter: hours_from(meter.value) for meter in meters}
        earliest = min((h[0] for h in todo.values() if h), default=None)
        by_hour: dict[datetime, list[UsageRow]] = {}
        if earliest is not None:
            mine = namespaces(sources, namespace)
            fetched: Sequence[Mapping[str, Any]] = [r for ns in mine for r in data.usage.get(ns, [])]
            if data.start is None or earliest < data.start or not set(mine) <= data.namespaces:
                # A meter newer than its siblings' watermarks: fetch what the prefetch did not cover
                # (the settled hours first, as always).
                boundary(earliest)
                fetched = db.fetch_all("usage_rows", cluster=cluster, aggregation=aggregation, start=earliest,
                                       end=last_end, namespaces=mine)  # fmt: skip
            for row in fetched:
                if earliest <= row["hour"] < last_end and matches(row, sources, namespace):
                    by_hour.setdefault(row["hour"], []).append(_usage_row(row))
        active = ActiveInterval(activated, deactivated)
        for meter, hours in todo.items():
            until = boundary(hours[0]) if hours else pinned.start
            for hour in hours:
                charge = usage_charge(meter, by_hour.get(hour, []), meters[meter], active)
                final = hour < pinned.start and hour < until
                add(hour, meter.value, charge.unit_price_micros, charge.quantity, charge.amount_micros, final,
                    charge.rows_dropped)  # fmt: skip
                unpriced += charge.rows_dropped
    return Priced(rows, schedule, [m.value for m in meters], unpriced)


def collect_charges(
    db: Database,
    kube: Kube,
    cluster: str,
    aggregation: str,
    opencost: OpenCostTarget | None,
    *,
    scheduled: datetime | None,
    now: datetime,
    mto: MtoTarget | None = None,
) -> ChargesResult:
    pinned = pin_hour(scheduled, now)
    result = ChargesResult(pinned_hour=pinned)
    reconciled, subscriptions, offerings = reconcile_all(kube, db, cluster, opencost, now, mto)
    result.reconcile = reconciled.counts()
    result.errors.update(reconciled.errors)
    boundary = UsageBoundary(db, cluster, aggregation, pinned)
    data = prefetch(db, cluster, aggregation, subscriptions, pinned, boundary)
    priced: dict[str, tuple[dict[str, Any], Priced]] = {}
    all_rows: list[tuple[Any, ...]] = []
    for sub in subscriptions:
        if not (sub.get("status") or {}).get("activatedAt"):
            continue
        key = "/".join(ref_of(sub))
        try:
            offering, versions = _offering_of(db, cluster, sub, offerings)
            item = price_subscription(db, cluster, aggregation, sub, offering, versions, pinned, boundary, now, data)
        except (FinOpsError, KeyError, ValueError) as exc:
            result.errors[key] = exc.message if isinstance(exc, FinOpsError) else f"{type(exc).__name__}: {exc}"
            log.warning("subscription not priced", extra={"fields": {"subscription": key, "error": result.errors[key]}})
            continue
        priced[key] = (sub, item)
        all_rows.extend(item.rows)
        if item.unpriced_rows:
            result.unpriced_rows += item.unpriced_rows
            log.warning("usage rows without a rate were not charged", extra={"fields": {
                "subscription": key, "rows": item.unpriced_rows}})  # fmt: skip
    with db.connection() as conn:
        db.execute("create_charge_staging", conn)
        db.copy_rows(conn, "charge_staging", COLUMNS, all_rows)
        db.execute("merge_charge_staging", conn)
    result.rows = len(all_rows)
    result.subscriptions = len(priced)
    for key, (sub, item) in priced.items():
        write_costs(db, kube, cluster, sub, item, pinned, now)
        if release_finalizer(db, kube, cluster, sub, item, now, error=result.errors.get(key)):
            result.finalizers_released += 1
    return result


def _offering_of(
    db: Database, cluster: str, sub: Mapping[str, Any], offerings: Mapping[tuple[str, str], Mapping[str, Any]]
) -> tuple[Mapping[str, Any], tuple[int, int]]:
    """The live Offering, or its last mirrored version when it was deleted meanwhile (so winding-
    down Subscriptions still settle: the operator stranded their finalizers)."""
    ref = reference((sub.get("spec") or {}).get("offeringRef"), ref_of(sub)[0])
    if ref is None:
        raise InvalidInput("spec.offeringRef is missing")
    mirrored = db.fetch_one("latest_offering_version", cluster=cluster, namespace=ref[0], name=ref[1])
    if mirrored is None:
        raise InvalidInput(f"Offering {ref[0]}/{ref[1]} was never seen")
    offering = offerings.get(ref) or {"metadata": {"namespace": ref[0], "name": ref[1]}, "spec": mirrored["spec"]}
    sub_version = db.fetch_one("latest_subscription_version", cluster=cluster, uid=str(meta(sub).get("uid", "")))
    if sub_version is None:
        raise InvalidInput("the Subscription has no mirrored version yet")
    return offering, (int(mirrored["id"]), int(sub_version["id"]))
