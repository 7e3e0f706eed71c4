"""We test these aspects of charge categories and CUR 2.0's amortised cost
(``finops.cloudcharges``, applied by ``finops.cloudspend``):

- FOCUS ``ChargeCategory`` and CUR 2.0 ``line_item_line_item_type`` give the category, every
  value of the table; a report without the column is all usage; a value not written as the spec
  or AWS writes it (case, empty, unknown) is refused naming the row and column;
- support: a usage or purchase line of a support service (by the documented rule) is support; its
  tax and credits keep their category;
- CUR 2.0's amortised cost by line item type (Savings Plans, reservations, their fees), the
  amounts added exactly and rounded once; a rule whose column is absent or empty keeps the net
  unblended cost (or unknown); a bad amount is named by its column(s);
- the sample reports' categories.
"""

from __future__ import annotations

import csv
import io

import pytest

from finops.cloudspend import ChargeCategory
from finops.errors import InvalidInput
from tests.unit.test_cloudspend import FOCUS_HEADER, parse_file, parse_text

CUR_HEADER = (
    "line_item_line_item_type,line_item_unblended_cost,line_item_net_unblended_cost,line_item_currency_code,"
    "line_item_usage_start_date,line_item_usage_end_date,line_item_product_code,line_item_resource_id,"
    "line_item_usage_account_id"
)
CUR_AMORTISED_COLUMNS = (
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment",
    "reservation_effective_cost",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee",
    "reservation_reservation_a_r_n",
)


def cur_text(rows: list[dict[str, str]], columns: tuple[str, ...] = CUR_AMORTISED_COLUMNS) -> str:
    """A CUR 2.0 report: ``rows`` over a usage line of 10 billed, 9 net unblended."""
    header = CUR_HEADER.split(",") + list(columns)
    base = dict.fromkeys(header, "")
    base |= {
        "line_item_line_item_type": "Usage",
        "line_item_unblended_cost": "10",
        "line_item_net_unblended_cost": "9",
        "line_item_currency_code": "EUR",
        "line_item_usage_start_date": "2026-10-01T00:00:00.000Z",
        "line_item_usage_end_date": "2026-10-01T01:00:00.000Z",
        "line_item_product_code": "AmazonEC2",
    }
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, extrasaction="raise")
    writer.writeheader()
    writer.writerows(base | {key: value for key, value in row.items() if key in header} for row in rows)
    return out.getvalue()


def focus_text(category: str | None, service: str = "Amazon EC2") -> str:
    header = FOCUS_HEADER + ("" if category is None else ",ChargeCategory")
    row = f"2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,1,,EUR,{service},,,"
    return f"{header}\n{row}{'' if category is None else ',' + category}\n"


@pytest.mark.parametrize(
    ("category", "service", "expected"),
    [
        ("Usage", "Amazon EC2", "usage"),
        ("Purchase", "Amazon EC2", "purchase"),
        ("Tax", "Amazon EC2", "tax"),
        ("Credit", "Amazon EC2", "discount"),
        ("Adjustment", "Amazon EC2", "discount"),
        (None, "Amazon EC2", "usage"),  # a report without the column
        ("Usage", "AWS Support (Business)", "support"),
        ("Purchase", "AWS Premium Support", "support"),
        ("Tax", "AWS Support (Business)", "tax"),
        ("Credit", "AWS Support (Business)", "discount"),
        (None, "Enterprise support plan", "support"),  # "support" as a word, any case
        ("Usage", "Amazon Supporting Services", "usage"),  # not as a word, not AWS...Support
    ],
)
def test_focus_charge_categories(category: str | None, service: str, expected: str) -> None:
    (cost,) = parse_text(focus_text(category, service))[1]
    assert cost.category == ChargeCategory(expected)


@pytest.mark.parametrize(("value", "reason"), [("usage", "'usage' is not a known value"), ("", "required")])
def test_a_focus_charge_category_is_read_as_the_spec_writes_it(value: str, reason: str) -> None:
    with pytest.raises(InvalidInput, match=rf"^row 1, column ChargeCategory: {reason} \(one of Usage, Purchase"):
        parse_text(focus_text(value))


def test_the_category_of_every_cur_2_line_item_type() -> None:
    expected = {
        "Usage": "usage",
        "DiscountedUsage": "usage",
        "SavingsPlanCoveredUsage": "usage",
        "SavingsPlanNegation": "discount",
        "EdpDiscount": "discount",
        "BundledDiscount": "discount",
        "PrivateRateDiscount": "discount",
        "Discount": "discount",
        "DistributorDiscount": "discount",
        "Credit": "discount",
        "Refund": "discount",
        "Tax": "tax",
        "Fee": "purchase",
        "RIFee": "purchase",
        "SavingsPlanRecurringFee": "purchase",
        "SavingsPlanUpfrontFee": "purchase",
    }
    costs = parse_text(cur_text([{"line_item_line_item_type": kind} for kind in expected]))[1]
    assert {kind: cost.category.value for kind, cost in zip(expected, costs, strict=True)} == expected
    assert parse_text(cur_text([{}]).replace("line_item_line_item_type", "x_type"))[1][0].category == "usage"


@pytest.mark.parametrize(
    ("kind", "product", "expected"),
    [
        ("Fee", "AWSSupportBusiness", "support"),
        ("Usage", "AWSDeveloperSupport", "support"),
        ("Fee", "AWSSupportEnterprise", "support"),
        ("Tax", "AWSSupportBusiness", "tax"),
        ("Credit", "AWSSupportBusiness", "discount"),
        ("Fee", "AWSMarketplace", "purchase"),
    ],
)
def test_cur_2_support(kind: str, product: str, expected: str) -> None:
    rows = [{"line_item_line_item_type": kind, "line_item_product_code": product}]
    assert parse_text(cur_text(rows))[1][0].category == ChargeCategory(expected)


@pytest.mark.parametrize("kind", ["usage", "SavingsPlan", "", "NULL"])
def test_an_unknown_cur_2_line_item_type_is_refused(kind: str) -> None:
    rows = [{}, {"line_item_line_item_type": kind}]
    with pytest.raises(InvalidInput, match=r"^row 2, column line_item_line_item_type: .*\(one of Usage, "):
        parse_text(cur_text(rows))


@pytest.mark.parametrize(
    ("row", "effective"),
    [
        ({}, 9_000_000),  # Usage: the net unblended cost
        (
            {"line_item_line_item_type": "SavingsPlanCoveredUsage", "savings_plan_savings_plan_effective_cost": "6.5"},
            6_500_000,
        ),
        ({"line_item_line_item_type": "DiscountedUsage", "reservation_effective_cost": "7.25"}, 7_250_000),
        ({"line_item_line_item_type": "SavingsPlanNegation", "line_item_unblended_cost": "-10"}, 0),
        ({"line_item_line_item_type": "SavingsPlanUpfrontFee", "line_item_unblended_cost": "1000"}, 0),
        (
            {
                "line_item_line_item_type": "SavingsPlanRecurringFee",
                "savings_plan_total_commitment_to_date": "10",
                "savings_plan_used_commitment": "7.5",
            },
            2_500_000,
        ),
        (
            {
                "line_item_line_item_type": "RIFee",
                "reservation_unused_amortized_upfront_fee_for_billing_period": "0.0000005",
                "reservation_unused_recurring_fee": "0.0000010",
            },
            2,  # 1.5 micros rounded once (half-even); rounding each first would give 1
        ),
        ({"line_item_line_item_type": "Fee", "reservation_reservation_a_r_n": "arn:aws:ec2:::reserved-instances/x"}, 0),
        ({"line_item_line_item_type": "Fee"}, 9_000_000),
        (
            {
                "line_item_line_item_type": "Credit",
                "line_item_unblended_cost": "-2",
                "line_item_net_unblended_cost": "",
            },
            None,
        ),
        # a column the rule needs is empty: the plain rule
        ({"line_item_line_item_type": "SavingsPlanCoveredUsage"}, 9_000_000),
        ({"line_item_line_item_type": "RIFee", "reservation_unused_recurring_fee": "1"}, 9_000_000),
    ],
    ids=[
        "usage",
        "sp-covered",
        "discounted",
        "sp-negation",
        "sp-upfront",
        "sp-recurring",
        "ri-fee",
        "ri-upfront-fee",
        "fee",
        "no-net",
        "sp-covered-empty",
        "ri-fee-half-empty",
    ],
)
def test_cur_2_amortised_cost(row: dict[str, str], effective: int | None) -> None:
    (cost,) = parse_text(cur_text([row]))[1]
    assert cost.effective_micros == effective


def test_cur_2_amortised_cost_without_its_columns_keeps_the_net_unblended_cost() -> None:
    rows = [
        {"line_item_line_item_type": "SavingsPlanCoveredUsage", "savings_plan_savings_plan_effective_cost": "6.5"},
        {"line_item_line_item_type": "RIFee"},
        {"line_item_line_item_type": "Fee"},  # no reservation ARN column: a plain fee
    ]
    costs = parse_text(cur_text(rows, columns=()))[1]
    assert [c.effective_micros for c in costs] == [9_000_000, 9_000_000, 9_000_000]
    no_net = cur_text(rows, columns=()).replace("line_item_net_unblended_cost", "x_net")
    assert [c.effective_micros for c in parse_text(no_net)[1]] == [None, None, None]
    assert parse_text(no_net)[1][0].cost_micros == 10_000_000


@pytest.mark.parametrize(
    ("row", "column"),
    [
        (
            {"line_item_line_item_type": "DiscountedUsage", "reservation_effective_cost": "x"},
            "reservation_effective_cost",
        ),
        (
            {
                "line_item_line_item_type": "SavingsPlanRecurringFee",
                "savings_plan_total_commitment_to_date": "1e30",
                "savings_plan_used_commitment": "0",
            },
            "savings_plan_total_commitment_to_date and savings_plan_used_commitment",
        ),
    ],
    ids=["not-a-number", "too-large"],
)
def test_a_bad_amortised_amount_is_named(row: dict[str, str], column: str) -> None:
    with pytest.raises(InvalidInput, match=rf"^row 1, column {column}: "):
        parse_text(cur_text([row]))


def test_the_sample_reports_categories() -> None:
    assert [c.category.value for c in parse_file("cur2-2026-10.csv")[1]] == ["usage", "usage", "usage", "tax"]
    focus = [c.category.value for c in parse_file("focus-2026-10.csv")[1]]
    assert focus == ["usage"] * 4 + ["discount"] + ["usage"] * 3
