"""Offerings: pricing resolved against the active PriceBook, readiness, and their mirror in
PostgreSQL (``offering_versions``: the versions charges are priced from, kept after deletion).

Offerings are few per cluster (tens, not thousands), and resolution follows required Offerings
and looks for cycles, so every reconcile reads them all; what is per object is the write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from finops.conditions import condition_status, set_condition
from finops.offerings import needs_resolution, resolve
from finops.subscriptions import Ref, meta, ref_of
from infra.kube import KubeClient as Kube
from infra.postgres import Database
from usecases.reconcile.objects import ReconcileResult, fingerprint, list_kind, write_status


@dataclass
class Offerings:
    """The cluster's Offerings as reconciled: by reference, their mirrored version ids, and which
    changed readiness or resolved pricing in this pass (their Subscriptions need a look)."""

    objects: dict[Ref, dict[str, Any]] = field(default_factory=dict)
    version_ids: dict[Ref, int] = field(default_factory=dict)
    changed: set[Ref] = field(default_factory=set)


def reconcile_offerings(kube: Kube, db: Database, cluster: str, now: datetime, result: ReconcileResult) -> Offerings:
    """Resolve and write every Offering's status, then mirror them all in one statement."""
    found = Offerings(objects={ref_of(o): o for o in list_kind(kube, "offerings")})
    reconciled = list(found.objects.values())
    for offering in reconciled:
        result.reconciled += 1
        before = (offering.get("status") or {}).get("ready"), (offering.get("status") or {}).get("resolvedPricing")
        resolution = resolve(offering, result.pricebook, found.objects, now=now)
        conditions = (offering.get("status") or {}).get("conditions")
        for kind in ("Ready", "PricingResolved"):
            conditions = set_condition(
                conditions,
                kind,
                resolution.ready,
                resolution.reason,
                resolution.message,
                now=now,
                generation=meta(offering).get("generation"),
            )
        status: dict[str, Any] = {"ready": condition_status(resolution.ready), "conditions": conditions}
        if resolution.ready and needs_resolution(offering, result.pricebook):
            status["resolvedPricing"] = resolution.pricing
        write_status(kube, "offerings", offering, status, result)
        offering.setdefault("status", {}).update(status)  # its Subscriptions see the new readiness
        if (status["ready"], status.get("resolvedPricing")) != before:
            found.changed.add(ref_of(offering))
    if reconciled:
        rows = db.fetch_all(
            "upsert_offering_versions",
            cluster=cluster,
            uids=[str(meta(o).get("uid", "")) for o in reconciled],
            namespaces=[ref_of(o)[0] for o in reconciled],
            names=[ref_of(o)[1] for o in reconciled],
            generations=[meta(o).get("generation") or 0 for o in reconciled],
            fingerprints=[fingerprint(o.get("spec") or {}) for o in reconciled],
            specs=[json.dumps(o.get("spec") or {}) for o in reconciled],
        )
        by_uid = {row["uid"]: int(row["id"]) for row in rows}
        for offering in reconciled:
            found.version_ids[ref_of(offering)] = by_uid[str(meta(offering).get("uid", ""))]
    return found


def mirrored_offerings(db: Database, cluster: str, refs: set[Ref]) -> dict[Ref, Mapping[str, Any]]:
    """The last mirror of each of ``refs`` (Offerings deleted meanwhile: their winding-down
    Subscriptions still settle from them; the operator stranded their finalizers)."""
    if not refs:
        return {}
    ordered = sorted(refs)
    rows = db.fetch_all(
        "latest_offering_versions", cluster=cluster, namespaces=[r[0] for r in ordered], names=[r[1] for r in ordered]
    )
    return {(row["namespace"], row["name"]): row for row in rows}
