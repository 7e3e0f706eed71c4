"""What every reconciler shares: our API group, the Kubernetes port, the result of a pass, and
writing a status only when it changed (with the object's ``resourceVersion`` as precondition).

Every status we write carries ``observedGeneration``: an event for an object whose generation we
have already observed is a status-only change (often our own write) and costs no work.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from finops.errors import Conflict, FinOpsError, NotFound
from finops.subscriptions import meta, ref_of
from infra.kube import KubeClient as Kube

log = logging.getLogger(__name__)

GROUP, VERSION = "finops.stakater.com", "v1alpha1"


@dataclass
class ReconcileResult:
    pricebook: Any = None  # the active, ready PriceBook (finops.pricebooks.PriceBook)
    pricing_changed: bool = False
    statuses_written: int = 0
    reconciled: int = 0  # objects whose desired state was evaluated
    skipped: int = 0  # events for a generation already observed (status-only changes)
    errors: dict[str, str] = field(default_factory=dict)  # object -> error

    def counts(self) -> dict[str, Any]:
        book = self.pricebook
        return {
            "active_pricebook": f"{book.namespace}/{book.name}" if book is not None else None,
            "opencost_pricing_changed": self.pricing_changed,
            "objects_reconciled": self.reconciled,
            "events_skipped": self.skipped,
            "statuses_written": self.statuses_written,
            "reconcile_errors": len(self.errors),
        }


def observed(obj: Mapping[str, Any]) -> bool:
    """Whether our last status write saw this generation (so only status or metadata changed since)."""
    generation = meta(obj).get("generation")
    return generation is not None and (obj.get("status") or {}).get("observedGeneration") == generation


def status_changed(obj: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    current = obj.get("status") or {}
    return any(current.get(key) != value for key, value in status.items())


def write_status(kube: Kube, plural: str, obj: dict[str, Any], status: dict[str, Any], result: ReconcileResult) -> bool:
    """Write ``status`` (with ``observedGeneration``) when it differs, updating ``obj`` in place with
    what the API server stored; False when it could not be (the next event or run retries). One
    object's failure (a conflict, a rejected patch, a missing permission) never stops the others."""
    status = {**status, "observedGeneration": meta(obj).get("generation")}
    if not status_changed(obj, status):
        return True
    namespace, name = ref_of(obj)
    patch = {"metadata": {"resourceVersion": meta(obj).get("resourceVersion")}, "status": status}
    try:
        stored = kube.patch_status(GROUP, VERSION, plural, namespace or None, name, patch)
    except Conflict:
        log.info(
            "status not written: the object changed; its next event reconciles it",
            extra={"fields": {"object": f"{plural}/{namespace}/{name}"}},
        )
        return False
    except FinOpsError as exc:
        result.errors[f"{plural}/{namespace}/{name}"] = exc.message
        return False
    result.statuses_written += 1
    obj["status"] = {**(obj.get("status") or {}), **status}
    if isinstance(stored, dict) and meta(stored).get("resourceVersion"):
        obj.setdefault("metadata", {})["resourceVersion"] = meta(stored)["resourceVersion"]
    return True


def list_kind(kube: Kube, plural: str) -> list[dict[str, Any]]:
    """All objects of one of our kinds; none when its CRD is not installed (yet)."""
    try:
        return kube.list_objects(GROUP, VERSION, plural)
    except NotFound:
        log.warning("CRD not installed; nothing to reconcile", extra={"fields": {"resource": f"{plural}.{GROUP}"}})
        return []


def get_kind(kube: Kube, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    """One object of our kinds, or None when it is gone."""
    try:
        return kube.get_object(GROUP, VERSION, plural, namespace or None, name)
    except NotFound:
        return None


def fingerprint(document: Any) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:32]
