"""The run's pricing: the cluster's active PriceBook, stored as a versioned ``pricebooks`` row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from finops.errors import InvalidInput, NotFound
from finops.pricebooks import elect_active, parse_pricebook
from infra.postgres import Database

FINOPS_GROUP, FINOPS_VERSION = "finops.stakater.com", "v1alpha1"


class KubeReader(Protocol):
    def list_objects(
        self, group: str, version: str, plural: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class ActivePricing:
    pricebook_id: int | None
    currency: str | None
    label: str | None
    warning: str | None
    rates: Mapping[str, Decimal] | None = None  # the book's exact rates (a source that prices with them)


def resolve_pricebook(db: Database, kube: KubeReader, cluster: str) -> ActivePricing:
    """Elect the cluster's active PriceBook and store its rates as a versioned row."""
    try:
        books = kube.list_objects(FINOPS_GROUP, FINOPS_VERSION, "pricebooks")
    except NotFound:
        return ActivePricing(None, None, None, "the PriceBook CRD is not installed: rows are stored unpriced")
    active = elect_active(books)
    if active is None:
        return ActivePricing(None, None, None, "no PriceBook in the cluster: rows are stored unpriced")
    try:
        book = parse_pricebook(active)
    except InvalidInput as exc:
        return ActivePricing(None, None, None, f"active {exc.message}: rows are stored unpriced")
    version: dict[str, Any] = {
        "cluster": cluster,
        "namespace": book.namespace,
        "name": book.name,
        "uid": book.uid,
        "fingerprint": book.fingerprint,
        "currency": book.currency,
        "valuation_mode": book.valuation_mode,
        **book.rates,  # exact Decimals, stored as numeric
    }
    row = db.fetch_one("upsert_pricebook", **version)
    assert row is not None
    return ActivePricing(int(row["id"]), book.currency, f"{book.namespace}/{book.name}", None, book.rates)
