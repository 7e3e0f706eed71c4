"""The commitments a cloud bill applies (Savings Plans, reservations, committed use), as the
policy lists them, and FOCUS 1.3's Contract Commitment dataset written from them (``CommitmentDataset``).

A bill says which lines a commitment covered (``CommitmentDiscountId``, a Savings Plan's ARN),
not its terms: when it started and ends, what was committed. Those are in the contract, so the
operator lists them under ``reconciliation.commitments``::

    reconciliation:
      commitments:
        - id: arn:aws:savingsplans::111122223333:savingsplan/0000-0001   # as the bill names it
          contract: enterprise-agreement-2026   # optional: the contract it belongs to (default: id)
          category: spend                       # spend (an amount of money) | usage (a quantity)
          type: Compute Savings Plan
          start: 2026-01-01T00:00:00Z           # the commitment's term, half-open
          end: 2029-01-01T00:00:00Z
          cost: "26280.00"                      # spend: committed over the term, policy currency
          # quantity: "8760" and unit: Hours    # usage: committed over the term
          description: 3-year compute plan, no upfront
          # contract_start, contract_end: the contract's term (default: the commitment's)

A FOCUS 1.3 export on a bill basis names, on each row split from a covered charge, the
commitment and the row's part of the covered cost (``ContractApplied``), and writes one row per
commitment it names to the Contract Commitment dataset. A commitment the bill
applies but the policy does not list is an error naming it: its terms are not ours to invent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from finops.errors import InvalidInput

_KEYS = (
    "id",
    "contract",
    "category",
    "type",
    "start",
    "end",
    "cost",
    "quantity",
    "unit",
    "description",
    "contract_start",
    "contract_end",
)

COLUMNS = (  # the Contract Commitment dataset's columns, in the spec's order
    "BillingCurrency",
    "ContractCommitmentCategory",
    "ContractCommitmentCost",
    "ContractCommitmentDescription",
    "ContractCommitmentId",
    "ContractCommitmentPeriodEnd",
    "ContractCommitmentPeriodStart",
    "ContractCommitmentQuantity",
    "ContractCommitmentType",
    "ContractCommitmentUnit",
    "ContractId",
    "ContractPeriodEnd",
    "ContractPeriodStart",
)
DECIMALS = frozenset({"ContractCommitmentCost", "ContractCommitmentQuantity"})
DATETIMES = frozenset(name for name in COLUMNS if name.endswith(("PeriodEnd", "PeriodStart")))


class CommitmentCategory(StrEnum):
    SPEND = "spend"
    USAGE = "usage"


@dataclass(frozen=True)
class Commitment:
    id: str
    contract: str
    category: CommitmentCategory
    type: str
    start: datetime
    end: datetime
    contract_start: datetime
    contract_end: datetime
    cost: Decimal | None = None
    quantity: Decimal | None = None
    unit: str | None = None
    description: str | None = None

    def as_document(self) -> dict[str, object]:
        document: dict[str, object] = {
            "id": self.id,
            "contract": self.contract,
            "category": self.category.value,
            "type": self.type,
            "start": _iso(self.start),
            "end": _iso(self.end),
            "contract_start": _iso(self.contract_start),
            "contract_end": _iso(self.contract_end),
        }
        optional = {"cost": self.cost, "quantity": self.quantity, "unit": self.unit, "description": self.description}
        return document | {key: str(value) for key, value in optional.items() if value is not None}


def parse_commitments(value: object, path: str) -> tuple[Commitment, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{path}: must be a list of commitments, got {value!r}")
    found: dict[str, Commitment] = {}
    for i, item in enumerate(value):
        commitment = _commitment(item, f"{path}[{i}]")
        if commitment.id in found:
            raise InvalidInput(f"{path}[{i}].id: {commitment.id!r} is listed twice")
        found[commitment.id] = commitment
    return tuple(found.values())


def _commitment(item: object, where: str) -> Commitment:
    if not isinstance(item, Mapping):
        raise InvalidInput(f"{where}: must be a mapping, got {item!r}")
    for key in item:
        if key not in _KEYS:
            raise InvalidInput(f"{where}.{key}: unknown key (expected one of {', '.join(_KEYS)})")
    ident = _text(item, "id", where, required=True)
    categories = {member.value: member for member in CommitmentCategory}
    category = categories.get(item["category"]) if isinstance(item.get("category"), str) else None
    if category is None:
        raise InvalidInput(f"{where}.category: {item.get('category')!r} is not one of spend, usage")
    start, end = _moment(item, "start", where), _moment(item, "end", where)
    if end <= start:
        raise InvalidInput(f"{where}.end: must be after start")
    contract_start = _moment(item, "contract_start", where) if "contract_start" in item else start
    contract_end = _moment(item, "contract_end", where) if "contract_end" in item else end
    if contract_end <= contract_start:
        raise InvalidInput(f"{where}.contract_end: must be after contract_start")
    cost, quantity = _amount(item, "cost", where), _amount(item, "quantity", where)
    unit = _text(item, "unit", where) or None
    if category is CommitmentCategory.SPEND and cost is None:
        raise InvalidInput(f"{where}.cost: required for a spend commitment (the amount committed over the term)")
    if category is CommitmentCategory.USAGE and (quantity is None or unit is None):
        raise InvalidInput(f"{where}.quantity: a usage commitment needs quantity and unit (e.g. 8760 Hours)")
    if (quantity is None) != (unit is None):
        raise InvalidInput(f"{where}.unit: give unit exactly when quantity is given")
    return Commitment(
        id=ident,
        contract=_text(item, "contract", where) or ident,
        category=category,
        type=_text(item, "type", where, required=True),
        start=start,
        end=end,
        contract_start=contract_start,
        contract_end=contract_end,
        cost=cost,
        quantity=quantity,
        unit=unit,
        description=_text(item, "description", where) or None,
    )


def _text(item: Mapping[str, object], key: str, where: str, *, required: bool = False) -> str:
    value = item.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{where}.{key}: {'required, ' if value is None else ''}must be text, got {value!r}")
    return value.strip()


def _moment(item: Mapping[str, object], key: str, where: str) -> datetime:
    value = item.get(key)
    if isinstance(value, datetime):  # YAML reads an unquoted timestamp as one
        moment = value
    elif isinstance(value, date):  # YAML reads 2026-01-01 as a date: a term starts at a moment
        raise InvalidInput(f"{where}.{key}: {value} has no time (write {value}T00:00:00Z)")
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"{where}.{key}: {value!r} is not an ISO 8601 timestamp") from None
    else:
        raise InvalidInput(f"{where}.{key}: required, an ISO 8601 timestamp such as 2026-01-01T00:00:00Z")
    if moment.tzinfo is None:
        raise InvalidInput(f"{where}.{key}: {value!s} has no UTC offset (write 2026-01-01T00:00:00Z)")
    return moment.astimezone(UTC)


def _amount(item: Mapping[str, object], key: str, where: str) -> Decimal | None:
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str):  # a YAML float would already be rounded
        raise InvalidInput(f'{where}.{key}: {value!r} must be a quoted decimal ("26280.00")')
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise InvalidInput(f"{where}.{key}: {value!r} is not a decimal number") from None
    if not amount.is_finite() or amount < 0:
        raise InvalidInput(f"{where}.{key}: {value!r} must be a finite amount, zero or more")
    return amount


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def contract_of(commitments: Iterable[Commitment], ident: str) -> Commitment:
    """The listed commitment ``ident`` (as a bill names it); ``InvalidInput`` when unlisted."""
    for commitment in commitments:
        if commitment.id == ident:
            return commitment
    raise InvalidInput(
        f"policy.reconciliation.commitments: the bill applies commitment {ident!r}, which is not listed; "
        "add it with its term (start, end), category, type and amount"
    )


@dataclass(frozen=True)
class CommitmentDataset:
    """FOCUS 1.3's Contract Commitment dataset: one row per commitment, strings (empty = null)."""

    commitments: tuple[Commitment, ...]
    currency: str
    columns = COLUMNS
    decimals = DECIMALS
    datetimes = DATETIMES

    def rows(self) -> Iterator[dict[str, str]]:
        for c in sorted(self.commitments, key=lambda c: c.id):
            yield {
                "BillingCurrency": self.currency,
                "ContractCommitmentCategory": c.category.value.capitalize(),
                "ContractCommitmentCost": "" if c.cost is None else f"{c.cost:f}",
                "ContractCommitmentDescription": c.description or "",
                "ContractCommitmentId": c.id,
                "ContractCommitmentPeriodEnd": _iso(c.end),
                "ContractCommitmentPeriodStart": _iso(c.start),
                "ContractCommitmentQuantity": "" if c.quantity is None else f"{c.quantity:f}",
                "ContractCommitmentType": c.type,
                "ContractCommitmentUnit": c.unit or "",
                "ContractId": c.contract,
                "ContractPeriodEnd": _iso(c.contract_end),
                "ContractPeriodStart": _iso(c.contract_start),
            }
