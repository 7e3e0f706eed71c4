"""Reconciling PriceBooks, Offerings and Subscriptions (and the FinOpsProvider singleton).

The ``reconcile`` target runs this on every change an ``ApiServerSource`` delivers, and
``collect_charges`` runs it at the start of every hourly run, so a missed event costs at most an
hour. It is level-based: it reads every object and writes only what differs, so running it twice,
or concurrently, is harmless (status writes carry the object's ``resourceVersion``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from finops.conditions import get_condition, rfc3339, set_condition
from finops.errors import Conflict, FinOpsError, InvalidInput, NotFound
from finops.offerings import needs_resolution, resolve
from finops.pricebooks import PriceBook, elect_active, opencost_pricing, parse_pricebook
from finops.subscriptions import FINALIZER, World, deactivation_cause, gates, meta, ref_of
from infra.postgres import Database

log = logging.getLogger(__name__)

GROUP, VERSION = "finops.stakater.com", "v1alpha1"
RESTART_ANNOTATION = "finops.stakater.com/restartedAt"


class Kube(Protocol):
    def list_objects(
        self, group: str, version: str, plural: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...
    def get_object(self, group: str, version: str, plural: str, namespace: str | None, name: str) -> dict[str, Any]: ...
    def create_object(
        self, group: str, version: str, plural: str, namespace: str | None, body: dict[str, Any]
    ) -> Any: ...
    def patch_object(
        self,
        group: str,
        version: str,
        plural: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        content_type: str = ...,
    ) -> dict[str, Any]: ...
    def patch_status(
        self, group: str, version: str, plural: str, namespace: str | None, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class OpenCostTarget:
    namespace: str
    deployment: str
    configmap: str


@dataclass(frozen=True)
class MtoTarget:
    """The Multi Tenant Operator's OpenCost resource (only with ``MTO_ENABLED=true``)."""

    group: str
    version: str
    plural: str
    namespace: str
    name: str


@dataclass
class ReconcileResult:
    pricebook: PriceBook | None = None
    pricing_changed: bool = False
    statuses_written: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # object -> error

    def counts(self) -> dict[str, Any]:
        return {
            "active_pricebook": f"{self.pricebook.namespace}/{self.pricebook.name}" if self.pricebook else None,
            "opencost_pricing_changed": self.pricing_changed,
            "statuses_written": self.statuses_written,
            "reconcile_errors": len(self.errors),
        }


def _status_changed(obj: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    current = obj.get("status") or {}
    return any(current.get(key) != value for key, value in status.items())


def _write_status(
    kube: Kube, plural: str, obj: Mapping[str, Any], status: dict[str, Any], result: ReconcileResult
) -> bool:
    """Write ``status`` when it differs; False when it could not be (the next run retries). One
    object's failure (a conflict, a rejected patch, a missing permission) never stops the others."""
    if not _status_changed(obj, status):
        return True
    namespace, name = ref_of(obj)
    patch = {"metadata": {"resourceVersion": meta(obj).get("resourceVersion")}, "status": status}
    try:
        kube.patch_status(GROUP, VERSION, plural, namespace or None, name, patch)
    except Conflict:
        log.info("status not written: the object changed; the next event reconciles it",
                 extra={"fields": {"object": f"{plural}/{namespace}/{name}"}})  # fmt: skip
        return False
    except FinOpsError as exc:
        result.errors[f"{plural}/{namespace}/{name}"] = exc.message
        return False
    result.statuses_written += 1
    return True


def reconcile_pricebooks(kube: Kube, opencost: OpenCostTarget | None, now: datetime, result: ReconcileResult) -> None:
    books = _list(kube, "pricebooks")
    parsed: dict[tuple[str, str], PriceBook | InvalidInput] = {}
    for book in books:
        try:
            parsed[ref_of(book)] = parse_pricebook(book)
        except InvalidInput as exc:
            parsed[ref_of(book)] = exc
    winner = elect_active(books)
    winner_ref = ref_of(winner) if winner is not None else None
    for book in books:
        ref = ref_of(book)
        outcome = parsed[ref]
        ready = isinstance(outcome, PriceBook)
        active = ref == winner_ref
        conditions = set_condition(
            (book.get("status") or {}).get("conditions"), "Ready", ready,
            "ValidationSucceeded" if ready else "PricebookParseFailed",
            "rates parsed" if ready else outcome.message,  # type: ignore[union-attr]
            now=now, generation=meta(book).get("generation"),
        )  # fmt: skip
        was_active = (book.get("status") or {}).get("active") is True
        if active or was_active:
            conditions = set_condition(conditions, "Active", active, "Activated" if active else "Demoted",
                                       "the cluster's active PriceBook" if active else "another PriceBook is active",
                                       now=now)  # fmt: skip
        status: dict[str, Any] = {"ready": ready, "active": active, "conditions": conditions}
        status["activePricing"] = opencost_pricing(book) if active and ready else None
        _write_status(kube, "pricebooks", book, status, result)
        if active and ready:
            result.pricebook = outcome  # type: ignore[assignment]
            if opencost is not None:
                result.pricing_changed = _render_pricing(kube, opencost, opencost_pricing(book), now)


def _render_pricing(kube: Kube, target: OpenCostTarget, document: dict[str, str], now: datetime) -> bool:
    """Write OpenCost's pricing ConfigMap; restart OpenCost only when the document changed."""
    body = json.dumps(document, indent=2, sort_keys=True)
    try:
        current = kube.get_object("", "v1", "configmaps", target.namespace, target.configmap)
    except NotFound:
        kube.create_object("", "v1", "configmaps", target.namespace, {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": target.configmap, "namespace": target.namespace,
                         "labels": {"app.kubernetes.io/managed-by": "finops"}},
            "data": {"default.json": body},
        })  # fmt: skip
    else:
        if (current.get("data") or {}).get("default.json") == body:
            return False
        kube.patch_object("", "v1", "configmaps", target.namespace, target.configmap, {"data": {"default.json": body}})
    # OpenCost reads the file at start only (a subPath mount never refreshes): roll it.
    _restart(kube, target, now, hashlib.sha256(body.encode()).hexdigest()[:12])
    log.info("OpenCost pricing updated; OpenCost restarts", extra={"fields": {"configmap": target.configmap}})
    return True


def _fingerprint(document: Any) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:32]


def reconcile_offerings(
    kube: Kube, db: Database, cluster: str, now: datetime, result: ReconcileResult
) -> dict[tuple[str, str], dict[str, Any]]:
    offerings = {ref_of(o): o for o in _list(kube, "offerings")}
    for ref, offering in offerings.items():
        spec = offering.get("spec") or {}
        db.fetch_one("upsert_offering_version", cluster=cluster, uid=meta(offering).get("uid", ""),
                     namespace=ref[0], name=ref[1], generation=meta(offering).get("generation") or 0,
                     fingerprint=_fingerprint(spec), spec=spec)  # fmt: skip
        resolution = resolve(offering, result.pricebook, offerings, now=now)
        conditions = (offering.get("status") or {}).get("conditions")
        for kind in ("Ready", "PricingResolved"):
            conditions = set_condition(conditions, kind, resolution.ready, resolution.reason, resolution.message,
                                       now=now, generation=meta(offering).get("generation"))  # fmt: skip
        status: dict[str, Any] = {"ready": resolution.ready, "conditions": conditions}
        if resolution.ready and needs_resolution(offering, result.pricebook):
            status["resolvedPricing"] = resolution.pricing
        _write_status(kube, "offerings", offering, status, result)
        offering.setdefault("status", {}).update(status)  # subscriptions below see the new readiness
    return offerings


def reconcile_subscriptions(
    kube: Kube, db: Database, cluster: str, offerings: dict[tuple[str, str], dict[str, Any]], now: datetime,
    result: ReconcileResult,
) -> list[dict[str, Any]]:  # fmt: skip
    subscriptions = _list(kube, "subscriptions")
    world = World(offerings=offerings, subscriptions={ref_of(s): s for s in subscriptions},
                  target_exists=lambda ref: _exists(kube, ref))  # fmt: skip
    for sub in subscriptions:
        namespace, name = ref_of(sub)
        finalizers = list(meta(sub).get("finalizers") or [])
        if FINALIZER not in finalizers and not meta(sub).get("deletionTimestamp"):
            try:
                added = {"finalizers": [*finalizers, FINALIZER], "resourceVersion": meta(sub).get("resourceVersion")}
                sub = kube.patch_object(GROUP, VERSION, "subscriptions", namespace, name, {"metadata": added})
            except FinOpsError as exc:
                result.errors[f"{namespace}/{name}"] = exc.message
                continue
        status = dict(sub.get("status") or {})
        try:
            gate = gates(sub, world)
        except FinOpsError as exc:  # e.g. no permission to read its target's kind: this one waits
            result.errors[f"{namespace}/{name}"] = exc.message
            continue
        conditions = status.get("conditions")
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
                conditions = set_condition(conditions, "Deleting", False, "WaitingForCollectionJob",
                                           "charges are settled by the next collect_charges run", now=now)  # fmt: skip
        status["ready"] = bool(status.get("activatedAt")) and not status.get("deactivatedAt")
        status["conditions"] = conditions
        if not _write_status(kube, "subscriptions", sub, status, result):
            # Never price from a status Kubernetes did not store; the next run retries.
            result.errors.setdefault(f"{namespace}/{name}", "status not stored this run; priced next run")
            continue
        sub["status"] = status
        lifecycle = [sub.get("spec"), status.get("activatedAt"), status.get("deactivatedAt")]
        db.fetch_one(
            "upsert_subscription_version",
            cluster=cluster,
            uid=meta(sub).get("uid", ""),
            namespace=namespace,
            name=name,
            generation=meta(sub).get("generation") or 0,
            fingerprint=_fingerprint(lifecycle),
            spec=sub.get("spec") or {},
            activated_at=status.get("activatedAt"),
            deactivated_at=status.get("deactivatedAt"),
        )
    return subscriptions


CLUSTER_SCOPED = frozenset(
    {"Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "CustomResourceDefinition",
     "FinOpsProvider", "PriorityClass", "IngressClass"}
)  # fmt: skip


def _exists(kube: Kube, ref: Mapping[str, Any]) -> bool:
    group, _, version = str(ref.get("apiVersion", "")).rpartition("/")
    kind = str(ref.get("kind", ""))
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    namespace = None if kind in CLUSTER_SCOPED else str(ref.get("namespace") or "") or None
    try:
        kube.get_object(group, version, plural, namespace, str(ref.get("name", "")))
    except NotFound:
        return False
    return True


def _list(kube: Kube, plural: str) -> list[dict[str, Any]]:
    """All objects of one of our kinds; none when its CRD is not installed (yet)."""
    try:
        return kube.list_objects(GROUP, VERSION, plural)
    except NotFound:
        log.warning("CRD not installed; nothing to reconcile", extra={"fields": {"resource": f"{plural}.{GROUP}"}})
        return []


PROVIDER_BLOCKS = ("awsoptions", "gcpoptions", "azureoptions", "onpremoptions")


def reconcile_provider(
    kube: Kube, mto: MtoTarget | None, opencost: OpenCostTarget | None, now: datetime, result: ReconcileResult
) -> None:
    """The ``default`` FinOpsProvider. With MTO, patch its OpenCost resource on a real diff and
    restart OpenCost (unless this run already did); without, OpenCost follows the PriceBook path.
    Unlike the operator, its status says what happened, and why nothing was applied."""
    try:
        provider = kube.get_object(GROUP, VERSION, "finopsproviders", None, "default")
    except NotFound:
        return
    spec = provider.get("spec") or {}
    blocks = [name for name in PROVIDER_BLOCKS if spec.get(name)]
    ready, reason, message = True, "Synced", "nothing to apply: MTO_ENABLED is not true (PriceBooks drive OpenCost)"
    if len(blocks) != 1:
        ready, reason, message = False, "ValidationError", "exactly one provider block must be set"
    elif mto is not None:
        block = spec[blocks[0]] or {}
        secret = block.get("cloudIntegrationSecret")
        if blocks[0] != "onpremoptions" and not secret:
            ready, reason = False, "MissingCloudIntegrationSecret"
            message = f"{blocks[0]} has no cloudIntegrationSecret: nothing applied"
        else:
            desired = {
                "cloudIntegrationSecret": secret or "",
                "cloudCost": {"enabled": bool(secret)},
                "customPricing": {"enabled": block.get("pricingModelSource") == "Pricebook"},
            }
            try:
                current = kube.get_object(mto.group, mto.version, mto.plural, mto.namespace, mto.name)
            except NotFound:
                ready, reason, message = False, "OpenCostResourceNotFound", f"{mto.plural} {mto.namespace}/{mto.name}"
            else:
                have = (current.get("spec") or {}).get("opencost") or {}
                if any(have.get(key) != value for key, value in desired.items()):
                    kube.patch_object(mto.group, mto.version, mto.plural, mto.namespace, mto.name,
                                      {"spec": {"opencost": desired}})  # fmt: skip
                    if opencost is not None and not result.pricing_changed:  # one restart per change
                        _restart(kube, opencost, now, "provider")
                    message = "applied to the MTO OpenCost resource; OpenCost restarted"
                else:
                    message = "the MTO OpenCost resource is up to date"
    conditions = set_condition((provider.get("status") or {}).get("conditions"), "Ready", ready, reason, message,
                               now=now, generation=meta(provider).get("generation"))  # fmt: skip
    status = {"observedGeneration": meta(provider).get("generation"), "lastSyncTime": rfc3339(now),
              "conditions": conditions}  # fmt: skip
    if _status_changed(provider, {k: v for k, v in status.items() if k != "lastSyncTime"}):
        _write_status(kube, "finopsproviders", provider, status, result)


def _restart(kube: Kube, target: OpenCostTarget, now: datetime, why: str) -> None:
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTART_ANNOTATION: f"{rfc3339(now)}-{why}"}}}}}
    kube.patch_object("apps", "v1", "deployments", target.namespace, target.deployment, patch)


def reconcile_all(
    kube: Kube,
    db: Database,
    cluster: str,
    opencost: OpenCostTarget | None,
    now: datetime,
    mto: MtoTarget | None = None,
) -> tuple[ReconcileResult, list[dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """Everything, in dependency order: PriceBooks, the provider, Offerings, Subscriptions."""
    result = ReconcileResult()
    reconcile_pricebooks(kube, opencost, now, result)
    reconcile_provider(kube, mto, opencost, now, result)
    offerings = reconcile_offerings(kube, db, cluster, now, result)
    subscriptions = reconcile_subscriptions(kube, db, cluster, offerings, now, result)
    return result, subscriptions, offerings
