"""What each line of a cloud bill is, and what it costs once commitments are amortised: the
rules ``finops.cloudspend`` applies to FOCUS and AWS CUR 2.0 rows.

Why: the chargeback is reconciled to the cloud invoice. Usage is what gets allocated to owners;
discounts, commitment purchases, taxes and support are on the invoice too and must be told apart,
not summed as spend. And a Savings Plan or reservation must be counted once: either as the fee
(billed view) or spread over the usage it covers (amortised view), never both.

Charge categories (``ChargeCategory``), from the report's category column:

=============  ==========================  ==================================================
category       FOCUS ``ChargeCategory``    CUR 2.0 ``line_item_line_item_type``
=============  ==========================  ==================================================
``usage``      Usage                       Usage, DiscountedUsage, SavingsPlanCoveredUsage
``discount``   Credit, Adjustment          SavingsPlanNegation, EdpDiscount, BundledDiscount,
                                           PrivateRateDiscount, Discount, DistributorDiscount,
                                           Credit, Refund
``purchase``   Purchase                    Fee, RIFee, SavingsPlanRecurringFee,
                                           SavingsPlanUpfrontFee
``tax``        Tax                         Tax
=============  ==========================  ==================================================

Values are compared exactly as the spec and AWS write them (case-sensitive); any other value,
an empty one included, is an error naming the row and column. A report without the column is
all ``usage``. Then ``support``: a line whose service (FOCUS ``ServiceName``, CUR
``line_item_product_code``) matches ``SUPPORT_SERVICE`` ("AWS Support (Business)",
``AWSSupportBusiness``, ``AWSDeveloperSupport``...), and that would be ``usage`` or ``purchase``
is ``support``; a support plan's tax or credit keeps its category.

Amortised cost in CUR 2.0 (``effective_micros``), as AWS defines it (the Cloud Intelligence
Dashboards' ``amortized_cost``): per line item type, the sum of the columns ``CUR_AMORTISED``
names, i.e. a plan's or reservation's effective cost on the usage it covers, only the commitment
left unused on its fee lines, and 0 on a Savings Plan's negation and upfront fee (the plan's cost
is in the covered usage); a Fee with a ``CUR_RESERVATION_ARN`` (a reservation's upfront payment,
amortised into its DiscountedUsage and RIFee lines) is 0; any other line is
``line_item_net_unblended_cost``.

When a column such a rule needs is absent from the report, or empty on the row, the line keeps
the plain rule: ``line_item_net_unblended_cost``, or unknown (``None``: the chargeback then counts
the billed, unblended cost) without it. Amounts of a rule are added exactly and rounded once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum


class ChargeCategory(StrEnum):
    """What a cost line is on the invoice (the module docstring has the table)."""

    USAGE = "usage"
    DISCOUNT = "discount"
    PURCHASE = "purchase"
    TAX = "tax"
    SUPPORT = "support"


FOCUS_CATEGORIES: Mapping[str, ChargeCategory] = {
    "Usage": ChargeCategory.USAGE,
    "Purchase": ChargeCategory.PURCHASE,
    "Tax": ChargeCategory.TAX,
    "Credit": ChargeCategory.DISCOUNT,
    "Adjustment": ChargeCategory.DISCOUNT,
}
CUR_LINE_ITEM_TYPES: Mapping[str, ChargeCategory] = {
    **dict.fromkeys(("Usage", "DiscountedUsage", "SavingsPlanCoveredUsage"), ChargeCategory.USAGE),
    **dict.fromkeys(
        (
            "SavingsPlanNegation",
            "EdpDiscount",
            "BundledDiscount",
            "PrivateRateDiscount",
            "Discount",
            "DistributorDiscount",
            "Credit",
            "Refund",
        ),
        ChargeCategory.DISCOUNT,
    ),
    "Tax": ChargeCategory.TAX,
    **dict.fromkeys(("Fee", "RIFee", "SavingsPlanRecurringFee", "SavingsPlanUpfrontFee"), ChargeCategory.PURCHASE),
}
SUPPORT_SERVICE = re.compile(r"(?i)\bsupport\b|^AWS.*Support")
# CUR 2.0's amortised cost by line item type: the columns added, each with its sign.
CUR_AMORTISED: Mapping[str, tuple[tuple[str, int], ...]] = {
    "SavingsPlanCoveredUsage": (("savings_plan_savings_plan_effective_cost", 1),),
    "DiscountedUsage": (("reservation_effective_cost", 1),),
    "SavingsPlanNegation": (),
    "SavingsPlanUpfrontFee": (),
    "SavingsPlanRecurringFee": (("savings_plan_total_commitment_to_date", 1), ("savings_plan_used_commitment", -1)),
    "RIFee": (
        ("reservation_unused_amortized_upfront_fee_for_billing_period", 1),
        ("reservation_unused_recurring_fee", 1),
    ),
}
# A Fee line with a reservation's ARN is the reservation's upfront payment.
CUR_RESERVATION_ARN = "reservation_reservation_a_r_n"
CUR_SAVINGS_PLAN_ARN = "savings_plan_savings_plan_a_r_n"


def is_support(service: str | None) -> bool:
    """Whether a service name (FOCUS ``ServiceName``, CUR ``line_item_product_code``) is support."""
    return bool(service) and SUPPORT_SERVICE.search(service or "") is not None


def amortised_rule(kind: str, *, reserved: bool) -> tuple[tuple[str, int], ...] | None:
    """The columns (each with its sign) whose sum is a CUR 2.0 line's amortised cost: ``()`` for
    0, ``None`` for the plain rule (the net unblended cost). ``reserved``: the line has a
    ``reservation_reservation_a_r_n``."""
    if kind == "Fee" and reserved:
        return ()
    return CUR_AMORTISED.get(kind)
