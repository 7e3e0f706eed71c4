"""Where a cluster's prices come from: the active PriceBook, or OpenCost's own figures.

Most clusters price with the cloud's list prices (or a custom pricing file) that OpenCost already
applies. With the ``opencost`` source OpenCost's figures are authoritative: rows are stamped with
a pricing version of that source and the currency the operator declares, exactly as a book's rows
are, so every report works unchanged; no PriceBook is needed, and none is rendered into OpenCost.

Who declares it:

1. the ``default`` FinOpsProvider, when it exists: its one block whose ``pricingModelSource`` is
   ``Pricebook`` keeps the PriceBook path; any other block means OpenCost's prices, in the
   block's ``currency`` (required then);
2. else the settings: ``PRICING_SOURCE`` (``pricebook``, the default, or ``opencost``) and
   ``PRICING_CURRENCY`` (required with ``opencost``).

A declaration that cannot be used is an ``InvalidInput`` naming the field or variable: a run never
falls back to another source, and never stores rows unpriced because of it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from finops.errors import InvalidInput

PRICEBOOK, OPENCOST = "pricebook", "opencost"
Source = Literal["pricebook", "opencost"]
SOURCES: tuple[Source, ...] = ("pricebook", "opencost")
PROVIDER_BLOCKS = ("awsoptions", "gcpoptions", "azureoptions", "onpremoptions")
PROVIDER_NAME = "default"  # the FinOpsProvider singleton
_CURRENCY = re.compile(r"[A-Z]{3}")


@dataclass(frozen=True)
class Setting:
    """``PRICING_SOURCE`` and ``PRICING_CURRENCY``: what decides when there is no FinOpsProvider."""

    source: str = PRICEBOOK
    currency: str | None = None


@dataclass(frozen=True)
class Declaration:
    """The declared pricing source; ``currency`` is set for ``opencost`` only (a book has its own)."""

    source: Source
    currency: str | None
    declared_by: str  # "FinOpsProvider default" or "PRICING_SOURCE"

    @property
    def label(self) -> str:
        """What rows priced this way are stored under (the pricing version's name)."""
        return f"opencost ({self.declared_by})"

    @property
    def fingerprint(self) -> str:
        """A digest of (source, currency): a change of either is a new pricing version."""
        document = {"source": self.source, "currency": self.currency}
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


def check_currency(value: object, field: str) -> str:
    """``value`` as a currency code, else ``InvalidInput`` naming ``field``."""
    if value is None or value == "":
        raise InvalidInput(f"{field}: required when prices come from OpenCost (a currency code such as USD)")
    if not isinstance(value, str) or not _CURRENCY.fullmatch(value):
        raise InvalidInput(f"{field}: not a three-letter ISO 4217 currency code in capitals (such as USD)")
    return value


def declare(provider: Mapping[str, Any] | None, setting: Setting) -> Declaration:
    """The pricing declared by the ``default`` FinOpsProvider (``provider``, a raw object, or None
    when there is none), else by the settings ``PRICING_SOURCE``/``PRICING_CURRENCY``."""
    if provider is None:
        if setting.source not in SOURCES:
            raise InvalidInput(f"PRICING_SOURCE: {setting.source!r} is not one of {', '.join(SOURCES)}")
        if setting.source == PRICEBOOK:
            return Declaration("pricebook", None, "PRICING_SOURCE")
        return Declaration("opencost", check_currency(setting.currency, "PRICING_CURRENCY"), "PRICING_SOURCE")
    spec = provider.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    blocks = [name for name in PROVIDER_BLOCKS if spec.get(name) is not None]  # set, even empty (as CEL has())
    if len(blocks) != 1:
        raise InvalidInput(f"FinOpsProvider {PROVIDER_NAME}: spec must set exactly one of {', '.join(PROVIDER_BLOCKS)}")
    block = spec[blocks[0]]
    if not isinstance(block, Mapping):
        raise InvalidInput(f"FinOpsProvider {PROVIDER_NAME}: spec.{blocks[0]} must be an object")
    by = f"FinOpsProvider {PROVIDER_NAME}"
    if block.get("pricingModelSource") == "Pricebook":
        return Declaration("pricebook", None, by)
    return Declaration("opencost", check_currency(block.get("currency"), f"{by}: spec.{blocks[0]}.currency"), by)
