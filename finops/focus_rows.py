"""One FOCUS 1.2 row of the chargeback export: the columns, and how a row's fields are written
(``finops.focus`` says what each row stands for and builds the ``Draft`` rows from a report)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from finops.lines import LineId
from finops.periods import Period
from finops.policy import Policy

COLUMNS = (
    "BillingAccountId",
    "BillingAccountName",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "BillingCurrency",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "PricingQuantity",
    "PricingUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ProviderName",
    "PublisherName",
    "InvoiceIssuerName",
    "ResourceId",
    "ResourceName",
    "SubAccountId",
    "ServiceCategory",
    "ServiceName",
    "Tags",
    "x_Cluster",
    "x_Owner",
    "x_LineKind",
    "x_AllocatedCost",
    "x_IdleCost",
    "x_SharedCost",
)
CORE_HOURS = "Core-Hours"  # FOCUS unit format: <singular unit>-<plural time unit>
CLOUD_ACCOUNT = ("__cloud__", "cloud spend")
_QUANTITY = Decimal("0.000001")


@dataclass
class Draft:
    """A row before rounding: its line, exact [allocated, idle, shared] in micros, its fields."""

    line: LineId
    exact: list[Fraction]
    start: datetime
    end: datetime
    cluster: str
    resource: str
    resource_name: str
    description: str
    tags: dict[str, str]
    quantity: Decimal | None = None
    service: tuple[str, str] = ("Compute", "Kubernetes")
    cents: list[int] = field(default_factory=lambda: [0, 0, 0])


def _money(cents: int) -> str:
    return str(Decimal(cents).scaleb(-2))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _quantity(value: Decimal) -> str:
    return f"{value.quantize(_QUANTITY, rounding=ROUND_HALF_EVEN).normalize():f}"


def record(draft: Draft, policy: Policy, period: Period, issuer: str) -> dict[str, str]:
    billed = _money(sum(draft.cents))
    category, service = draft.service
    quantity = "" if draft.quantity is None else _quantity(draft.quantity)
    unit = "" if draft.quantity is None else CORE_HOURS
    if draft.cluster:
        account, account_name, provider, publisher = draft.cluster, draft.cluster, issuer, "Kubernetes"
    else:  # cloud spend
        (account, account_name), provider, publisher = CLOUD_ACCOUNT, "Cloud", "Cloud"
    return {
        "BillingAccountId": account,
        "BillingAccountName": account_name,
        "BillingPeriodStart": _iso(period.start),
        "BillingPeriodEnd": _iso(period.end),
        "ChargePeriodStart": _iso(draft.start),
        "ChargePeriodEnd": _iso(draft.end),
        "BilledCost": billed,
        "EffectiveCost": billed,
        "ListCost": billed,
        "ContractedCost": billed,
        "BillingCurrency": policy.currency,
        "ChargeCategory": "Adjustment" if draft.quantity is None else "Usage",
        "ChargeClass": "",
        "ChargeDescription": draft.description,
        "PricingQuantity": quantity,
        "PricingUnit": unit,
        "ConsumedQuantity": quantity,
        "ConsumedUnit": unit,
        "ProviderName": provider,
        "PublisherName": publisher,
        "InvoiceIssuerName": issuer,
        "ResourceId": draft.resource,
        "ResourceName": draft.resource_name,
        "SubAccountId": draft.cluster,
        "ServiceCategory": category,
        "ServiceName": service,
        "Tags": json.dumps(draft.tags, sort_keys=True, separators=(",", ":")),
        "x_Cluster": draft.cluster,
        "x_Owner": draft.line[1],
        "x_LineKind": draft.line[0].value,
        "x_AllocatedCost": _money(draft.cents[0]),
        "x_IdleCost": _money(draft.cents[1]),
        "x_SharedCost": _money(draft.cents[2]),
    }
