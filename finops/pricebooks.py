"""PriceBooks: parsing rates (exact decimals, never rounded) and electing the cluster's active book.

The operator this replaces priced usage with "the first PriceBook in the collector's namespace"
and honoured only an annotation, while its own chart set a label. Here the active book is elected
cluster-wide, and the marker counts as an annotation *or* a label:

1. books marked ``finops.stakater.com/active: "true"`` (annotation or label);
2. else the incumbent (``status.active`` is true);
3. else every book (the newest bootstraps).

Within a tier the newest ``creationTimestamp`` wins; ties go to namespace, then name, ascending.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from finops.errors import InvalidInput
from finops.money import parse_rate, rate_text

ACTIVE_MARKER = "finops.stakater.com/active"

# PriceBook ``spec.rates`` keys, in the order they are stored.
RATE_FIELDS = (
    "cpuHour",
    "spotCPUHour",
    "ramGbHour",
    "spotRAMGbHour",
    "pvGbHour",
    "gpuHour",
    "networkGiB",
    "lbHour",  # per LoadBalancer Service-hour (the Prometheus source prices LBs with it)
)
# Rates added after books were first stored: left out of the fingerprint while 0, so a book that
# does not set them keeps the version (the pricebooks row) it had before they existed.
LATER_RATES = frozenset({"lbHour"})


@dataclass(frozen=True)
class PriceBook:
    """A validated PriceBook: its identity, currency and exact rates (currency units per unit)."""

    namespace: str
    name: str
    uid: str
    currency: str
    valuation_mode: str
    rates: Mapping[str, Decimal]

    @property
    def fingerprint(self) -> str:
        """A digest of everything that prices usage: a new one means a new version.

        Built from the canonical rate strings, so "0.10" and "0.1" are the same version.
        """
        rates = {field: rate_text(rate) for field, rate in self.rates.items() if rate or field not in LATER_RATES}
        document = {"currency": self.currency, "mode": self.valuation_mode, **rates}
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def is_marked_active(obj: Mapping[str, Any]) -> bool:
    meta = _meta(obj)
    for key in ("annotations", "labels"):
        values = meta.get(key)
        if isinstance(values, Mapping) and str(values.get(ACTIVE_MARKER, "")).lower() == "true":
            return True
    return False


def _is_incumbent(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status")
    return isinstance(status, Mapping) and status.get("active") is True


def elect_active(books: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The active PriceBook object among ``books`` (raw Kubernetes objects), or None."""
    for tier in (is_marked_active, _is_incumbent, lambda _: True):
        candidates = [book for book in books if tier(book)]
        if candidates:
            # Newest first; among equals, namespace then name ascending.
            candidates.sort(key=lambda b: (_meta(b).get("namespace", ""), _meta(b).get("name", "")))
            candidates.sort(key=lambda b: str(_meta(b).get("creationTimestamp", "")), reverse=True)
            return candidates[0]
    return None


def parse_pricebook(obj: Mapping[str, Any]) -> PriceBook:
    """Validate a PriceBook object; ``InvalidInput`` names the first bad field."""
    meta = _meta(obj)
    where = f"PriceBook {meta.get('namespace', '')}/{meta.get('name', '')}"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidInput(f"{where}: spec is missing")
    currency = spec.get("currency")
    if not (isinstance(currency, str) and len(currency) == 3 and currency.isascii() and currency.isupper()):
        raise InvalidInput(f"{where}: spec.currency must be a three-letter ISO 4217 code, got {currency!r}")
    mode = spec.get("valuationMode", "currency")
    if mode != "currency":
        raise InvalidInput(f"{where}: spec.valuationMode {mode!r} cannot price usage (only 'currency' can)")
    rates = spec.get("rates")
    if not isinstance(rates, Mapping) or not rates:
        raise InvalidInput(f"{where}: spec.rates is missing; a book without rates cannot price usage")
    unknown = sorted(set(rates) - set(RATE_FIELDS))
    if unknown:
        raise InvalidInput(f"{where}: spec.rates.{unknown[0]} is not a known rate ({', '.join(RATE_FIELDS)})")
    exact = {field: parse_rate(f"{where}: spec.rates.{field}", rates.get(field)) for field in RATE_FIELDS}
    return PriceBook(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        currency=currency,
        valuation_mode=mode,
        rates=exact,
    )


# OpenCost's custom-pricing document (default.json): key -> the PriceBook rate it comes from.
OPENCOST_KEYS = {
    "CPU": "cpuHour",
    "spotCPU": "spotCPUHour",
    "RAM": "ramGbHour",
    "spotRAM": "spotRAMGbHour",
    "GPU": "gpuHour",
    "storage": "pvGbHour",
    "zoneNetworkEgress": "networkGiB",
    "regionNetworkEgress": "networkGiB",
    "internetNetworkEgress": "networkGiB",
}


def opencost_pricing(obj: Mapping[str, Any]) -> dict[str, str]:
    """The active book as OpenCost's ``default.json``: every value a string, unset rates "0".

    The rates are the book's own decimal strings (validated by ``parse_pricebook`` first), not
    micros: OpenCost's storage price has more than six decimals (0.00005479452 per GiB-hour).
    """
    rates = (obj.get("spec") or {}).get("rates") or {}
    document = {"provider": "custom", "description": f"Pricebook from: {_meta(obj).get('name', '')}"}
    for key, field in OPENCOST_KEYS.items():
        value = rates.get(field)
        document[key] = str(value) if value not in (None, "") else "0"
    return document
