"""Subscriptions: the finalizer, the activation gates, activation and deactivation, written to
``status``; their mirror in PostgreSQL (``subscription_versions``, the versions charges are priced
from, and ``subscription_index``, how an event finds the Subscriptions that depend on an object).

:func:`decide` is the level-based decision for one Subscription, the same whether a full pass or
one event asks for it. What it reads comes from a :class:`World` the caller builds: the whole
cluster in a full pass (read in a constant number of lists), or only what one Subscription's gates
read for an event (its Offering, parent chain and, when its Offering requires others, its family).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from finops.conditions import condition_status, get_condition, rfc3339, set_condition
from finops.errors import FinOpsError, NotFound
from finops.subscriptions import FINALIZER, Ref, World, deactivation_cause, gates, meta, ref_of, reference
from infra.kube import KubeClient as Kube
from infra.kube.discovery import ApiResource, Discovery
from infra.postgres import Database
from usecases.reconcile.objects import GROUP, VERSION, ReconcileResult, fingerprint, write_status


class Targets:
    """Whether a ``spec.lifecycle.targetRef`` exists. Its kind is resolved to a resource and scope
    through the API server's discovery (never guessed from the kind's spelling); a kind the server
    does not serve has no objects. ``bulk`` lists each kind once (a full pass: a constant number of
    requests however many Subscriptions name targets); otherwise each target is one GET."""

    def __init__(self, kube: Kube, discovery: Discovery, *, bulk: bool) -> None:
        self.kube, self.discovery, self.bulk = kube, discovery, bulk
        self._listed: dict[ApiResource, set[tuple[str, str]]] = {}

    def __call__(self, ref: Mapping[str, Any]) -> bool:
        resource = self.discovery.resolve(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        if resource is None:
            return False
        namespace = str(ref.get("namespace") or "") if resource.namespaced else ""
        name = str(ref.get("name", ""))
        kube = self.kube
        if self.bulk:
            if resource not in self._listed:
                items = kube.list_objects(resource.group, resource.version, resource.plural)
                self._listed[resource] = {
                    (str(meta(o).get("namespace") or ""), str(meta(o).get("name", ""))) for o in items
                }
            return (namespace, name) in self._listed[resource]
        try:
            kube.get_object(resource.group, resource.version, resource.plural, namespace or None, name)
        except NotFound:
            return False
        return True


@dataclass
class Decided:
    sub: dict[str, Any]  # as the API server stored it
    lifecycle_changed: bool  # activated or deactivated by this decision


def decide(kube: Kube, sub: dict[str, Any], world: World, now: datetime, result: ReconcileResult) -> Decided | None:
    """Reconcile one Subscription; None when it could not be (the error is in ``result``; the next
    event or run retries). Never price from a status Kubernetes did not store."""
    namespace, name = ref_of(sub)
    key = f"{namespace}/{name}"
    result.reconciled += 1
    finalizers = list(meta(sub).get("finalizers") or [])
    if FINALIZER not in finalizers and not meta(sub).get("deletionTimestamp"):
        try:
            added = {"finalizers": [*finalizers, FINALIZER], "resourceVersion": meta(sub).get("resourceVersion")}
            sub = kube.patch_object(GROUP, VERSION, "subscriptions", namespace, name, {"metadata": added})
        except FinOpsError as exc:
            result.errors[key] = exc.message
            return None
    status = dict(sub.get("status") or {})
    try:
        gate = gates(sub, world)
    except FinOpsError as exc:  # e.g. no permission to read its target's kind: this one waits
        result.errors[key] = exc.message
        return None
    conditions = status.get("conditions")
    lifecycle = status.get("activatedAt"), status.get("deactivatedAt")
    if not status.get("activatedAt"):
        if gate.ok and not meta(sub).get("deletionTimestamp"):
            status["activatedAt"] = rfc3339(now)
            status["compatibilityRoot"] = world.root_uid(sub)
            conditions = set_condition(conditions, "Ready", True, gate.reason, gate.message, now=now)
            conditions = set_condition(conditions, "Active", True, "ActivationSucceeded", "billing", now=now)
        else:
            conditions = set_condition(conditions, "Ready", False, gate.reason, gate.message, now=now)
    elif not status.get("deactivatedAt"):
        cause = deactivation_cause(sub, gate, world)
        if cause is not None:
            status["deactivatedAt"] = rfc3339(now)
            conditions = set_condition(conditions, "Ready", False, "ValidationSucceeded", "deactivated", now=now)
            conditions = set_condition(conditions, "Active", False, cause, f"deactivated: {cause}", now=now)
    if meta(sub).get("deletionTimestamp") and FINALIZER in (meta(sub).get("finalizers") or []):
        existing = get_condition({"status": {"conditions": conditions}}, "Deleting")
        if existing is None or existing.get("reason") != "WaitingForCollectionJob":
            conditions = set_condition(
                conditions,
                "Deleting",
                False,
                "WaitingForCollectionJob",
                "charges are settled by the next collect_charges run",
                now=now,
            )
    status["ready"] = condition_status(bool(status.get("activatedAt")) and not status.get("deactivatedAt"))
    status["conditions"] = conditions
    if not write_status(kube, "subscriptions", sub, status, result):
        result.errors.setdefault(key, "status not stored this run; priced next run")
        return None
    return Decided(sub, (status.get("activatedAt"), status.get("deactivatedAt")) != lifecycle)


def mirror(db: Database, cluster: str, subs: Iterable[Mapping[str, Any]], world: World) -> dict[str, int]:
    """Mirror reconciled Subscriptions (two statements however many): their version ids by uid."""
    subs = list(subs)
    if not subs:
        return {}
    uids = [str(meta(s).get("uid", "")) for s in subs]
    refs = [ref_of(s) for s in subs]
    statuses = [s.get("status") or {} for s in subs]
    rows = db.fetch_all(
        "upsert_subscription_versions",
        cluster=cluster,
        uids=uids,
        namespaces=[r[0] for r in refs],
        names=[r[1] for r in refs],
        generations=[meta(s).get("generation") or 0 for s in subs],
        fingerprints=[
            fingerprint([s.get("spec"), st.get("activatedAt"), st.get("deactivatedAt")])
            for s, st in zip(subs, statuses, strict=True)
        ],
        specs=[json.dumps(s.get("spec") or {}) for s in subs],
        activated=[st.get("activatedAt") for st in statuses],
        deactivated=[st.get("deactivatedAt") for st in statuses],
    )
    offerings = [reference((s.get("spec") or {}).get("offeringRef"), ref_of(s)[0]) or ("", "") for s in subs]
    parents: list[Ref | None] = [world.parent_of(s) for s in subs]
    db.execute(
        "upsert_subscription_index",
        cluster=cluster,
        uids=uids,
        namespaces=[r[0] for r in refs],
        names=[r[1] for r in refs],
        offering_namespaces=[o[0] for o in offerings],
        offering_names=[o[1] for o in offerings],
        parent_namespaces=[p[0] if p else None for p in parents],
        parent_names=[p[1] if p else None for p in parents],
        roots=[world.root_uid(s) for s in subs],
    )
    return {row["uid"]: int(row["id"]) for row in rows}
