"""Cloud bills for tests: FOCUS 1.2 and AWS CUR 2.0 CSV text written from a few ``BillLine``s, so
a test states the charges it means (period, billed and amortised cost, category) and gets a file
shaped as the cloud writes it, instead of hand-writing wide CSV rows.

The promise, tested in ``tests/unit/test_bills_generator.py``: every line written, in either
format, parses back through ``finops.cloudspend.parse_cloud_costs`` to the same billed cost, the
same effective cost (``effective``, or ``billed`` when it is None) and the same category, and the
FOCUS files pass ``tests/focus_conformance.py`` when their lines are ones the spec allows.

How a line is written:

- ``category`` is one of ``finops.cloudcharges.ChargeCategory``'s values; ``kind`` is the CUR 2.0
  line item type (``""``: ``DEFAULT_KINDS[category]``) and must be one of that category's types
  in ``finops.cloudcharges.CUR_LINE_ITEM_TYPES`` (support: a usage or purchase type). ``kind=
  "Adjustment"`` is a discount that FOCUS writes as ``Adjustment`` and CUR as ``Credit``.
- FOCUS: ``ChargeCategory`` from the category (support as ``Usage`` or ``Purchase`` by its kind),
  ``BilledCost``/``ListCost``/``ContractedCost`` = billed, ``EffectiveCost`` = effective,
  ``PricingQuantity`` the charge period's hours (null for taxes), ``Tags`` as given.
- CUR 2.0: the columns ``finops.cloudcharges``' amortised rule reads are filled so that the rule
  gives ``effective`` back: SavingsPlanCoveredUsage puts it in
  ``savings_plan_savings_plan_effective_cost``, DiscountedUsage in ``reservation_effective_cost``,
  SavingsPlanRecurringFee as total commitment (billed) minus used commitment, RIFee as the unused
  upfront fee; a ``Fee`` amortised to 0 (with ``billed`` not 0) is a reservation's upfront fee and
  gets a reservation ARN; any other line has ``line_item_net_unblended_cost`` = effective.
  SavingsPlanNegation and SavingsPlanUpfrontFee are amortised to 0 by AWS: their ``effective``
  must be ``Decimal(0)``. ``resource_tags``: ``aws:``/``eks:`` system tags (any key with a prefix
  ``xxx:`` other than ``user:``) keep their names, user tags are written ``user_<key>`` with
  characters other than letters, digits and ``_`` turned into ``_`` (``cost-center`` ->
  ``user_cost_center``), as CUR 2.0 does.
- A ``support`` line needs a support service (``finops.cloudcharges.is_support``): with another
  service (the default ``AmazonEC2``) it is written as ``AWSSupportBusiness`` in CUR and ``AWS
  Support (Business)`` in FOCUS. A usage or purchase line with a support service would read back
  as support, so it is refused.

A line the generator cannot write faithfully is a ``ValueError`` when the ``BillLine`` is made.
Times are whole seconds, timezone-aware, stored as UTC; the billing period is the UTC month of the
charge's start.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise
from typing import Any

from finops.cloudcharges import CUR_LINE_ITEM_TYPES, ChargeCategory, is_support

DEFAULT_KINDS = {"usage": "Usage", "discount": "Credit", "purchase": "Fee", "tax": "Tax", "support": "Fee"}
ZERO_AMORTISED = ("SavingsPlanNegation", "SavingsPlanUpfrontFee")
SAVINGS_PLAN_ARN = "arn:aws:savingsplans::{account}:savingsplan/00000000-0000-4000-8000-000000000001"
RESERVATION_ARN = "arn:aws:ec2:eu-west-1:{account}:reserved-instances/00000000-0000-4000-8000-000000000002"
SUPPORT = {"focus": "AWS Support (Business)", "cur2": "AWSSupportBusiness"}
_USER_KEY = re.compile(r"[^0-9A-Za-z_]")
_SYSTEM_KEY = re.compile(r"^[a-z]+:")


def _kinds(category: str) -> tuple[str, ...]:
    if category == "support":
        return _kinds("usage") + _kinds("purchase")
    kinds = tuple(kind for kind, found in CUR_LINE_ITEM_TYPES.items() if found.value == category)
    return (*kinds, "Adjustment") if category == "discount" else kinds


@dataclass(frozen=True)
class BillLine:
    """One charge of a bill (see the module docstring for how each format writes it)."""

    start: datetime  # UTC charge period, half-open
    end: datetime
    billed: Decimal  # BilledCost / unblended
    effective: Decimal | None = None  # EffectiveCost / amortised (None: same as billed)
    category: str = "usage"  # usage|discount|purchase|tax|support
    kind: str = ""  # CUR line item type, e.g. "SavingsPlanNegation"; "" = DEFAULT_KINDS[category]
    resource_id: str | None = None  # e.g. "i-0a1b2c3d4e5f60001", "vol-...", an ARN
    service: str = "AmazonEC2"
    account: str = "111122223333"
    tags: Mapping[str, str] = field(default_factory=dict)  # e.g. {"eks:cluster-name": "demo-eu"}
    currency: str = "EUR"

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            moment: datetime = getattr(self, name)
            if moment.tzinfo is None or moment.microsecond:
                raise ValueError(f"BillLine.{name}: {moment!r} must be timezone-aware, in whole seconds")
            object.__setattr__(self, name, moment.astimezone(UTC))
        if self.end < self.start:
            raise ValueError(f"BillLine.end: {self.end} is before start {self.start}")
        if self.category not in set(ChargeCategory):
            raise ValueError(f"BillLine.category: {self.category!r} is not one of {[c.value for c in ChargeCategory]}")
        if self.kind and self.kind not in _kinds(self.category):
            raise ValueError(
                f"BillLine.kind: {self.kind!r} is not a {self.category} line (one of {_kinds(self.category)})"
            )
        if self.line_type in ZERO_AMORTISED and self.effective != 0:
            raise ValueError(f"BillLine.effective: a {self.line_type} is amortised to 0 by AWS; give Decimal(0)")
        if self.category in ("usage", "purchase") and is_support(self.service):
            raise ValueError(
                f"BillLine.service: {self.service!r} is support; a {self.category} line would read as support"
            )

    @property
    def line_type(self) -> str:
        """The CUR 2.0 ``line_item_line_item_type`` written."""
        kind = self.kind or DEFAULT_KINDS[self.category]
        return "Credit" if kind == "Adjustment" else kind

    @property
    def amortised(self) -> Decimal:
        """The effective cost the line reads back as."""
        return self.billed if self.effective is None else self.effective

    def service_in(self, fmt: str) -> str:
        """The service written in ``fmt`` ("focus" or "cur2")."""
        return SUPPORT[fmt] if self.category == "support" and not is_support(self.service) else self.service


FOCUS_COLUMNS = (
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "PricingQuantity",
    "PricingUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "CommitmentDiscountId",
    "CommitmentDiscountCategory",
    "CommitmentDiscountStatus",
    "InvoiceIssuerName",
    "ProviderName",
    "PublisherName",
    "ResourceId",
    "ServiceCategory",
    "ServiceName",
    "SubAccountId",
    "Tags",
)
_FOCUS_CATEGORY = {"usage": "Usage", "discount": "Credit", "purchase": "Purchase", "tax": "Tax"}
_SERVICE_CATEGORY = {"AmazonEC2": "Compute", "AmazonEKS": "Compute", "AmazonS3": "Storage", "AmazonRDS": "Databases"}


def focus_csv(lines: Iterable[BillLine]) -> str:
    """A FOCUS 1.2 report of ``lines``, header first."""
    rows = []
    for line in lines:
        category = _focus_category(line)
        hours = _hours(line)
        commitment = line.line_type in ("SavingsPlanCoveredUsage", "DiscountedUsage")
        rows.append(
            {
                "BillingAccountId": line.account,
                "BillingAccountName": "Test billing account",
                "BillingCurrency": line.currency,
                "BillingPeriodStart": _focus_time(_month(line.start)),
                "BillingPeriodEnd": _focus_time(_next_month(line.start)),
                "ChargePeriodStart": _focus_time(line.start),
                "ChargePeriodEnd": _focus_time(line.end),
                "ChargeCategory": category,
                "ChargeClass": "",
                "ChargeDescription": f"{line.kind or category} {line.service_in('focus')}",
                "ChargeFrequency": _frequency(line, category),
                "BilledCost": _number(line.billed),
                "EffectiveCost": _number(line.amortised),
                "ListCost": _number(line.billed),
                "ContractedCost": _number(line.billed),
                "PricingQuantity": "" if category == "Tax" else _number(hours),
                "PricingUnit": "" if category == "Tax" else "Hours",
                "ConsumedQuantity": _number(hours) if category == "Usage" else "",
                "ConsumedUnit": "Hours" if category == "Usage" else "",
                "CommitmentDiscountId": _commitment_arn(line) if commitment else "",
                "CommitmentDiscountCategory": ("Spend" if "SavingsPlan" in line.line_type else "Usage")
                if commitment
                else "",
                "CommitmentDiscountStatus": "Used" if commitment else "",
                "InvoiceIssuerName": "AWS",
                "ProviderName": "AWS",
                "PublisherName": "AWS",
                "ResourceId": line.resource_id or "",
                "ServiceCategory": _SERVICE_CATEGORY.get(line.service_in("focus"), "Other"),
                "ServiceName": line.service_in("focus"),
                "SubAccountId": line.account,
                "Tags": json.dumps(dict(line.tags), sort_keys=True),
            }
        )
    return _csv(FOCUS_COLUMNS, rows)


CUR2_COLUMNS = (
    "identity_line_item_id",
    "identity_time_interval",
    "bill_bill_type",
    "bill_billing_entity",
    "bill_payer_account_id",
    "bill_billing_period_start_date",
    "bill_billing_period_end_date",
    "line_item_usage_account_id",
    "line_item_line_item_type",
    "line_item_usage_start_date",
    "line_item_usage_end_date",
    "line_item_product_code",
    "line_item_usage_type",
    "line_item_resource_id",
    "line_item_usage_amount",
    "line_item_currency_code",
    "line_item_unblended_cost",
    "line_item_net_unblended_cost",
    "line_item_blended_cost",
    "line_item_line_item_description",
    "reservation_reservation_a_r_n",
    "reservation_effective_cost",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee",
    "savings_plan_savings_plan_a_r_n",
    "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date",
    "savings_plan_used_commitment",
    "resource_tags",
)


def cur2_csv(lines: Iterable[BillLine]) -> str:
    """An AWS CUR 2.0 (Data Exports, standard table) report of ``lines``, header first."""
    rows = []
    for number, line in enumerate(lines, start=1):
        row = dict.fromkeys(CUR2_COLUMNS, "")
        kind, billed, amortised = line.line_type, _number(line.billed), line.amortised
        row.update(
            {
                "identity_line_item_id": f"li-{number:08d}",
                "identity_time_interval": f"{_cur_time(line.start)}/{_cur_time(line.end)}",
                "bill_bill_type": "Anniversary",
                "bill_billing_entity": "AWS",
                "bill_payer_account_id": line.account,
                "bill_billing_period_start_date": _cur_time(_month(line.start)),
                "bill_billing_period_end_date": _cur_time(_next_month(line.start)),
                "line_item_usage_account_id": line.account,
                "line_item_line_item_type": kind,
                "line_item_usage_start_date": _cur_time(line.start),
                "line_item_usage_end_date": _cur_time(line.end),
                "line_item_product_code": line.service_in("cur2"),
                "line_item_usage_type": kind,
                "line_item_resource_id": line.resource_id or "",
                "line_item_usage_amount": _number(_hours(line)),
                "line_item_currency_code": line.currency,
                "line_item_unblended_cost": billed,
                "line_item_net_unblended_cost": billed,
                "line_item_blended_cost": billed,
                "line_item_line_item_description": f"{kind} {line.service_in('cur2')}",
                "resource_tags": json.dumps(cur_tags(line.tags), sort_keys=True),
            }
        )
        row.update(_cur_amortised(line, kind, amortised))
        rows.append(row)
    return _csv(CUR2_COLUMNS, rows)


def _cur_amortised(line: BillLine, kind: str, amortised: Decimal) -> dict[str, str]:
    """The columns that make ``finops.cloudcharges``' amortised rule give ``amortised`` back."""
    plan, reservation = SAVINGS_PLAN_ARN.format(account=line.account), RESERVATION_ARN.format(account=line.account)
    if kind == "SavingsPlanCoveredUsage":
        return {"savings_plan_savings_plan_a_r_n": plan, "savings_plan_savings_plan_effective_cost": _number(amortised)}
    if kind == "DiscountedUsage":
        return {"reservation_reservation_a_r_n": reservation, "reservation_effective_cost": _number(amortised)}
    if kind in ZERO_AMORTISED:
        return {"savings_plan_savings_plan_a_r_n": plan}
    if kind == "SavingsPlanRecurringFee":
        return {
            "savings_plan_savings_plan_a_r_n": plan,
            "savings_plan_total_commitment_to_date": _number(line.billed),
            "savings_plan_used_commitment": _number(line.billed - amortised),
        }
    if kind == "RIFee":
        return {
            "reservation_reservation_a_r_n": reservation,
            "reservation_unused_amortized_upfront_fee_for_billing_period": _number(amortised),
            "reservation_unused_recurring_fee": "0",
        }
    if kind == "Fee" and amortised == 0 and line.billed != 0:
        return {"reservation_reservation_a_r_n": reservation}
    return {"line_item_net_unblended_cost": _number(amortised)}


def cur_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Tags as CUR 2.0 writes them in ``resource_tags``: system tags by name, user tags
    ``user_<key>``."""
    written = {}
    for key, value in tags.items():
        if _SYSTEM_KEY.match(key) and not key.startswith("user:"):
            written[key] = value
        else:
            written["user_" + _USER_KEY.sub("_", key.removeprefix("user:"))] = value
    return written


def node_hours(
    node_resource_id: str, start: datetime, end: datetime, hourly: Decimal, *, per: str = "day", **kw: Any
) -> list[BillLine]:
    """A node's usage over ``[start, end)`` at ``hourly`` a hour: one line per UTC day (``per=
    "day"``) or hour (``per="hour"``), cut at UTC boundaries. Prorated exactly: each line is the
    running total (exact by time, rounded half-even to micros) minus the one before, so the lines
    add up to the whole period's cost rounded once. ``effective`` in ``kw`` is an hourly
    effective rate, prorated the same way; the rest of ``kw`` goes to every ``BillLine``."""
    if per not in ("day", "hour"):
        raise ValueError(f"node_hours: per={per!r} is not 'day' or 'hour'")
    if end < start:
        raise ValueError(f"node_hours: end {end} is before start {start}")
    effective_hourly: Decimal | None = kw.pop("effective", None)
    step = timedelta(days=1) if per == "day" else timedelta(hours=1)
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    floor = start.replace(minute=0, second=0, microsecond=0)
    if per == "day":
        floor = floor.replace(hour=0)
    bounds = [start]
    while (cut := floor + step * len(bounds)) < end:
        bounds.append(cut)
    if end > start:
        bounds.append(end)
    lines = []
    for left, right in pairwise(bounds):
        lines.append(
            BillLine(
                start=left,
                end=right,
                billed=_prorated(hourly, start, left, right),
                effective=None if effective_hourly is None else _prorated(effective_hourly, start, left, right),
                resource_id=node_resource_id,
                **kw,
            )
        )
    return lines


def _prorated(hourly: Decimal, origin: datetime, left: datetime, right: datetime) -> Decimal:
    def running(moment: datetime) -> int:  # micros from origin to moment, rounded half-even
        return round(Fraction(hourly) * Fraction((moment - origin).total_seconds()) / 3600 * 1_000_000)

    return Decimal(running(right) - running(left)).scaleb(-6)


def _focus_category(line: BillLine) -> str:
    if line.category == "support":
        return "Usage" if line.line_type in _kinds("usage") else "Purchase"
    if line.kind == "Adjustment":
        return "Adjustment"
    return _FOCUS_CATEGORY[line.category]


def _frequency(line: BillLine, category: str) -> str:
    if category == "Usage":
        return "Usage-Based"
    if category == "Purchase" and line.end > line.start and line.line_type != "SavingsPlanUpfrontFee":
        return "Recurring"
    return "One-Time"


def _commitment_arn(line: BillLine) -> str:
    template = SAVINGS_PLAN_ARN if "SavingsPlan" in line.line_type else RESERVATION_ARN
    return template.format(account=line.account)


def _hours(line: BillLine) -> Decimal:
    """The charge period in hours, to 10 decimals (FOCUS ``PricingQuantity``, CUR usage amount)."""
    seconds = int((line.end - line.start).total_seconds())
    return Decimal(round(Fraction(seconds, 3600) * 10**10)).scaleb(-10).normalize()


def _number(amount: Decimal) -> str:
    """A decimal in plain notation (FOCUS numeric format: no exponent, no ``+``)."""
    text = format(amount, "f")
    return "0" if text.lstrip("-").strip("0.") == "" else text


def _month(moment: datetime) -> datetime:
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _next_month(moment: datetime) -> datetime:
    first = _month(moment)
    return first.replace(year=first.year + 1, month=1) if first.month == 12 else first.replace(month=first.month + 1)


def _focus_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cur_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _csv(columns: tuple[str, ...], rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
