"""A FOCUS 1.2 and 1.3 conformance checker for rows as CSV gives them (strings, empty = null),
written from the specification's column definitions (FinOps Open Cost and Usage Specification 1.2
and 1.3, ``specification/columns/*.md`` and ``specification/attributes/*.md``), not from our
exporter: tests run it on what we export. The version is an argument (default 1.3); 1.3 is 1.2's
columns and rules plus those listed under ``ADDED_IN_1_3``.

What it checks, each finding naming the row (1 = the first after the header) and the column:

- presence: every Mandatory column of 1.2 is in the header; a column that is neither a 1.2 column
  nor prefixed ``x_`` (custom columns) is refused; custom columns come after FOCUS's;
- nullability: a column that does not allow nulls has a value; a CSV has no null type, so an empty
  field is null, and a field of spaces only is refused everywhere (neither a value nor a null);
- types and formats: Decimal columns in numeric format (no sign for positives, no thousands
  separators, ``E`` notation with a sign only for negative exponents); Date/Time columns as
  ``YYYY-MM-DDTHH:mm:ssZ``; currency columns as a three-letter capital code; JSON key-value
  columns as an object of scalar values with unique keys;
- allowed values: ``ChargeCategory``, ``ChargeClass``, ``ServiceCategory`` (and ``ChargeFrequency``
  when present);
- conditional rules: ``PricingQuantity`` null for taxes and not null for usage and purchases
  (not corrections), ``PricingUnit`` null exactly when ``PricingQuantity`` is;
  ``ConsumedQuantity`` null unless usage, not null for usage (not corrections, not unused
  commitments), ``ConsumedUnit`` null exactly when ``ConsumedQuantity`` is;
- cost agreement: ``ListCost`` = ``ListUnitPrice`` x ``PricingQuantity`` and ``ContractedCost`` =
  ``ContractedUnitPrice`` x ``PricingQuantity`` when both are given (not corrections), to the
  cost's own precision (a cost is written rounded: within half a unit of its last place); without a
  unit price, a charge that is not a tax (taxes derive from other charges) has ``ListCost`` and
  ``ContractedCost`` equal to ``BilledCost``; ``EffectiveCost`` equals ``BilledCost`` for charges
  other than usage, purchases and taxes;
- periods: start before the exclusive end, for the charge and the billing period.

Approximations, stated: the spec's "unrelated to other charges" is read as "not a tax"; only the
currency code's shape is checked (no ISO 4217 table); unit formats are a SHOULD and not checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext

VERSIONS = ("1.2", "1.3")


@dataclass(frozen=True)
class Column:
    kind: str  # "string" | "decimal" | "datetime" | "currency" | "json" (key-value) | "details"
    nullable: bool
    mandatory: bool = False
    allowed: frozenset[str] | None = None


def _values(*names: str) -> frozenset[str]:
    return frozenset(names)


CHARGE_CATEGORIES = _values("Usage", "Purchase", "Tax", "Credit", "Adjustment")
SERVICE_CATEGORIES = _values(
    "AI and Machine Learning",
    "Analytics",
    "Business Applications",
    "Compute",
    "Databases",
    "Developer Tools",
    "Multicloud",
    "Identity",
    "Integration",
    "Internet of Things",
    "Management and Governance",
    "Media",
    "Migration",
    "Mobile",
    "Networking",
    "Security",
    "Storage",
    "Web",
    "Other",
)

# ServiceSubcategory's values under each ServiceCategory (the same in 1.2 and 1.3); every category
# also has "Other (<category>)".
_SUBCATEGORIES = {
    "AI and Machine Learning": "AI Platforms|Bots|Generative AI|Machine Learning|Natural Language Processing",
    "Analytics": "Analytics Platforms|Business Intelligence|Data Processing|Search|Streaming Analytics",
    "Business Applications": "Productivity and Collaboration",
    "Compute": "Containers|End User Computing|Quantum Compute|Serverless Compute|Virtual Machines",
    "Databases": "Caching|Data Warehouses|Ledger Databases|NoSQL Databases|Relational Databases|Time Series Databases",
    "Developer Tools": "Developer Platforms|Continuous Integration and Deployment|Development Environments"
    "|Source Code Management|Quality Assurance",
    "Identity": "Identity and Access Management",
    "Integration": "API Management|Messaging|Workflow Orchestration",
    "Internet of Things": "IoT Analytics|IoT Platforms",
    "Management and Governance": "Architecture|Compliance|Cost Management|Data Governance|Disaster Recovery"
    "|Endpoint Management|Observability|Support",
    "Media": "Content Creation|Gaming|Media Streaming|Mixed Reality",
    "Migration": "Data Migration|Resource Migration",
    "Mobile": "",
    "Multicloud": "Multicloud Integration",
    "Networking": "Application Networking|Content Delivery|Network Connectivity|Network Infrastructure"
    "|Network Routing|Network Security",
    "Security": "Secret Management|Security Posture Management|Threat Detection and Response",
    "Storage": "Backup Storage|Block Storage|File Storage|Object Storage|Storage Platforms",
    "Web": "Application Platforms",
    "Other": "",
}
SUBCATEGORIES = {
    category: frozenset([*filter(None, names.split("|")), f"Other ({category})"])
    for category, names in _SUBCATEGORIES.items()
}

# Every column of FOCUS 1.2 with its data type and whether it allows nulls; Mandatory ones marked.
COLUMNS: dict[str, Column] = {
    "AvailabilityZone": Column("string", True),
    "BilledCost": Column("decimal", False, True),
    "BillingAccountId": Column("string", False, True),
    "BillingAccountName": Column("string", True, True),
    "BillingAccountType": Column("string", False),
    "BillingCurrency": Column("currency", False, True),
    "BillingPeriodEnd": Column("datetime", False, True),
    "BillingPeriodStart": Column("datetime", False, True),
    "CapacityReservationId": Column("string", True),
    "CapacityReservationStatus": Column("string", True, allowed=_values("Used", "Unused")),
    "ChargeCategory": Column("string", False, True, CHARGE_CATEGORIES),
    "ChargeClass": Column("string", True, True, _values("Correction")),
    "ChargeDescription": Column("string", True, True),
    "ChargeFrequency": Column("string", False, allowed=_values("One-Time", "Recurring", "Usage-Based")),
    "ChargePeriodEnd": Column("datetime", False, True),
    "ChargePeriodStart": Column("datetime", False, True),
    "CommitmentDiscountCategory": Column("string", True, allowed=_values("Spend", "Usage")),
    "CommitmentDiscountId": Column("string", True),
    "CommitmentDiscountName": Column("string", True),
    "CommitmentDiscountQuantity": Column("decimal", True),
    "CommitmentDiscountStatus": Column("string", True, allowed=_values("Used", "Unused")),
    "CommitmentDiscountType": Column("string", True),
    "CommitmentDiscountUnit": Column("string", True),
    "ConsumedQuantity": Column("decimal", True),
    "ConsumedUnit": Column("string", True),
    "ContractedCost": Column("decimal", False, True),
    "ContractedUnitPrice": Column("decimal", True),
    "EffectiveCost": Column("decimal", False, True),
    "InvoiceId": Column("string", True),
    "InvoiceIssuerName": Column("string", False, True),
    "ListCost": Column("decimal", False, True),
    "ListUnitPrice": Column("decimal", True),
    "PricingCategory": Column("string", True, allowed=_values("Standard", "Dynamic", "Committed", "Other")),
    "PricingCurrency": Column("currency", True),
    "PricingCurrencyContractedUnitPrice": Column("decimal", True),
    "PricingCurrencyEffectiveCost": Column("decimal", True),
    "PricingCurrencyListUnitPrice": Column("decimal", True),
    "PricingQuantity": Column("decimal", True, True),
    "PricingUnit": Column("string", True, True),
    "ProviderName": Column("string", False, True),
    "PublisherName": Column("string", False, True),
    "RegionId": Column("string", True),
    "RegionName": Column("string", True),
    "ResourceId": Column("string", True),
    "ResourceName": Column("string", True),
    "ResourceType": Column("string", True),
    "ServiceCategory": Column("string", False, True, SERVICE_CATEGORIES),
    "ServiceName": Column("string", False, True),
    "ServiceSubcategory": Column("string", False, allowed=frozenset().union(*SUBCATEGORIES.values())),
    "SkuId": Column("string", True),
    "SkuMeter": Column("string", True),
    "SkuPriceDetails": Column("json", True),
    "SkuPriceId": Column("string", True),
    "SubAccountId": Column("string", True),
    "SubAccountName": Column("string", True),
    "SubAccountType": Column("string", True),
    "Tags": Column("json", True),
}
# FOCUS 1.3's new columns (ProviderName and PublisherName are deprecated there, still Mandatory).
ADDED_IN_1_3: dict[str, Column] = {
    "AllocatedMethodDetails": Column("details", True),
    "AllocatedMethodId": Column("string", True),
    "AllocatedResourceId": Column("string", True),
    "AllocatedResourceName": Column("string", True),
    "AllocatedTags": Column("json", True),
    "ContractApplied": Column("contract", True),
    "HostProviderName": Column("string", False, True),
    "ServiceProviderName": Column("string", False, True),
}
SPEC: dict[str, dict[str, Column]] = {"1.2": COLUMNS, "1.3": COLUMNS | ADDED_IN_1_3}
MANDATORY = tuple(name for name, column in COLUMNS.items() if column.mandatory)


def mandatory(version: str = "1.3") -> tuple[str, ...]:
    return tuple(name for name, column in SPEC[version].items() if column.mandatory)


_NUMBER = re.compile(r"^-?(\d+(\.\d+)?|\.\d+)(E-?\d+)?$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")


def check_header(header: Sequence[str], version: str = "1.3") -> list[str]:
    """Findings about the columns themselves."""
    spec = SPEC[version]
    findings = [f"header: Mandatory column {name} is missing" for name in mandatory(version) if name not in header]
    seen_custom = False
    for name in header:
        if name.startswith("x_"):
            seen_custom = True
        elif name not in spec:
            findings.append(f"header: {name} is not a FOCUS {version} column and not prefixed x_")
        elif seen_custom:
            findings.append(f"header: FOCUS column {name} comes after custom columns")
    if len(set(header)) != len(header):
        findings.append("header: a column appears twice")
    return findings


def check_rows(header: Sequence[str], rows: Iterable[Mapping[str, str]], version: str = "1.3") -> list[str]:
    """Every finding in the header and the rows; an empty list means the data conforms."""
    findings = check_header(header, version)
    for number, row in enumerate(rows, start=1):
        findings.extend(f"row {number}, {finding}" for finding in _check_row(row, version))
    return findings


def _value(row: Mapping[str, str], name: str) -> str | None:
    """The field, or None when null (empty or absent)."""
    value = row.get(name)
    return value if value else None


def _check_row(row: Mapping[str, str], version: str) -> list[str]:
    findings: list[str] = []
    for name, text in row.items():
        column = SPEC[version].get(name)
        if column is None:
            continue
        if text and not text.strip():
            findings.append(f"column {name}: only spaces")
            continue
        if not text:
            if not column.nullable:
                findings.append(f"column {name}: null in a column that does not allow nulls")
            continue
        problem = _format_problem(column, text)
        if problem:
            findings.append(f"column {name}: {text!r} {problem}")
    if findings:
        return findings  # the rules below need well-formed values
    return _check_rules(row, version)


def _format_problem(column: Column, text: str) -> str | None:
    if column.kind == "decimal" and not _NUMBER.match(text):
        return "is not in FOCUS numeric format"
    if column.kind == "datetime":
        if not _DATETIME.match(text):
            return "is not YYYY-MM-DDTHH:mm:ssZ"
        try:
            datetime.fromisoformat(text)
        except ValueError:
            return "is not a valid date and time"
    if column.kind == "currency" and not _CURRENCY.match(text):
        return "is not a three-letter currency code"
    if column.kind == "json":
        return _key_value_problem(text)
    if column.kind in ("details", "contract"):
        return _elements_problem(text, column.kind)
    if column.allowed is not None and text not in column.allowed:
        return f"is not one of the allowed values {sorted(column.allowed)}"
    return None


def _key_value_problem(text: str) -> str | None:
    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [key for key, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate key")
        return dict(pairs)

    try:
        value = json.loads(text, object_pairs_hook=unique)
    except ValueError as exc:
        return f"is not a JSON object with unique keys ({exc})"
    if not isinstance(value, dict):
        return "is not a JSON object"
    if any(isinstance(item, dict | list) for item in value.values()):
        return "has a value that is an object or an array"
    return None


def _elements_problem(text: str, kind: str) -> str | None:
    """JsonObjectFormat with an ``Elements`` array of key-value objects: AllocatedMethodDetails'
    elements have a numeric ``AllocatedRatio`` (``UsageUnit`` given with ``UsageQuantity``),
    ContractApplied's a ``ContractID`` and a ``ContractCommitmentID``."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"is not JSON ({exc})"
    elements = value.get("Elements") if isinstance(value, dict) else None
    if not isinstance(elements, list) or not elements:
        return "has no Elements array"
    for element in elements:
        if not isinstance(element, dict) or any(isinstance(v, dict | list) for v in element.values()):
            return "has an element that is not a key-value object"
        if kind == "details":
            if not isinstance(element.get("AllocatedRatio"), int | float):
                return "has an element without a numeric AllocatedRatio"
            if ("UsageQuantity" in element) and not isinstance(element.get("UsageUnit"), str):
                return "has a UsageQuantity without a UsageUnit"
        elif not all(isinstance(element.get(key), str) for key in ("ContractID", "ContractCommitmentID")):
            return "has an element without ContractID and ContractCommitmentID"
    return None


def _null_together(row: Mapping[str, str], name: str, anchor: str) -> list[str]:
    """``name`` is null exactly when ``anchor`` is (both columns present)."""
    if name in row and anchor in row and (_value(row, name) is None) != (_value(row, anchor) is None):
        return [f"column {name}: must be null exactly when {anchor} is null"]
    return []


def _matches(product: Decimal, cost: Decimal) -> bool:
    """The product rounds to the cost at the cost's own precision (a cost is written rounded)."""
    with localcontext() as context:
        context.prec = 60
        exponent = cost.as_tuple().exponent
        places = min(exponent, 0) if isinstance(exponent, int) else 0
        return (product - cost).copy_abs() <= Decimal(5).scaleb(places - 1)


# FOCUS 1.3: these are null when SkuPriceId is (and 1.2's not-null rules for usage then yield).
_NULL_WITHOUT_SKU_PRICE = (
    "PricingQuantity",
    "ConsumedQuantity",
    "PricingCategory",
    "CommitmentDiscountQuantity",
    "ListUnitPrice",
    "ContractedUnitPrice",
    "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyListUnitPrice",
)


def _check_rules(row: Mapping[str, str], version: str) -> list[str]:
    findings: list[str] = []
    category = _value(row, "ChargeCategory")
    correction = _value(row, "ChargeClass") == "Correction"
    quantity = _value(row, "PricingQuantity")
    no_sku_price = version == "1.3" and _value(row, "SkuPriceId") is None
    if no_sku_price:
        findings.extend(
            f"column {name}: must be null when SkuPriceId is null (1.3)"
            for name in _NULL_WITHOUT_SKU_PRICE
            if _value(row, name) is not None
        )
    if category == "Tax" and quantity is not None:
        findings.append("column PricingQuantity: must be null when ChargeCategory is Tax")
    if category in ("Usage", "Purchase") and not correction and quantity is None and not no_sku_price:
        findings.append(f"column PricingQuantity: must not be null when ChargeCategory is {category}")
    if "PricingCategory" in row:
        pricing = _value(row, "PricingCategory")
        if category == "Tax" and pricing is not None:
            findings.append("column PricingCategory: must be null when ChargeCategory is Tax")
        if category in ("Usage", "Purchase") and not correction and pricing is None and not no_sku_price:
            findings.append(f"column PricingCategory: must not be null when ChargeCategory is {category}")
    if category == "Purchase" and _value(row, "ChargeFrequency") == "Usage-Based":
        findings.append("column ChargeFrequency: must not be Usage-Based when ChargeCategory is Purchase")
    service, subcategory = _value(row, "ServiceCategory"), _value(row, "ServiceSubcategory")
    if service in SUBCATEGORIES and subcategory is not None and subcategory not in SUBCATEGORIES[service]:
        findings.append(f"column ServiceSubcategory: {subcategory!r} is not a subcategory of {service}")
    findings += _null_together(row, "ResourceType", "ResourceId")
    findings += _null_together(row, "SubAccountName", "SubAccountId")
    findings += _null_together(row, "SubAccountType", "SubAccountId")
    findings += _null_together(row, "BillingAccountType", "BillingAccountId")
    for name, anchor in (
        ("SkuPriceDetails", "SkuPriceId"),
        ("CommitmentDiscountStatus", "CommitmentDiscountId"),
        ("CapacityReservationStatus", "CapacityReservationId"),
    ):
        if name in row and _value(row, anchor) is None and _value(row, name) is not None:
            findings.append(f"column {name}: must be null when {anchor} is null")
    if version == "1.3":
        findings += _allocation_rules(row)
    findings += _cost_rules(row, category, correction, quantity, no_sku_price)
    return findings


def _allocation_rules(row: Mapping[str, str]) -> list[str]:
    """1.3's split cost allocation and provider columns."""
    findings = _null_together(row, "AllocatedResourceName", "AllocatedResourceId")
    if _value(row, "AllocatedMethodId") is None:
        findings += [
            f"column {name}: must be null when the charge is not split (AllocatedMethodId null)"
            for name in ("AllocatedMethodDetails", "AllocatedResourceId", "AllocatedTags")
            if _value(row, name) is not None
        ]
    host, service = _value(row, "HostProviderName"), _value(row, "ServiceProviderName")
    if host is not None and host != service:
        findings.append(f"column HostProviderName: {host!r} differs from ServiceProviderName {service!r}")
    return findings


def _cost_rules(
    row: Mapping[str, str], category: str | None, correction: bool, quantity: str | None, no_sku_price: bool
) -> list[str]:
    findings: list[str] = []
    if (quantity is None) != (_value(row, "PricingUnit") is None):
        findings.append("column PricingUnit: must be null exactly when PricingQuantity is null")
    if "ConsumedQuantity" in row:
        consumed = _value(row, "ConsumedQuantity")
        unused = _value(row, "CommitmentDiscountStatus") == "Unused"
        if (category != "Usage" or unused) and consumed is not None:
            findings.append("column ConsumedQuantity: must be null unless ChargeCategory is Usage (not unused)")
        if category == "Usage" and not unused and not correction and consumed is None and not no_sku_price:
            findings.append("column ConsumedQuantity: must not be null when ChargeCategory is Usage")
        if (consumed is None) != (_value(row, "ConsumedUnit") is None):
            findings.append("column ConsumedUnit: must be null exactly when ConsumedQuantity is null")
    billed = Decimal(row["BilledCost"]) if _value(row, "BilledCost") else None
    for cost, price in (("ListCost", "ListUnitPrice"), ("ContractedCost", "ContractedUnitPrice")):
        amount, unit_price = _value(row, cost), _value(row, price)
        if amount is None:
            continue
        if unit_price is not None and quantity is not None and not correction:
            if not _matches(Decimal(unit_price) * Decimal(quantity), Decimal(amount)):
                findings.append(f"column {cost}: {amount} is not {price} x PricingQuantity")
        elif unit_price is None and category != "Tax" and billed is not None and Decimal(amount) != billed:
            findings.append(f"column {cost}: {amount} must match BilledCost {billed} without a {price}")
    effective = _value(row, "EffectiveCost")
    other = category not in ("Usage", "Purchase", "Tax")
    if other and effective is not None and billed is not None and Decimal(effective) != billed:
        findings.append(f"column EffectiveCost: {effective} must match BilledCost {billed} for {category}")
    for start, end in (("ChargePeriodStart", "ChargePeriodEnd"), ("BillingPeriodStart", "BillingPeriodEnd")):
        if _value(row, start) and _value(row, end) and row[end] < row[start]:
            findings.append(f"column {end}: before {start}")
    if _value(row, "BillingPeriodStart") and row["BillingPeriodStart"] == row.get("BillingPeriodEnd"):
        findings.append("column BillingPeriodEnd: equals BillingPeriodStart (an empty billing period)")
    return findings


# FOCUS 1.3's Contract Commitment dataset (``specification/datasets/contract_commitment``): every
# column Mandatory; these do not allow nulls.
COMMITMENT_COLUMNS = {
    "BillingCurrency": Column("currency", True, True),
    "ContractCommitmentCategory": Column("string", False, True, allowed=_values("Spend", "Usage")),
    "ContractCommitmentCost": Column("decimal", True, True),
    "ContractCommitmentDescription": Column("string", True, True),
    "ContractCommitmentId": Column("string", False, True),
    "ContractCommitmentPeriodEnd": Column("datetime", False, True),
    "ContractCommitmentPeriodStart": Column("datetime", False, True),
    "ContractCommitmentQuantity": Column("decimal", True, True),
    "ContractCommitmentType": Column("string", False, True),
    "ContractCommitmentUnit": Column("string", True, True),
    "ContractId": Column("string", False, True),
    "ContractPeriodEnd": Column("datetime", False, True),
    "ContractPeriodStart": Column("datetime", False, True),
}


def check_commitments(header: Sequence[str], rows: Iterable[Mapping[str, str]]) -> list[str]:
    """Findings in a Contract Commitment dataset: presence, nulls, formats and allowed values as
    for the cost rows; ContractCommitmentCost not null when ContractCommitmentQuantity is null,
    ContractCommitmentUnit null exactly when the quantity is, BillingCurrency given with a cost,
    each period's start before its end, and ids unique."""
    findings = [f"header: column {name} is missing" for name in COMMITMENT_COLUMNS if name not in header]
    findings += [f"header: column {name} is not a Contract Commitment column" for name in header
                 if name not in COMMITMENT_COLUMNS and not name.startswith("x_")]  # fmt: skip
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        problems = []
        for name, column in COMMITMENT_COLUMNS.items():
            text = row.get(name, "")
            if not text:
                if not column.nullable:
                    problems.append(f"column {name}: null in a column that does not allow nulls")
            elif problem := _format_problem(column, text):
                problems.append(f"column {name}: {text!r} {problem}")
        cost, quantity = _value(row, "ContractCommitmentCost"), _value(row, "ContractCommitmentQuantity")
        if cost is None and quantity is None:
            problems.append("column ContractCommitmentCost: must not be null when ContractCommitmentQuantity is")
        problems += _null_together(row, "ContractCommitmentUnit", "ContractCommitmentQuantity")
        if cost is not None and _value(row, "BillingCurrency") is None:
            problems.append("column BillingCurrency: must not be null with a ContractCommitmentCost")
        for start, end in (
            ("ContractCommitmentPeriodStart", "ContractCommitmentPeriodEnd"),
            ("ContractPeriodStart", "ContractPeriodEnd"),
        ):
            if _value(row, start) and _value(row, end) and row[end] <= row[start]:
                problems.append(f"column {end}: not after {start}")
        ident = row.get("ContractCommitmentId", "")
        if ident in seen:
            problems.append(f"column ContractCommitmentId: {ident!r} appears twice")
        seen.add(ident)
        findings += [f"row {number}, {problem}" for problem in problems]
    return findings
