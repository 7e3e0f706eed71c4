"""Reconciling PriceBooks, Offerings and Subscriptions (and the FinOpsProvider singleton).

Two entry points, one decision per object (level-based, idempotent, like kopf's handlers):

- :func:`reconcile_event`: one object an ``ApiServerSource`` event names, and only what depends on
  it: a PriceBook re-resolves the Offerings, an Offering whose readiness or pricing changed its
  Subscriptions, a Subscription that activated or deactivated its children and family. An event
  for a generation already observed (a status-only change: our own writes, ``status.costs``) does
  no work beyond reading the object, so status writes never feed back into reconciles.
- :func:`reconcile_all`: everything, in a constant number of reads (one list per kind, one per
  target kind) and bulk mirror writes; ``collect_charges`` runs it at the start of every hourly run,
  so a missed event costs at most an hour.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from finops.errors import InvalidInput
from finops.pricing import Setting
from finops.subscriptions import FINALIZER, Ref, World, meta, ref_of, reference
from infra.kube import KubeClient as Kube
from infra.kube.discovery import Discovery, discovery_for
from infra.postgres import Database
from usecases.reconcile.objects import ReconcileResult, get_kind, list_kind, observed
from usecases.reconcile.offerings import Offerings, reconcile_offerings
from usecases.reconcile.opencost import (
    MtoTarget,
    OpenCostTarget,
    read_provider,
    reconcile_pricebooks,
    reconcile_provider,
)
from usecases.reconcile.subscriptions import Targets, decide, mirror

log = logging.getLogger(__name__)

KINDS = {"PriceBook": "pricebooks", "Offering": "offerings", "Subscription": "subscriptions"}
MAX_CASCADE = 10_000  # Subscriptions one event may reach through its dependents


@dataclass
class Reconciled:
    """A full pass: the result, every Subscription as stored, the Offerings, the version ids."""

    result: ReconcileResult
    subscriptions: list[dict[str, Any]]
    offerings: Offerings
    subscription_versions: dict[str, int] = field(default_factory=dict)  # uid -> id


def reconcile_all(
    kube: Kube,
    db: Database,
    cluster: str,
    opencost: OpenCostTarget | None,
    now: datetime,
    mto: MtoTarget | None = None,
    pricing: Setting | None = None,
) -> Reconciled:
    """Everything, in dependency order: PriceBooks, the provider, Offerings, Subscriptions.
    ``pricing`` (``PRICING_SOURCE``) decides where prices come from when no FinOpsProvider does."""
    result = ReconcileResult()
    provider = read_provider(kube, pricing)
    reconcile_pricebooks(kube, opencost if provider.renders_pricebook else None, now, result)
    reconcile_provider(kube, provider, mto, opencost, now, result)
    offerings = reconcile_offerings(kube, db, cluster, now, result)
    listed = {ref_of(s): s for s in list_kind(kube, "subscriptions")}
    targets = Targets(kube, discovery_for(kube), bulk=True)
    world = World(offerings=offerings.objects, subscriptions=listed, target_exists=targets)
    decided = []
    for ref, sub in list(listed.items()):
        outcome = decide(kube, sub, world, now, result)
        if outcome is not None:
            listed[ref] = outcome.sub
            decided.append(outcome.sub)
    versions = mirror(db, cluster, decided, world)
    db.execute("prune_subscription_index", cluster=cluster, uids=[str(meta(s).get("uid", "")) for s in listed.values()])
    return Reconciled(result, list(listed.values()), offerings, versions)


@dataclass(frozen=True)
class ObjectRef:
    """What an ``ApiServerSource`` event in Reference mode names."""

    kind: str
    namespace: str
    name: str


def parse_event_ref(data: Any) -> ObjectRef:
    """The object an event's data names (``InvalidInput`` naming the field otherwise)."""
    if not isinstance(data, dict):
        raise InvalidInput("the event data must be a JSON object (an ApiServerSource reference)")
    kind = data.get("kind")
    if kind not in KINDS:
        raise InvalidInput(f"kind: expected one of {sorted(KINDS)}, got {kind!r}")
    for key in ("name", "namespace"):
        value = data.get(key, "")
        if not isinstance(value, str) or len(value) > 253 or "/" in value:
            raise InvalidInput(f"{key}: not an object name")
    if not data.get("name"):
        raise InvalidInput("name: missing")
    return ObjectRef(str(kind), str(data.get("namespace") or ""), str(data["name"]))


def reconcile_event(
    kube: Kube,
    db: Database,
    cluster: str,
    ref: ObjectRef,
    opencost: OpenCostTarget | None,
    now: datetime,
    mto: MtoTarget | None = None,
    pricing: Setting | None = None,
) -> ReconcileResult:
    """The object ``ref`` names and what depends on it (see the module's docstring)."""
    result = ReconcileResult()
    obj = get_kind(kube, KINDS[ref.kind], ref.namespace, ref.name)
    if obj is not None and observed(obj) and (ref.kind != "Subscription" or _settled_metadata(obj)):
        result.skipped += 1
        return result
    events = _Cascade(kube, db, cluster, now, result, discovery_for(kube))
    if ref.kind == "Subscription":
        if obj is None:
            db.execute("forget_subscription", cluster=cluster, namespace=ref.namespace, name=ref.name)
        else:
            events.subscriptions([obj])
        return result
    # A PriceBook or an Offering: the books and Offerings are few, and an Offering's readiness
    # follows the active book and the Offerings it requires, so all of them are re-resolved.
    provider = read_provider(kube, pricing) if ref.kind == "PriceBook" else None
    render = opencost if provider is not None and provider.renders_pricebook else None
    reconcile_pricebooks(kube, render, now, result)
    if provider is not None:
        reconcile_provider(kube, provider, mto, opencost, now, result)
    offerings = reconcile_offerings(kube, db, cluster, now, result)
    changed = offerings.changed | ({(ref.namespace, ref.name)} if ref.kind == "Offering" and obj is None else set())
    events.offerings.update(offerings.objects)
    for namespace, name in sorted(changed):
        rows = db.fetch_all("subscriptions_of_offering", cluster=cluster, namespace=namespace, name=name)
        events.subscriptions(_fetch(kube, [(row["namespace"], row["name"]) for row in rows]))
    return result


def _settled_metadata(sub: dict[str, Any]) -> bool:
    """Our finalizer is on the Subscription, or it is being deleted (which moves its generation)."""
    return FINALIZER in (meta(sub).get("finalizers") or []) or bool(meta(sub).get("deletionTimestamp"))


def _fetch(kube: Kube, refs: Iterable[Ref]) -> list[dict[str, Any]]:
    found = (get_kind(kube, "subscriptions", namespace, name) for namespace, name in refs)
    return [sub for sub in found if sub is not None]


class _Cascade:
    """Subscriptions reconciled for one event, with only what their gates read, and then the
    Subscriptions whose gates read them when they activated or deactivated."""

    def __init__(
        self, kube: Kube, db: Database, cluster: str, now: datetime, result: ReconcileResult, discovery: Discovery
    ) -> None:
        self.kube, self.db, self.cluster, self.now, self.result = kube, db, cluster, now, result
        self.targets = Targets(kube, discovery, bulk=False)
        self.offerings: dict[Ref, dict[str, Any] | None] = {}  # read once each (None: not found)
        self.done: set[Ref] = set()

    def subscriptions(self, subs: list[dict[str, Any]]) -> None:
        todo = list(subs)
        while todo:
            if len(self.done) >= MAX_CASCADE:
                log.warning(
                    "event reached too many Subscriptions; the rest wait for the hourly full pass",
                    extra={"fields": {"left": len(todo), "limit": MAX_CASCADE}},
                )
                return
            sub = todo.pop(0)
            if ref_of(sub) in self.done:
                continue
            self.done.add(ref_of(sub))
            world = self._world(sub)
            outcome = decide(self.kube, sub, world, self.now, self.result)
            if outcome is None:
                continue
            mirror(self.db, self.cluster, [outcome.sub], world)
            if outcome.lifecycle_changed:
                namespace, name = ref_of(sub)
                rows = self.db.fetch_all(
                    "subscription_relatives",
                    cluster=self.cluster,
                    namespace=namespace,
                    name=name,
                    uid=str(meta(sub).get("uid", "")),
                    root=world.root_uid(outcome.sub),
                )
                todo.extend(
                    _fetch(
                        self.kube,
                        [(r["namespace"], r["name"]) for r in rows if (r["namespace"], r["name"]) not in self.done],
                    )
                )

    def _world(self, sub: dict[str, Any]) -> World:
        """What ``sub``'s gates read: its Offering, its parent chain, and its family when its
        Offering requires other Offerings."""
        offering_ref = reference((sub.get("spec") or {}).get("offeringRef"), ref_of(sub)[0])
        if offering_ref is not None and offering_ref not in self.offerings:
            self.offerings[offering_ref] = get_kind(self.kube, "offerings", *offering_ref)
        offerings = {ref: obj for ref, obj in self.offerings.items() if obj is not None}
        known: dict[Ref, dict[str, Any]] = {ref_of(sub): sub}
        chain = World(offerings, known, self.targets)
        current: dict[str, Any] | None = sub
        while current is not None and (parent := chain.parent_of(current)) is not None and parent not in known:
            current = get_kind(self.kube, "subscriptions", *parent)
            if current is not None:
                known[parent] = current
        offering = offerings.get(offering_ref) if offering_ref else None
        if (((offering or {}).get("spec") or {}).get("compatibility") or {}).get("requiredOfferings"):
            rows = self.db.fetch_all("subscription_family", cluster=self.cluster, root=chain.root_uid(sub))
            missing = [(r["namespace"], r["name"]) for r in rows if (r["namespace"], r["name"]) not in known]
            known.update({ref_of(s): s for s in _fetch(self.kube, missing)})
        return World(offerings, known, self.targets)
