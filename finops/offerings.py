"""Offerings: resolving their published prices against the active PriceBook.

Unlike the operator, whose ``resolvedPricing`` was resolved once and drifted from what was
charged after a rate change, the resolution records the PriceBook version (its fingerprint) it
used and is redone whenever the active book changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from finops.conditions import rfc3339
from finops.errors import InvalidInput
from finops.money import from_micros
from finops.pricebooks import PriceBook
from finops.subscriptions import Obj, Ref, is_ready, ref_of, reference
from finops.usage import Meter, parse_margin, price


@dataclass(frozen=True)
class Resolution:
    ready: bool
    reason: str
    message: str
    pricing: dict[str, Any] | None = None


def resolve(offering: Obj, book: PriceBook | None, offerings: Mapping[Ref, Obj], *, now: datetime) -> Resolution:
    """Ready and priced, or the documented reason it is not."""
    spec = offering.get("spec") or {}
    pricing = spec.get("pricing")
    if not isinstance(pricing, Mapping):
        return Resolution(False, "ValidationError", "spec.pricing is required")
    namespace = ref_of(offering)[0]
    cycle = _cycle(offering, offerings)
    if cycle:
        return Resolution(False, "CircularDependencyDetected", f"required offerings form a cycle: {cycle}")
    for need in (spec.get("compatibility") or {}).get("requiredOfferings") or []:
        wanted = reference(need, namespace)
        other = offerings.get(wanted) if wanted else None
        if other is None:
            return Resolution(False, "RequiredOfferingNotFound", f"required Offering {wanted} not found")
        if not is_ready(other):
            return Resolution(False, "RequiredOfferingNotReady", f"required Offering {wanted} is not ready")
    meters = []
    try:
        for index, item in enumerate(pricing.get("resourcePricing") or []):
            name = item.get("name")
            margin = parse_margin(item.get("margins"), field=f"spec.pricing.resourcePricing[{index}].margins")
            if name == "subscription":
                fee = (pricing.get("subscriptionFee") or {}).get("priceMicros", 0)
                meters.append({"name": name, "unitPriceMicros": round(price(from_micros(int(fee)), margin))})
                continue
            if book is None:
                return Resolution(False, "NoActivePricebook", "no active, valid PriceBook to price metered usage")
            meter = Meter(name)
            # The CRD's unitPriceMicros is an integer: the published price is rounded half-even, for
            # display only. Charges use each row's exact price (finops.usage), never this one.
            meters.append({"name": name, "unitPriceMicros": round(price(book.rates[meter.rate_field], margin))})
    except (InvalidInput, ValueError) as exc:
        return Resolution(False, "ValidationError", str(exc))
    resolved: dict[str, Any] = {"resolvedAt": rfc3339(now), "meters": meters}
    if book is not None:
        resolved["pricebook"] = {"namespace": book.namespace, "name": book.name, "fingerprint": book.fingerprint}
    if pricing.get("subscriptionFee"):
        resolved["subscriptionFee"] = dict(pricing["subscriptionFee"])
    return Resolution(True, "PricingResolved", "pricing resolved", resolved)


def needs_resolution(offering: Obj, book: PriceBook | None) -> bool:
    """True when never resolved, or resolved against another PriceBook version."""
    resolved = (offering.get("status") or {}).get("resolvedPricing")
    if not resolved:
        return True
    used = (resolved.get("pricebook") or {}).get("fingerprint")
    return used != (book.fingerprint if book else None)


def _cycle(offering: Obj, offerings: Mapping[Ref, Obj]) -> str | None:
    start = ref_of(offering)
    stack: list[tuple[Ref, list[Ref]]] = [(start, [start])]
    while stack:
        current, path = stack.pop()
        obj = offerings.get(current) if current != start else offering
        for need in ((obj or {}).get("spec") or {}).get("compatibility", {}).get("requiredOfferings") or []:
            nxt = reference(need, current[0])
            if nxt is None:
                continue
            if nxt == start:
                return " -> ".join(f"{ns}/{name}" for ns, name in [*path, nxt])
            if nxt not in path:
                stack.append((nxt, [*path, nxt]))
    return None
