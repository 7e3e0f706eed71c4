"""Cloud spend outside the cluster: a cloud cost report's rows (FOCUS or AWS CUR 2.0) parsed into
``CloudCost`` items, each owned through its tags.

The method for spend outside the cluster (docs/explanation/money-rules.md): snapshots, egress and managed
databases carry cloud tags with the same ``team`` and ``cost-center`` keys as the namespaces, so
the cloud's cost report and the cluster's join on the same names; what stays untagged goes on the
unallocated line. The chargeback adds these costs as ``finops.chargeback.DirectCost``.

Formats, told apart by the header (a CSV's first row):

- **FOCUS** (FinOps Open Cost and Usage Specification 1.x): a header with ``BilledCost`` and
  ``ChargePeriodStart``. ``EffectiveCost`` is already amortised by the spec (commitment purchases
  spread over the usage they cover), so it is taken as it is.
- **AWS CUR 2.0** (Data Exports, standard table): a header with ``line_item_unblended_cost``, the
  billed cost; CUR 2.0 writes user tags in ``resource_tags`` as ``user_<key>``. The effective cost
  is the amortised cost (``finops.cloudcharges``), read from ``line_item_net_unblended_cost``
  (present when the account has discounts) and the ``savings_plan_*`` and ``reservation_*``
  columns that rule names.

The columns read are ``COLUMNS``: one not ``optional`` must be in the header; extra columns are
ignored. Charge categories (usage, discount, purchase, tax, support; ``usage`` without the
category column) and CUR's amortised cost by line item type: ``finops.cloudcharges``.

Commitments. A line a commitment discount covers or charges keeps the commitment's id
(``commitment``): FOCUS ``CommitmentDiscountId``, CUR 2.0 ``savings_plan_savings_plan_a_r_n``
then ``reservation_reservation_a_r_n``; null without one. The FOCUS 1.3 export says by it which
charges a commitment covered (``finops.commitments``).

Nulls. An empty field is null in both formats. FOCUS files may also write null as the bare token
``NULL`` (the FinOps Foundation's own sample data does, in ``Tags``, ``ResourceId``,
``SubAccountId``, ...): in a FOCUS report ``NULL`` (exactly, unquoted or quoted alike, as CSV
cannot tell them apart) is null in every column, so a nullable column reads it as missing and a
column that must have a value (``BilledCost``, the charge period, ``BillingCurrency``) reports it
as required. CUR 2.0 has no such token: ``NULL`` there is text.

Tags. The owner is the first of ``OWNER_TAGS`` present, the cost centre the first of
``COST_CENTER_TAGS``, case-sensitive (``user:`` is AWS's prefix for user-defined tags in cost
reports, ``user_`` with ``-`` turned into ``_`` is how CUR 2.0 writes them). Two keys of the same
field with different values make the row invalid: which one is right is not ours to guess. Values
are trimmed; a missing or empty value is untagged (``None``), which the chargeback shows on
``__unallocated__``. The whole tag map is kept as well.

Values. Amounts are decimal strings parsed exactly (``Decimal``, exponents such as ``1.2E-7``
accepted, as exports write them; NaN and infinities refused), may be negative (credits, refunds)
and are rounded half-even to micros, once. An empty ``EffectiveCost`` (or net unblended cost) is
unknown (``None``); an empty billed cost is an error. Timestamps are ISO 8601; both formats define
them as UTC, so a timestamp without an offset is read as UTC, and one with an offset is converted.
The charge period is half-open, ``[start, end)``; ``end`` before ``start`` is an error, ``end ==
start`` a charge at a moment (one-time fees). Currencies are three capital letters.

Errors name the row (1 is the first row after the header) and the column, and the first bad row
fails the whole file: an import is all or nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation, localcontext
from enum import StrEnum

from finops.cloudcharges import (
    CUR_LINE_ITEM_TYPES,
    CUR_RESERVATION_ARN,
    CUR_SAVINGS_PLAN_ARN,
    FOCUS_CATEGORIES,
    amortised_rule,
    is_support,
)
from finops.cloudcharges import ChargeCategory as ChargeCategory  # re-exported: a CloudCost's field
from finops.errors import InvalidInput
from finops.money import to_micros

OWNER_TAGS = ("team", "user:team", "user_team")
COST_CENTER_TAGS = (
    "cost-center",
    "cost_center",
    "user:cost-center",
    "user:cost_center",
    "user_cost_center",
    "user_cost-center",
)
_CURRENCY = re.compile(r"^[A-Z]{3}$")


class CloudFormat(StrEnum):
    FOCUS = "focus"
    CUR2 = "cur2"


@dataclass(frozen=True)
class _Columns:
    """Where a format keeps each field; ``optional`` are the columns it may leave out."""

    billed: str
    effective: str
    currency: str
    start: str
    end: str
    service: str
    resource: str
    account: str
    tags: str
    category: str
    categories: Mapping[str, ChargeCategory]  # the category column's values
    optional: tuple[str, ...]
    null: str | None = None  # a token meaning null, besides the empty field
    amortised: bool = False  # CUR 2.0: the effective cost is amortised by line item type
    commitments: tuple[str, ...] = ()  # the columns naming a line's commitment, the first given wins

    def required(self) -> tuple[str, ...]:
        names = (
            self.billed,
            self.effective,
            self.currency,
            self.start,
            self.end,
            self.service,
            self.resource,
            self.account,
            self.tags,
        )
        return tuple(name for name in names if name not in self.optional)


COLUMNS = {
    CloudFormat.FOCUS: _Columns(
        billed="BilledCost",
        effective="EffectiveCost",
        currency="BillingCurrency",
        start="ChargePeriodStart",
        end="ChargePeriodEnd",
        service="ServiceName",
        resource="ResourceId",
        account="SubAccountId",
        tags="Tags",
        category="ChargeCategory",
        categories=FOCUS_CATEGORIES,
        optional=("EffectiveCost", "Tags", "ChargeCategory"),
        null="NULL",
        commitments=("CommitmentDiscountId",),
    ),
    CloudFormat.CUR2: _Columns(
        billed="line_item_unblended_cost",
        effective="line_item_net_unblended_cost",
        currency="line_item_currency_code",
        start="line_item_usage_start_date",
        end="line_item_usage_end_date",
        service="line_item_product_code",
        resource="line_item_resource_id",
        account="line_item_usage_account_id",
        tags="resource_tags",
        category="line_item_line_item_type",
        categories=CUR_LINE_ITEM_TYPES,
        optional=("line_item_net_unblended_cost", "resource_tags", "line_item_line_item_type"),
        amortised=True,
        commitments=(CUR_SAVINGS_PLAN_ARN, CUR_RESERVATION_ARN),
    ),
}


@dataclass(frozen=True)
class CloudCost:
    """One row of a cloud cost report: direct spend outside the cluster."""

    row: int  # 1 = the first row after the header
    start: datetime  # charge period, half-open, UTC
    end: datetime
    billed_micros: int
    effective_micros: int | None  # None when the report does not give it
    currency: str
    service: str | None
    resource_id: str | None
    account: str | None
    team: str | None  # None when untagged
    cost_center: str | None
    category: ChargeCategory
    tags: Mapping[str, str] = field(default_factory=dict)
    commitment: str | None = None  # the commitment discount (Savings Plan, reservation) it belongs to

    @property
    def cost_micros(self) -> int:
        """What the chargeback counts: the effective cost (discounts applied, commitments
        amortised, so a purchase is not counted twice) when known, else the billed cost."""
        return self.billed_micros if self.effective_micros is None else self.effective_micros


def detect_format(header: Sequence[str]) -> CloudFormat:
    """FOCUS or CUR 2.0 from the header's columns; ``InvalidInput`` naming a missing column."""
    names = set(header)
    if {"BilledCost", "ChargePeriodStart"} <= names:
        found = CloudFormat.FOCUS
    elif "line_item_unblended_cost" in names:
        found = CloudFormat.CUR2
    else:
        raise InvalidInput(
            "header: neither a FOCUS report (BilledCost, ChargePeriodStart, ...) nor an AWS CUR 2.0 report "
            "(line_item_unblended_cost, ...)"
        )
    for column in COLUMNS[found].required():
        if column not in names:
            raise InvalidInput(f"header: column {column} is missing (required in a {found.value} report)")
    return found


def parse_cloud_costs(header: Sequence[str], rows: Iterable[Mapping[str, str]]) -> tuple[CloudFormat, list[CloudCost]]:
    """Parse a cloud cost report's rows (``csv.DictReader`` dicts: a short row's missing fields
    are ``None``, a long row's extra fields are under the key ``None``). All or nothing: the first
    bad row raises ``InvalidInput`` naming its number and column."""
    fmt = detect_format(header)
    columns = COLUMNS[fmt]
    width = len(header)
    return fmt, [_parse_row(number, row, columns, width) for number, row in enumerate(rows, start=1)]


def _parse_row(number: int, row: Mapping[str, str], columns: _Columns, width: int) -> CloudCost:
    where = f"row {number}"
    if None in row or any(value is None for value in row.values()):
        raise InvalidInput(f"{where}: has a different number of fields than the header's {width}")

    def text(column: str) -> str:
        value = row.get(column)
        value = value.strip() if isinstance(value, str) else ""
        return "" if value == columns.null else value

    def optional(column: str) -> str | None:
        return text(column) or None

    start = _timestamp(where, columns.start, text(columns.start))
    end = _timestamp(where, columns.end, text(columns.end))
    if end < start:
        raise InvalidInput(f"{where}, column {columns.end}: {text(columns.end)!r} is before {columns.start}")
    currency = text(columns.currency)
    if not _CURRENCY.fullmatch(currency):
        raise InvalidInput(f"{where}, column {columns.currency}: {currency!r} is not a currency code (e.g. EUR)")
    billed = _amount(where, columns.billed, text(columns.billed))
    if billed is None:
        raise InvalidInput(f"{where}, column {columns.billed}: required")
    tags = _tags(where, columns.tags, text(columns.tags))
    service = optional(columns.service)
    category = _category(where, columns, row, text(columns.category), service)
    effective = _amount(where, columns.effective, text(columns.effective))
    if columns.amortised and columns.category in row:
        effective = _cur_amortised(where, text(columns.category), text, effective)
    return CloudCost(
        row=number,
        start=start,
        end=end,
        billed_micros=billed,
        effective_micros=effective,
        currency=currency,
        service=service,
        resource_id=optional(columns.resource),
        account=optional(columns.account),
        team=_tag(where, columns.tags, tags, OWNER_TAGS),
        cost_center=_tag(where, columns.tags, tags, COST_CENTER_TAGS),
        category=category,
        tags=tags,
        commitment=next((value for column in columns.commitments if (value := optional(column))), None),
    )


def _category(where: str, columns: _Columns, row: Mapping[str, str], value: str, service: str | None) -> ChargeCategory:
    category = ChargeCategory.USAGE
    if columns.category in row:
        known = columns.categories.get(value)
        if known is None:
            what = "required" if not value else f"{value!r} is not a known value"
            raise InvalidInput(f"{where}, column {columns.category}: {what} (one of {', '.join(columns.categories)})")
        category = known
    if category in (ChargeCategory.USAGE, ChargeCategory.PURCHASE) and is_support(service):
        return ChargeCategory.SUPPORT
    return category


def _cur_amortised(where: str, kind: str, text: Callable[[str], str], net: int | None) -> int | None:
    """A CUR 2.0 line's amortised cost (``finops.cloudcharges``' rule); ``net`` (the net unblended
    cost) for the other types, and when a column the type's rule needs is absent or empty. The
    amounts are added exactly (a context wide enough for any two report amounts), rounded once."""
    parts = amortised_rule(kind, reserved=bool(text(CUR_RESERVATION_ARN)))
    if parts is None:
        return net
    total = Decimal(0)
    for column, sign in parts:
        amount = _decimal(where, column, text(column))
        if amount is None:
            return net
        with localcontext(prec=200):
            total += sign * amount
    return _micros(where, " and ".join(column for column, _ in parts), total, str(total))


def _amount(where: str, column: str, text: str) -> int | None:
    amount = _decimal(where, column, text)
    return None if amount is None else _micros(where, column, amount, repr(text))


def _decimal(where: str, column: str, text: str) -> Decimal | None:
    if not text:
        return None
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise InvalidInput(f"{where}, column {column}: {text!r} is not a decimal amount") from None
    if not amount.is_finite():
        raise InvalidInput(f"{where}, column {column}: {text!r} is not a decimal amount")
    return amount


def _micros(where: str, column: str, amount: Decimal, shown: str) -> int:
    try:
        return to_micros(amount)
    except InvalidInput:
        raise InvalidInput(f"{where}, column {column}: {shown} is too large to store in micros") from None


def _timestamp(where: str, column: str, text: str) -> datetime:
    if not text:
        raise InvalidInput(f"{where}, column {column}: required (an ISO 8601 timestamp)")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"{where}, column {column}: {text!r} is not an ISO 8601 timestamp") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _tags(where: str, column: str, text: str) -> dict[str, str]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidInput(f"{where}, column {column}: {_short(text)} is not JSON") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}, column {column}: {_short(text)} is not a JSON object of tags")
    tags: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            continue
        if not isinstance(item, str):
            raise InvalidInput(f"{where}, column {column}: tag {key!r} has a value that is not a string")
        tags[key] = item
    return tags


def _tag(where: str, column: str, tags: Mapping[str, str], keys: tuple[str, ...]) -> str | None:
    found = {key: tags[key].strip() for key in keys if tags.get(key, "").strip()}
    values = set(found.values())
    if len(values) > 1:
        named = ", ".join(f"{key}={value!r}" for key, value in found.items())
        raise InvalidInput(f"{where}, column {column}: tags disagree ({named})")
    return values.pop() if values else None


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
