"""A priced Subscription's status: ``status.costs`` and the finalizer release.

``status.costs`` has hour, day and month buckets: ``current`` from the charge rows, ``projected``
with the fee over the bucket plus the usage run-rate over the time the Subscription is active in
it. The finalizer of a deleted, deactivated Subscription is released only when every source is
final through its last hour (the fee through its snapped end), ``minPeriods`` is met and the run
had no error for it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from finops.conditions import get_condition, set_condition
from finops.errors import Conflict, FinOpsError
from finops.hours import Hour, parse_timestamp, truncate_to_hour
from finops.periods import ONE_MICROSECOND
from finops.subscriptions import FINALIZER, meta, ref_of
from infra.kube import KubeClient as Kube
from infra.postgres import Database
from usecases.collect_charges.pricing import Plan
from usecases.reconcile.objects import GROUP, VERSION

log = logging.getLogger(__name__)


def _buckets(pinned: Hour) -> list[tuple[str, datetime, datetime]]:
    day = pinned.start.replace(hour=0)
    month = day.replace(day=1)
    next_month = (month + timedelta(days=32)).replace(day=1)
    return [("hour", pinned.start, pinned.end), ("day", day, day + timedelta(days=1)), ("month", month, next_month)]


Totals = dict[str, dict[str, tuple[int, int]]]  # source -> granularity -> (micros, unpriced rows)


def read_totals(db: Database, cluster: str, uids: list[str], pinned: Hour) -> dict[str, Totals]:
    """Every priced Subscription's charges in the pinned hour's buckets, in one statement."""
    if not uids:
        return {}
    (_, hour, _), (_, day, _), (_, month, _) = _buckets(pinned)
    found: dict[str, Totals] = {}
    for row in db.fetch_all(
        "charge_totals", cluster=cluster, uids=uids, hour=hour, day=day, month=month, end=pinned.end
    ):
        found.setdefault(row["uid"], {})[row["source"]] = {
            granularity: (int(row[f"{granularity}_micros"]), int(row[f"{granularity}_unpriced"]))
            for granularity in ("hour", "day", "month")
        }
    return found


def costs_of(plan: Plan, totals: Totals, pinned: Hour) -> list[dict[str, Any]]:
    """``status.costs``: per bucket, ``current`` from the charges and ``projected``."""
    activated, deactivated = plan.active.start, plan.active.end
    costs = []
    for granularity, start, end in _buckets(pinned):
        # The usage run-rate is over the time the Subscription was active in the bucket so far,
        # projected over the time it is active in the whole bucket (not over the calendar bucket).
        active_from, active_until = max(start, activated), min(end, deactivated or end)
        elapsed = max(timedelta(0), min(pinned.end, active_until) - active_from) // ONE_MICROSECOND
        length = max(timedelta(0), active_until - active_from) // ONE_MICROSECOND
        breakdown: list[dict[str, Any]] = []
        for source in (["fee"] if plan.schedule else []) + plan.meters:
            current, unpriced = totals.get(source, {}).get(granularity, (0, 0))
            if source == "fee" and plan.schedule is not None:
                projected = plan.schedule.amount(start, end)
            else:  # half-even, exact
                projected = round(Fraction(current * length, elapsed)) if elapsed else current
            entry = {"name": "subscription" if source == "fee" else source, "current": current, "projected": projected}
            if unpriced:  # usage rows without a rate: not charged, and said so
                entry["unpricedRows"] = unpriced
            breakdown.append(entry)
        costs.append(
            {
                "granularity": granularity,
                "start": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "endExclusive": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "current": sum(b["current"] for b in breakdown),
                "projected": sum(b["projected"] for b in breakdown),
                "breakdown": breakdown,
            }
        )
    return costs


def write_costs(kube: Kube, sub: Mapping[str, Any], plan: Plan, totals: Totals, pinned: Hour, now: datetime) -> bool:
    """Patch ``status.costs`` when it changed (True when patched). The precondition is the
    resourceVersion this run last saw, so conditions reconcile wrote meanwhile are never
    overwritten: on a conflict the next run writes it."""
    costs = costs_of(plan, totals, pinned)
    status = sub.get("status") or {}
    resolved = get_condition(sub, "CostsResolved")
    if status.get("costs") == costs and resolved is not None and resolved.get("status") == "True":
        return False
    namespace, name = ref_of(sub)
    conditions = set_condition(
        status.get("conditions"), "CostsResolved", True, "FromDB", "from the charge rows", now=now
    )
    patch = {
        "metadata": {"resourceVersion": meta(sub).get("resourceVersion")},
        "status": {"costs": costs, "conditions": conditions},
    }
    try:
        kube.patch_status(GROUP, VERSION, "subscriptions", namespace, name, patch)
    except FinOpsError as exc:
        log.warning(
            "status.costs not written", extra={"fields": {"subscription": f"{namespace}/{name}", "error": exc.message}}
        )
        return False
    return True


def release_finalizer(
    db: Database, kube: Kube, cluster: str, sub: Mapping[str, Any], item: Plan, now: datetime, *, error: str | None
) -> bool:
    status = sub.get("status") or {}
    finalizers = list(meta(sub).get("finalizers") or [])
    if not meta(sub).get("deletionTimestamp") or not status.get("deactivatedAt") or FINALIZER not in finalizers:
        return False
    where = {"subscription": "/".join(ref_of(sub))}
    if error:
        log.info("Charges errored this run, keeping finalizer", extra={"fields": {**where, "error": error}})
        return False
    if item.schedule is not None and not item.schedule.min_periods_satisfied(now):
        log.info("MinPeriods not yet satisfied, keeping finalizer", extra={"fields": where})
        return False
    deactivated = truncate_to_hour(parse_timestamp(status["deactivatedAt"], field="status.deactivatedAt"))
    marks = {
        r["source"]: r["hour"]
        for r in db.fetch_all("charge_watermarks", cluster=cluster, uids=[str(meta(sub).get("uid", ""))])
    }
    # Usage must be final through the deactivation hour; the fee through the hour that ends on
    # the snapped deactivation (its last tick is charged in full there, possibly weeks later).
    through = {meter: deactivated for meter in item.meters}
    if item.schedule is not None:
        snapped = item.schedule.snapped_end or deactivated
        through["fee"] = truncate_to_hour(snapped - timedelta(microseconds=1))
    if any(marks.get(source) is None or marks[source] < hour for source, hour in through.items()):
        log.info("Charges not finalized through deactivation hour, keeping finalizer", extra={"fields": where})
        return False
    namespace, name = ref_of(sub)
    fresh = kube.get_object(GROUP, VERSION, "subscriptions", namespace, name)  # statuses moved its resourceVersion
    remaining = [f for f in meta(fresh).get("finalizers") or [] if f != FINALIZER]
    precondition = {"finalizers": remaining, "resourceVersion": meta(fresh).get("resourceVersion")}
    try:
        kube.patch_object(GROUP, VERSION, "subscriptions", namespace, name, {"metadata": precondition})
    except Conflict:
        log.info("Subscription changed meanwhile, keeping finalizer until the next run", extra={"fields": where})
        return False
    log.info("Removed finalizer for deleted subscription", extra={"fields": where})
    return True
