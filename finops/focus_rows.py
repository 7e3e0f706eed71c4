"""One FOCUS row of the chargeback export: the versions and their columns, and how a row's fields
are written (``finops.focus`` says what each row stands for and builds the ``Draft`` rows).

A row carries every column of its version, FOCUS's in the specification's (alphabetical) order,
then ours (``x_``); a column we have no value for is null (an empty string here and in CSV).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from enum import StrEnum
from fractions import Fraction

from finops.commitments import contract_of
from finops.lines import LineId
from finops.periods import Period
from finops.policy import Policy


class FocusVersion(StrEnum):
    V1_2 = "1.2"
    V1_3 = "1.3"


_FOCUS_1_2 = (
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingAccountType",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "CapacityReservationId",
    "CapacityReservationStatus",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "CommitmentDiscountUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceId",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingCurrency",
    "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceSubcategory",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    "Tags",
)
_ADDED_IN_1_3 = (
    "AllocatedMethodDetails",
    "AllocatedMethodId",
    "AllocatedResourceId",
    "AllocatedResourceName",
    "AllocatedTags",
    "ContractApplied",
    "HostProviderName",
    "ServiceProviderName",
)
CUSTOM = (
    *("x_Cluster", "x_Owner", "x_LineKind", "x_AllocatedCost", "x_IdleCost", "x_SharedCost", "x_CoreHours"),
    *("x_GpuHours", "x_GpuModel", "x_CarbonGramsCO2e"),
)
COLUMNS: dict[FocusVersion, tuple[str, ...]] = {
    FocusVersion.V1_2: _FOCUS_1_2 + CUSTOM,
    FocusVersion.V1_3: tuple(sorted(_FOCUS_1_2 + _ADDED_IN_1_3)) + CUSTOM,
}
# The type of each FOCUS column that is not a string (Parquet writes them as such).
DECIMALS = frozenset(
    {
        "BilledCost",
        "CommitmentDiscountQuantity",
        "ConsumedQuantity",
        "ContractedCost",
        "ContractedUnitPrice",
        "EffectiveCost",
        "ListCost",
        "ListUnitPrice",
        "PricingCurrencyContractedUnitPrice",
        "PricingCurrencyEffectiveCost",
        "PricingCurrencyListUnitPrice",
        "PricingQuantity",
        "x_AllocatedCost",
        "x_IdleCost",
        "x_SharedCost",
        "x_CoreHours",
        "x_GpuHours",
        "x_CarbonGramsCO2e",
    }
)
DATETIMES = frozenset({"BillingPeriodEnd", "BillingPeriodStart", "ChargePeriodEnd", "ChargePeriodStart"})

CORE_HOURS = "Core-Hours"  # FOCUS unit format: <singular unit>-<plural time unit>
CLOUD_ACCOUNT = ("__cloud__", "cloud spend")
_QUANTITY = Decimal("0.000001")


@dataclass(frozen=True)
class Split:
    """A row's share of the origin charge it splits (FOCUS 1.3's ``Allocated`` columns): the
    method, the namespace or line it goes to (None: the unallocated portion), that recipient's
    tags and the core-hours the method measured."""

    method: str
    resource: str | None
    resource_name: str | None
    tags: dict[str, str]
    usage: Decimal | None = None


@dataclass(frozen=True)
class Extras:
    """What a row measured beside its money: its GPU-hours, its grams CO2e and, on GPU idle, the
    GPU model (``x_GpuHours``, ``x_CarbonGramsCO2e``, ``x_GpuModel``); None: not measured."""

    gpu_hours: Decimal | None = None
    grams: int | None = None
    gpu_model: str | None = None


@dataclass
class Draft:
    """A row before rounding: its line, exact [allocated, idle, shared] in micros, its fields;
    ``category``: its ChargeCategory and ChargeFrequency (default: usage when it has core-hours);
    ``split`` and ``ratio``: its share of an origin charge (1.3's split rows)."""

    line: LineId
    exact: list[Fraction]
    start: datetime
    end: datetime
    cluster: str
    resource: str
    resource_name: str
    resource_type: str
    description: str
    tags: dict[str, str]
    quantity: Decimal | None = None
    service: tuple[str, str, str] = ("Compute", "Containers", "Kubernetes")
    category: tuple[str, str] | None = None
    split: Split | None = None
    ratio: Decimal | None = None
    cents: list[int] = field(default_factory=lambda: [0, 0, 0])
    applied: dict[str, int] = field(default_factory=dict)  # cents of the row each commitment covered
    extras: Extras | None = None


def _money(cents: int) -> str:
    return str(Decimal(cents).scaleb(-2))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _quantity(value: Decimal) -> str:
    return f"{value.quantize(_QUANTITY, rounding=ROUND_HALF_EVEN).normalize():f}"


def record(draft: Draft, policy: Policy, period: Period, issuer: str, version: FocusVersion) -> dict[str, str]:
    """The row in ``version``'s columns (``COLUMNS[version]``), null fields as empty strings."""
    billed = _money(sum(draft.cents))
    service_category, subcategory, service = draft.service
    charge, frequency = draft.category or (
        ("Adjustment", "Recurring") if draft.quantity is None else ("Usage", "Usage-Based")
    )
    if draft.cluster:
        account, account_name, account_type = draft.cluster, draft.cluster, "Kubernetes Cluster"
        provider, publisher = issuer, "Kubernetes"
    else:  # cloud spend
        (account, account_name), account_type = CLOUD_ACCOUNT, "Cloud Spend"
        provider, publisher = "Cloud", "Cloud"
    fields = {
        "BilledCost": billed,
        "BillingAccountId": account,
        "BillingAccountName": account_name,
        "BillingAccountType": account_type,
        "BillingCurrency": policy.currency,
        "BillingPeriodEnd": _iso(period.end),
        "BillingPeriodStart": _iso(period.start),
        "ChargeCategory": charge,
        "ChargeDescription": draft.description,
        "ChargeFrequency": frequency,
        "ChargePeriodEnd": _iso(draft.end),
        "ChargePeriodStart": _iso(draft.start),
        "ContractedCost": billed,
        "EffectiveCost": billed,
        "HostProviderName": provider,
        "InvoiceIssuerName": issuer,
        "ListCost": billed,
        "ProviderName": provider,
        "PublisherName": publisher,
        "ResourceId": draft.resource,
        "ResourceName": draft.resource_name,
        "ResourceType": draft.resource_type,
        "ServiceCategory": service_category,
        "ServiceName": service,
        "ServiceProviderName": provider,
        "ServiceSubcategory": subcategory,
        "SubAccountId": draft.cluster,
        "SubAccountName": draft.cluster,
        "SubAccountType": "Kubernetes Cluster" if draft.cluster else "",
        "Tags": json.dumps(draft.tags, sort_keys=True, separators=(",", ":")),
        "x_Cluster": draft.cluster,
        "x_Owner": draft.line[1],
        "x_LineKind": draft.line[0].value,
        "x_AllocatedCost": _money(draft.cents[0]),
        "x_IdleCost": _money(draft.cents[1]),
        "x_SharedCost": _money(draft.cents[2]),
    }
    if draft.quantity is not None:
        quantity = _quantity(draft.quantity)
        fields["x_CoreHours"] = quantity
        if version is FocusVersion.V1_2:  # 1.3: null without a SkuPriceId, and we publish no price list
            fields |= {"PricingQuantity": quantity, "ConsumedQuantity": quantity}
            fields |= {"PricingUnit": CORE_HOURS, "ConsumedUnit": CORE_HOURS, "PricingCategory": "Standard"}
    if draft.extras is not None:
        fields |= _extras(draft.extras)
    if draft.split is not None and draft.ratio is not None:
        fields |= _allocation(draft.split, draft.ratio)
    if draft.applied and version is FocusVersion.V1_3:
        fields["ContractApplied"] = _contract_applied(draft.applied, policy)
    return {name: fields.get(name, "") for name in COLUMNS[version]}


def _extras(extras: Extras) -> dict[str, str]:
    fields = {}
    if extras.gpu_hours is not None:
        fields["x_GpuHours"] = _quantity(extras.gpu_hours)
    if extras.grams is not None:
        fields["x_CarbonGramsCO2e"] = str(extras.grams)
    if extras.gpu_model is not None:
        fields["x_GpuModel"] = extras.gpu_model
    return fields


def _allocation(split: Split, ratio: Decimal) -> dict[str, str]:
    """The ``Allocated`` columns; AllocatedMethodDetails' numbers written exactly (JSON numbers in
    decimal, never through a float)."""
    element = f'"AllocatedRatio":{ratio.normalize():f}'
    if split.usage is not None:
        element += f',"UsageUnit":"{CORE_HOURS}","UsageQuantity":{_quantity(split.usage)}'
    fields = {"AllocatedMethodId": split.method, "AllocatedMethodDetails": '{"Elements":[{' + element + "}]}"}
    if split.resource is not None:
        fields |= {"AllocatedResourceId": split.resource, "AllocatedResourceName": split.resource_name or ""}
    if split.tags:
        fields["AllocatedTags"] = json.dumps(split.tags, sort_keys=True, separators=(",", ":"))
    return fields


def _contract_applied(applied: dict[str, int], policy: Policy) -> str:
    """``ContractApplied``: per commitment (``finops.commitments``), its contract and the row's
    part of the cost it covered, in the billing currency (a JSON number written exactly)."""
    elements = []
    for ident, cents in sorted(applied.items()):
        commitment = contract_of(policy.reconciliation.commitments, ident)
        names = json.dumps(commitment.contract), json.dumps(commitment.id)
        elements.append(
            f'{{"ContractID":{names[0]},"ContractCommitmentID":{names[1]},"ContractCommitmentAppliedCost":{_money(cents)}}}'
        )
    return '{"Elements":[' + ",".join(elements) + "]}"
