"""One ``collect_charges`` run: a full reconcile pass, then every activated Subscription priced
hour by hour into ``subscription_charges`` (see ``usecases.collect_charges.pricing``: bounded
batches, a time budget, ``remaining`` for the next ping), then ``status.costs`` and the finalizers
of the Subscriptions priced through the pinned hour.

The number of statements and API requests of a run does not grow with the number of
Subscriptions, except the status patches themselves (only where ``status.costs`` changed) and
finalizer work on deleted Subscriptions.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from finops.errors import FinOpsError, InvalidInput
from finops.hours import Hour, pin_hour
from finops.pricing import Setting
from finops.subscriptions import Ref, meta, ref_of, reference
from infra.kube import KubeClient as Kube
from infra.postgres import Database
from usecases.collect_charges.pricing import Plan, plan_subscription, price_plans
from usecases.collect_charges.status import read_totals, release_finalizer, write_costs
from usecases.collect_charges.usage_rows import UsageBoundary
from usecases.reconcile.offerings import mirrored_offerings
from usecases.reconcile.opencost import MtoTarget, OpenCostTarget
from usecases.reconcile.service import Reconciled, reconcile_all

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """How much one run prices at a time (``CHARGES_*`` settings)."""

    chunk_hours: int = 168
    batch_rows: int = 20_000
    budget_seconds: float | None = None


@dataclass
class ChargesResult:
    pinned_hour: Hour
    subscriptions: int = 0
    rows: int = 0
    batches: int = 0
    remaining: int = 0  # Subscriptions not priced through the pinned hour (time budget): next ping
    statuses_patched: int = 0
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
            "batches": self.batches,
            "remaining": self.remaining,
            "statuses_patched": self.statuses_patched,
            "finalizers_released": self.finalizers_released,
            "usage_rows_unpriced": self.unpriced_rows,
            "errors": len(self.errors),
            **self.reconcile,
        }


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
    pricing: Setting | None = None,
    limits: Limits = Limits(),
) -> ChargesResult:
    pinned = pin_hour(scheduled, now)
    result = ChargesResult(pinned_hour=pinned)
    reconciled = reconcile_all(kube, db, cluster, opencost, now, mto, pricing)
    result.reconcile = reconciled.result.counts()
    result.errors.update(reconciled.result.errors)
    plans = _plans(db, cluster, aggregation, reconciled, pinned, result)
    run = price_plans(
        db,
        cluster,
        aggregation,
        plans.values(),
        now=now,
        chunk_hours=limits.chunk_hours,
        batch_rows=limits.batch_rows,
        budget_seconds=limits.budget_seconds,
    )
    result.rows, result.batches, result.remaining = run.rows, run.batches, len(run.remaining)
    if run.remaining:
        log.info("time budget reached; the next ping continues", extra={"fields": {"remaining": len(run.remaining)}})
    settled = {id(plan) for plan in run.remaining}
    complete = {uid: plan for uid, plan in plans.items() if id(plan) not in settled and plan.error is None}
    for plan in plans.values():
        if plan.error is not None:
            result.errors[plan.key] = plan.error
        result.unpriced_rows += plan.unpriced_rows
        if plan.unpriced_rows:
            log.warning(
                "usage rows without a rate were not charged",
                extra={"fields": {"subscription": plan.key, "rows": plan.unpriced_rows}},
            )
    result.subscriptions = len(complete)
    totals = read_totals(db, cluster, list(complete), pinned)
    for sub in reconciled.subscriptions:
        done = complete.get(str(meta(sub).get("uid", "")))
        if done is None:
            continue
        if write_costs(kube, sub, done, totals.get(done.uid, {}), pinned, now):
            result.statuses_patched += 1
        if release_finalizer(db, kube, cluster, sub, done, now, error=result.errors.get(done.key)):
            result.finalizers_released += 1
    return result


def _plans(
    db: Database, cluster: str, aggregation: str, reconciled: Reconciled, pinned: Hour, result: ChargesResult
) -> dict[str, Plan]:
    """A Plan per activated Subscription (by uid), read in a constant number of statements: the
    watermarks, the mirrors of deleted Offerings, the Subscription versions not mirrored this run."""
    active = [s for s in reconciled.subscriptions if (s.get("status") or {}).get("activatedAt")]
    uids = [str(meta(s).get("uid", "")) for s in active]
    marks: dict[str, dict[str, datetime]] = {}
    for row in db.fetch_all("charge_watermarks", cluster=cluster, uids=uids) if uids else []:
        marks.setdefault(row["uid"], {})[row["source"]] = row["hour"]
    live = reconciled.offerings
    wanted = {ref for s in active if (ref := _offering_ref(s)) is not None}
    gone = mirrored_offerings(db, cluster, wanted - set(live.version_ids))
    versions = dict(reconciled.subscription_versions)
    unmirrored = [uid for uid in uids if uid not in versions]
    if unmirrored:  # its reconcile failed this run: priced from its last mirrored version
        versions.update(
            {
                r["uid"]: int(r["id"])
                for r in db.fetch_all("latest_subscription_versions", cluster=cluster, uids=unmirrored)
            }
        )
    plans: dict[str, Plan] = {}
    for sub, uid in zip(active, uids, strict=True):
        key = "/".join(ref_of(sub))
        try:
            ref = _offering_ref(sub)
            if ref is None:
                raise InvalidInput("spec.offeringRef is missing")
            offering: Mapping[str, Any]
            if ref in live.version_ids:
                offering, offering_version = live.objects[ref], live.version_ids[ref]
            elif ref in gone:
                offering = {"metadata": {"namespace": ref[0], "name": ref[1]}, "spec": gone[ref]["spec"]}
                offering_version = int(gone[ref]["id"])
            else:
                raise InvalidInput(f"Offering {ref[0]}/{ref[1]} was never seen")
            if uid not in versions:
                raise InvalidInput("the Subscription has no mirrored version yet")
            plans[uid] = plan_subscription(sub, offering, (offering_version, versions[uid]), pinned, marks.get(uid, {}))
        except (FinOpsError, KeyError, ValueError) as exc:
            result.errors[key] = exc.message if isinstance(exc, FinOpsError) else f"{type(exc).__name__}: {exc}"
            log.warning("subscription not priced", extra={"fields": {"subscription": key, "error": result.errors[key]}})
    boundary = UsageBoundary(db, cluster, aggregation, pinned)
    # The ledger's settled hours, read once from the earliest hour any meter prices, before any usage row.
    starts = [plan.cursor[meter] for plan in plans.values() for meter in plan.meters]
    if starts:
        boundary(min(starts))
    for plan in plans.values():
        plan.settle(boundary)
    return plans


def _offering_ref(sub: Mapping[str, Any]) -> Ref | None:
    return reference((sub.get("spec") or {}).get("offeringRef"), ref_of(sub)[0])
