"""We test these aspects of the FOCUS 1.2 conformance checker (``tests/focus_conformance.py``), so
that a passing export means something:

- a conforming row has no findings; a missing Mandatory column, an unknown column without the
  ``x_`` prefix and a FOCUS column after custom ones are found in the header;
- each kind of violation is found, naming the row and column: nulls where none are allowed,
  numeric, date/time, currency and key-value formats, allowed values, the conditional nullability
  of pricing and consumed quantities and units, and the cost-agreement rules.
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


def check(**changes: str) -> list[str]:
    row = GOOD | changes
    header = sorted(row, key=lambda name: name.startswith("x_"))  # custom columns last, as FOCUS wants
    return check_rows(header, [row])


def test_a_conforming_row() -> None:
    assert check() == []
    assert len(MANDATORY) == 21


def test_header_findings() -> None:
    assert check_header([c for c in GOOD if c != "PricingUnit"]) == ["header: Mandatory column PricingUnit is missing"]
    assert check_header([*GOOD, "Owner"]) == ["header: Owner is not a FOCUS 1.2 column and not prefixed x_"]
    assert check_header([*GOOD, "SubAccountId"]) == ["header: FOCUS column SubAccountId comes after custom columns"]


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
    findings = check(**changes)
    assert findings and all(f.startswith("row 1, column ") for f in findings), findings
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
