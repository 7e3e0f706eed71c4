"""The run's pricing: where prices come from (``finops.pricing``: the active PriceBook, or
OpenCost's own figures in a declared currency), stored as a versioned ``pricebooks`` row that every
row and ledger hour is stamped with.

``describe_pricing`` only reads (the FinOpsProvider ``default`` and the PriceBooks): what a run
would price with, for a run and for ``finops doctor``. ``resolve_pricing`` stores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from finops.errors import InvalidInput, NotFound
from finops.pricebooks import RATE_FIELDS, PriceBook, elect_active, parse_pricebook
from finops.pricing import OPENCOST, PRICEBOOK, PROVIDER_NAME, Declaration, Setting, declare
from infra.kube import KubeClient
from infra.postgres import Database

FINOPS_GROUP, FINOPS_VERSION = "finops.stakater.com", "v1alpha1"


@dataclass(frozen=True)
class PricingView:
    """What a run prices with, read without writing anything."""

    source: str  # "pricebook" or "opencost"
    currency: str | None  # None: rows would be stored unpriced (no usable PriceBook)
    label: str | None  # the book's namespace/name, or "opencost (<who declared it>)"
    warning: str | None  # why rows would be stored unpriced
    declaration: Declaration  # who declared the source (and, for opencost, the currency)
    book: PriceBook | None = None
    uid: str = ""  # the declaring FinOpsProvider's uid (an OpenCost-priced version)
    invalid: bool = False  # the active PriceBook does not parse (``warning`` says why)


@dataclass(frozen=True)
class ActivePricing:
    pricebook_id: int | None
    currency: str | None
    label: str | None
    warning: str | None
    rates: Mapping[str, Decimal] | None = None  # the book's exact rates (a source that prices with them)
    source: str = PRICEBOOK


def describe_pricing(kube: KubeClient, setting: Setting, allocation_source: str = "opencost") -> PricingView:
    """The pricing a run would use; ``InvalidInput`` naming the field or variable when the
    declaration cannot be used (the run then fails: no silent fallback)."""
    try:
        provider: dict[str, Any] | None = kube.get_object(
            FINOPS_GROUP, FINOPS_VERSION, "finopsproviders", None, PROVIDER_NAME
        )
    except NotFound:  # none, or the CRD is not installed: the settings decide
        provider = None
    declared = declare(provider, setting)
    if declared.source == OPENCOST:
        if allocation_source != "opencost":
            where = "PRICING_SOURCE" if provider is None else f"{declared.declared_by}'s pricingModelSource"
            raise InvalidInput(
                f"{where} asks for OpenCost's prices but ALLOCATION_SOURCE is {allocation_source}: "
                "the Prometheus source has no prices of its own (price it with a PriceBook)"
            )
        uid = str(((provider or {}).get("metadata") or {}).get("uid") or "")
        return PricingView(OPENCOST, declared.currency, declared.label, None, declared, uid=uid)
    return _book_view(kube, declared)


def _book_view(kube: KubeClient, declared: Declaration) -> PricingView:
    """The view of the cluster's active PriceBook (a warning when rows would be stored unpriced)."""

    def unpriced(warning: str, *, invalid: bool = False) -> PricingView:
        return PricingView(PRICEBOOK, None, None, warning, declared, invalid=invalid)

    try:
        books = kube.list_objects(FINOPS_GROUP, FINOPS_VERSION, "pricebooks")
    except NotFound:
        return unpriced("the PriceBook CRD is not installed: rows are stored unpriced")
    active = elect_active(books)
    if active is None:
        return unpriced("no PriceBook in the cluster: rows are stored unpriced")
    try:
        book = parse_pricebook(active)
    except InvalidInput as exc:
        return unpriced(f"active {exc.message}: rows are stored unpriced", invalid=True)
    return PricingView(PRICEBOOK, book.currency, f"{book.namespace}/{book.name}", None, declared, book)


def resolve_pricing(
    db: Database, kube: KubeClient, cluster: str, setting: Setting, allocation_source: str = "opencost"
) -> ActivePricing:
    """``describe_pricing``, stored as a versioned ``pricebooks`` row (a new one when the book's
    rates, the source or the currency change)."""
    view = describe_pricing(kube, setting, allocation_source)
    if view.source == OPENCOST:
        declared = view.declaration
        assert declared.currency is not None  # declare() requires it
        zero = dict.fromkeys(RATE_FIELDS, Decimal(0))  # OpenCost's figures are the cost: no rates
        version = _version(
            cluster, "", declared.declared_by, view.uid, declared.fingerprint, declared.currency, OPENCOST, zero
        )
        row = db.fetch_one("upsert_pricebook", **version)
        assert row is not None
        return ActivePricing(int(row["id"]), view.currency, view.label, None, None, OPENCOST)
    book = view.book
    if book is None:
        return ActivePricing(None, None, None, view.warning)
    version = _version(
        cluster, book.namespace, book.name, book.uid, book.fingerprint, book.currency, PRICEBOOK, book.rates
    )
    row = db.fetch_one("upsert_pricebook", **version)
    assert row is not None
    return ActivePricing(int(row["id"]), book.currency, view.label, None, book.rates)


def _version(
    cluster: str,
    namespace: str,
    name: str,
    uid: str,
    fingerprint: str,
    currency: str,
    source: str,
    rates: Mapping[str, Decimal],
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "namespace": namespace,
        "name": name,
        "uid": uid,
        "fingerprint": fingerprint,
        "currency": currency,
        "valuation_mode": "currency",
        "source": source,
        **rates,  # exact Decimals, stored as numeric
    }
