"""The cluster's pricing: the active PriceBook (elected, validated, rendered into OpenCost's custom
pricing ConfigMap, OpenCost restarted on a change) and the ``default`` FinOpsProvider, which says
where prices come from (``finops.pricing``). When OpenCost's own prices are declared, its figures
are authoritative: no PriceBook is rendered into its pricing ConfigMap.

PriceBooks and the provider are few per cluster, so their reconcile reads them all, whichever one
an event named: the election depends on every book.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from finops.conditions import condition_status, rfc3339, set_condition
from finops.errors import InvalidInput, NotFound
from finops.pricebooks import PriceBook, elect_active, opencost_pricing, parse_pricebook
from finops.pricing import PRICEBOOK, PROVIDER_BLOCKS, PROVIDER_NAME, Declaration, Setting, declare
from finops.subscriptions import meta, ref_of
from infra.kube import KubeClient as Kube
from usecases.reconcile.objects import GROUP, VERSION, ReconcileResult, list_kind, status_changed, write_status

log = logging.getLogger(__name__)

RESTART_ANNOTATION = "finops.stakater.com/restartedAt"


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


@dataclass(frozen=True)
class Provider:
    """The ``default`` FinOpsProvider (None: there is none) and the pricing it, or the settings
    without it, declare (an ``InvalidInput`` when the declaration cannot be used)."""

    obj: dict[str, Any] | None
    pricing: Declaration | InvalidInput

    @property
    def renders_pricebook(self) -> bool:
        """Whether the active PriceBook drives OpenCost's prices (else OpenCost's are authoritative)."""
        return isinstance(self.pricing, Declaration) and self.pricing.source == PRICEBOOK


def read_provider(kube: Kube, setting: Setting | None) -> Provider:
    """The FinOpsProvider and its declaration; ``setting`` (None: the defaults) decides without one."""
    try:
        obj = kube.get_object(GROUP, VERSION, "finopsproviders", None, PROVIDER_NAME)
    except NotFound:
        obj = None
    try:
        return Provider(obj, declare(obj, setting or Setting()))
    except InvalidInput as exc:
        return Provider(obj, exc)


def reconcile_pricebooks(kube: Kube, opencost: OpenCostTarget | None, now: datetime, result: ReconcileResult) -> None:
    books = list_kind(kube, "pricebooks")
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
            (book.get("status") or {}).get("conditions"),
            "Ready",
            ready,
            "ValidationSucceeded" if ready else "PricebookParseFailed",
            "rates parsed" if ready else outcome.message,  # type: ignore[union-attr]
            now=now,
            generation=meta(book).get("generation"),
        )
        was_active = (book.get("status") or {}).get("active") is True
        if active or was_active:
            conditions = set_condition(
                conditions,
                "Active",
                active,
                "Activated" if active else "Demoted",
                "the cluster's active PriceBook" if active else "another PriceBook is active",
                now=now,
            )
        status: dict[str, Any] = {"ready": condition_status(ready), "active": active, "conditions": conditions}
        status["activePricing"] = opencost_pricing(book) if active and ready else None
        write_status(kube, "pricebooks", book, status, result)
        if active and ready:
            result.pricebook = outcome
            if opencost is not None:
                result.pricing_changed = _render_pricing(kube, opencost, opencost_pricing(book), now)


def _render_pricing(kube: Kube, target: OpenCostTarget, document: dict[str, str], now: datetime) -> bool:
    """Write OpenCost's pricing ConfigMap; restart OpenCost only when the document changed."""
    body = json.dumps(document, indent=2, sort_keys=True)
    try:
        current = kube.get_object("", "v1", "configmaps", target.namespace, target.configmap)
    except NotFound:
        kube.create_object(
            "",
            "v1",
            "configmaps",
            target.namespace,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": target.configmap,
                    "namespace": target.namespace,
                    "labels": {"app.kubernetes.io/managed-by": "finops"},
                },
                "data": {"default.json": body},
            },
        )
    else:
        if (current.get("data") or {}).get("default.json") == body:
            return False
        kube.patch_object("", "v1", "configmaps", target.namespace, target.configmap, {"data": {"default.json": body}})
    # OpenCost reads the file at start only (a subPath mount never refreshes): roll it.
    _restart(kube, target, now, hashlib.sha256(body.encode()).hexdigest()[:12])
    log.info("OpenCost pricing updated; OpenCost restarts", extra={"fields": {"configmap": target.configmap}})
    return True


def reconcile_provider(
    kube: Kube,
    found: Provider,
    mto: MtoTarget | None,
    opencost: OpenCostTarget | None,
    now: datetime,
    result: ReconcileResult,
) -> None:
    """The ``default`` FinOpsProvider. With MTO, patch its OpenCost resource on a real diff and
    restart OpenCost (unless this run already did); without, OpenCost follows the PriceBook path
    or, with OpenCost's prices declared, is left alone. Unlike the operator, its status says what
    happened, why nothing was applied, and which pricing source and currency are active."""
    provider = found.obj
    if provider is None:
        return
    spec = provider.get("spec") or {}
    blocks = [name for name in PROVIDER_BLOCKS if spec.get(name) is not None]  # set, even empty (as CEL has())
    pricing = found.pricing
    if isinstance(pricing, Declaration) and pricing.source != PRICEBOOK:
        applied = f"prices come from OpenCost, in {pricing.currency} (no PriceBook is rendered into OpenCost)"
    else:
        applied = "PriceBooks drive OpenCost"
    ready, reason, message = True, "Synced", f"nothing to apply: MTO_ENABLED is not true ({applied})"
    if len(blocks) != 1:
        ready, reason, message = False, "ValidationError", "exactly one provider block must be set"
    elif isinstance(pricing, InvalidInput):
        ready, reason, message = False, "InvalidPricing", pricing.message
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
                    kube.patch_object(
                        mto.group, mto.version, mto.plural, mto.namespace, mto.name, {"spec": {"opencost": desired}}
                    )
                    if opencost is not None and not result.pricing_changed:  # one restart per change
                        _restart(kube, opencost, now, "provider")
                    message = "applied to the MTO OpenCost resource; OpenCost restarted"
                else:
                    message = "the MTO OpenCost resource is up to date"
    conditions = set_condition(
        (provider.get("status") or {}).get("conditions"),
        "Ready",
        ready,
        reason,
        message,
        now=now,
        generation=meta(provider).get("generation"),
    )
    status = {
        "observedGeneration": meta(provider).get("generation"),
        "lastSyncTime": rfc3339(now),
        "conditions": conditions,
        "pricingSource": pricing.source if isinstance(pricing, Declaration) else None,
        "currency": pricing.currency if isinstance(pricing, Declaration) else None,
    }
    if status_changed(provider, {k: v for k, v in status.items() if k != "lastSyncTime"}):
        write_status(kube, "finopsproviders", provider, status, result)


def _restart(kube: Kube, target: OpenCostTarget, now: datetime, why: str) -> None:
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTART_ANNOTATION: f"{rfc3339(now)}-{why}"}}}}}
    kube.patch_object("apps", "v1", "deployments", target.namespace, target.deployment, patch)
