"""We test these aspects of the FOCUS 1.2 and 1.3 conformance checker (``tests/focus_conformance.py``),
so that a passing export means something:

- a conforming row has no findings; a missing Mandatory column, an unknown column without the
  ``x_`` prefix and a FOCUS column after custom ones are found in the header;
- each kind of violation is found, naming the row and column: nulls where none are allowed,
  numeric, date/time, currency and key-value formats, allowed values, the conditional nullability
  of pricing and consumed quantities and units, and the cost-agreement rules;
- the rules 1.2 and 1.3 add: ServiceSubcategory within its category, columns null together
  (ResourceType with ResourceId, SubAccountName with SubAccountId), PricingCategory on usage;
  1.3's Mandatory provider columns, its quantities null without a SkuPriceId, the split cost
  allocation columns null together and their JSON shapes.
"""

from __future__ import annotations

import pytest

from tests.focus_conformance import MANDATORY, check_header, check_rows

GOOD = {
    "BillingAccountId": "prod",
    "BillingAccountName": "prod",
    "BillingPeriodStart": "2026-11-01T00:00:00Z",
    "BillingPeriodEnd": "2026-12-01T00:00:00Z",
    "ChargePeriodStart": "2026-11-01T00:00:00Z",
    "ChargePeriodEnd": "2026-11-02T00:00:00Z",
    "BilledCost": "10.00",
    "EffectiveCost": "10.00",
    "ListCost": "10.00",
    "ContractedCost": "10.00",
    "BillingCurrency": "EUR",
    "ChargeCategory": "Usage",
    "ChargeClass": "",
    "ChargeDescription": "a namespace",
    "PricingQuantity": "2.4",
    "PricingUnit": "Core-Hours",
    "ConsumedQuantity": "2.4",
    "ConsumedUnit": "Core-Hours",
    "ProviderName": "Kubernetes",
    "PublisherName": "Kubernetes",
    "InvoiceIssuerName": "Kubernetes",
    "ServiceCategory": "Compute",
    "ServiceName": "Kubernetes",
    "Tags": '{"team":"payments"}',
    "x_Owner": "payments",
}
# 1.3: the provider columns, and no quantities (no SkuPriceId: we publish no price list).
GOOD_1_3 = GOOD | {
    "PricingQuantity": "",
    "PricingUnit": "",
    "ConsumedQuantity": "",
    "ConsumedUnit": "",
    "ServiceProviderName": "Kubernetes",
    "HostProviderName": "Kubernetes",
    "SkuPriceId": "",
}


def check(version: str = "1.2", **changes: str) -> list[str]:
    row = (GOOD if version == "1.2" else GOOD_1_3) | changes
    header = sorted(row, key=lambda name: name.startswith("x_"))  # custom columns last, as FOCUS wants
    return check_rows(header, [row], version)


def test_a_conforming_row() -> None:
    assert check() == []
    assert len(MANDATORY) == 21


def test_header_findings() -> None:
    missing = [c for c in GOOD if c != "PricingUnit"]
    assert check_header(missing, "1.2") == ["header: Mandatory column PricingUnit is missing"]
    assert check_header([*GOOD, "Owner"], "1.2") == ["header: Owner is not a FOCUS 1.2 column and not prefixed x_"]
    after = [*GOOD, "SubAccountId"]
    assert check_header(after, "1.2") == ["header: FOCUS column SubAccountId comes after custom columns"]
    assert check_header([*GOOD], "1.3") == [
        "header: Mandatory column HostProviderName is missing",
        "header: Mandatory column ServiceProviderName is missing",
    ]
    assert check_header([*GOOD, "AllocatedMethodId"], "1.2") == [
        "header: AllocatedMethodId is not a FOCUS 1.2 column and not prefixed x_"
    ]


@pytest.mark.parametrize(
    ("changes", "finding"),
    [
        ({"BillingAccountId": ""}, "column BillingAccountId: null in a column that does not allow nulls"),
        ({"ServiceName": "  "}, "column ServiceName: only spaces"),
        ({"BilledCost": "+10.00"}, "column BilledCost: '+10.00' is not in FOCUS numeric format"),
        ({"BilledCost": "1,000.00"}, "column BilledCost: '1,000.00' is not in FOCUS numeric format"),
        ({"ListCost": "3.5E+1"}, "column ListCost: '3.5E+1' is not in FOCUS numeric format"),
        ({"ChargePeriodEnd": "2026-11-02T00:00:00+00:00"}, "is not YYYY-MM-DDTHH:mm:ssZ"),
        ({"ChargePeriodEnd": "2026-11-31T00:00:00Z"}, "is not a valid date and time"),
        ({"BillingCurrency": "eur"}, "column BillingCurrency: 'eur' is not a three-letter currency code"),
        ({"Tags": '{"a":{"b":1}}'}, 'column Tags: \'{"a":{"b":1}}\' has a value that is an object or an array'),
        ({"Tags": '{"a":"1","a":"2"}'}, "is not a JSON object with unique keys"),
        ({"ChargeCategory": "Fee"}, "column ChargeCategory: 'Fee' is not one of the allowed values"),
        ({"ChargeClass": "Refund"}, "column ChargeClass: 'Refund' is not one of the allowed values"),
        ({"ServiceCategory": "Containers"}, "column ServiceCategory: 'Containers' is not one of the allowed values"),
        ({"PricingQuantity": "", "PricingUnit": ""}, "PricingQuantity: must not be null when ChargeCategory is Usage"),
        ({"PricingUnit": ""}, "column PricingUnit: must be null exactly when PricingQuantity is null"),
        ({"ChargeCategory": "Tax", "ConsumedQuantity": "", "ConsumedUnit": ""}, "null when ChargeCategory is Tax"),
        ({"ChargeCategory": "Adjustment", "PricingQuantity": "", "PricingUnit": ""}, "ConsumedQuantity: must be null"),
        ({"ConsumedQuantity": "", "ConsumedUnit": ""}, "ConsumedQuantity: must not be null when ChargeCategory"),
        ({"ContractedCost": "9.00"}, "column ContractedCost: 9.00 must match BilledCost 10.00 without a"),
        ({"ListCost": "11.00"}, "column ListCost: 11.00 must match BilledCost 10.00 without a ListUnitPrice"),
        ({"ListUnitPrice": "4", "ListCost": "10.00"}, "column ListCost: 10.00 is not ListUnitPrice x PricingQuantity"),
        (
            {"ChargeCategory": "Credit", "EffectiveCost": "5.00", "ConsumedQuantity": "", "ConsumedUnit": ""},
            "column EffectiveCost: 5.00 must match BilledCost 10.00 for Credit",
        ),
        ({"ChargePeriodEnd": "2026-10-31T00:00:00Z"}, "column ChargePeriodEnd: before ChargePeriodStart"),
    ],
    ids=[
        "null-not-allowed",
        "spaces",
        "plus-sign",
        "thousands",
        "plus-exponent",
        "offset",
        "bad-date",
        "currency",
        "nested-tag",
        "duplicate-tag",
        "charge-category",
        "charge-class",
        "service-category",
        "usage-no-quantity",
        "unit-without-quantity",
        "tax-quantity",
        "consumed-not-usage",
        "usage-no-consumed",
        "contracted",
        "list",
        "list-unit-price",
        "effective-credit",
        "period",
    ],
)
def test_violations_are_found(changes: dict[str, str], finding: str) -> None:
    findings = check("1.2", **changes)
    assert findings and all(f.startswith("row 1, column ") for f in findings), findings
    assert any(finding in f for f in findings), findings


@pytest.mark.parametrize(
    ("version", "changes", "finding"),
    [
        ("1.2", {"ServiceSubcategory": "Virtual Machines", "ServiceCategory": "Storage"}, "not a subcategory of"),
        ("1.2", {"ServiceSubcategory": "Kubernetes"}, "ServiceSubcategory: 'Kubernetes' is not one of"),
        ("1.2", {"ResourceId": "prod/shop"}, "ResourceType: must be null exactly when ResourceId is null"),
        ("1.2", {"SubAccountId": "prod"}, "SubAccountName: must be null exactly when SubAccountId is null"),
        ("1.2", {"PricingCategory": ""}, "PricingCategory: must not be null when ChargeCategory is Usage"),
        ("1.2", {"ChargeFrequency": "Weekly"}, "ChargeFrequency: 'Weekly' is not one of"),
        ("1.3", {"PricingQuantity": "2.4", "PricingUnit": "Core-Hours"}, "PricingQuantity: must be null when SkuPr"),
        ("1.3", {"ServiceProviderName": ""}, "ServiceProviderName: null in a column that does not allow nulls"),
        ("1.3", {"HostProviderName": "AWS"}, "HostProviderName: 'AWS' differs from ServiceProviderName"),
        ("1.3", {"AllocatedTags": '{"team":"a"}'}, "AllocatedTags: must be null when the charge is not split"),
        ("1.3", {"AllocatedResourceId": "prod/shop", "AllocatedMethodId": "m"}, "AllocatedResourceName: must be null"),
        ("1.3", {"AllocatedMethodId": "m", "AllocatedMethodDetails": '{"Elements":[{"UsageUnit":"x"}]}'}, "Ratio"),
        ("1.3", {"ContractApplied": '{"Elements":[{"ContractID":"1"}]}'}, "without ContractID and ContractCommit"),
    ],
    ids=[
        "subcategory-of-another",
        "subcategory-unknown",
        "resource-type",
        "sub-account-name",
        "pricing-category",
        "charge-frequency",
        "quantity-without-sku-price",
        "service-provider",
        "host-provider",
        "allocated-tags-unsplit",
        "allocated-name",
        "allocation-ratio",
        "contract-applied",
    ],
)
def test_the_rules_of_later_versions(version: str, changes: dict[str, str], finding: str) -> None:
    base = {"ServiceSubcategory": "Containers", "ChargeFrequency": "Usage-Based", "ResourceId": "", "SubAccountId": ""}
    base |= {"ResourceType": "", "SubAccountName": "", "PricingCategory": "" if version == "1.3" else "Standard"}
    if version == "1.3":
        base |= {"AllocatedMethodId": "", "AllocatedResourceId": "", "AllocatedResourceName": "", "AllocatedTags": ""}
    assert check(version, **base) == []
    findings = check(version, **(base | changes))
    assert any(finding in f for f in findings), findings


def test_unit_prices_that_agree_and_corrections() -> None:
    assert check(ListUnitPrice="4", ListCost="9.6", ContractedUnitPrice="4", ContractedCost="9.60") == []
    assert check(ListUnitPrice="4.1666666666666666666666666667", ListCost="10.00") == []  # rounded to cents
    assert check(ListUnitPrice="4.17", ListCost="10.00") == [
        "row 1, column ListCost: 10.00 is not ListUnitPrice x PricingQuantity"
    ]  # 10.008 is 10.01
    # A correction may be without quantity, and its costs may disagree with its unit prices.
    assert check(ChargeClass="Correction", PricingQuantity="", PricingUnit="", ListUnitPrice="4") == []
    assert check(ChargeClass="Correction", ListUnitPrice="4", ListCost="11.00") == []
