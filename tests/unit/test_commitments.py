"""The commitments the policy lists (``finops.commitments``): parsed with errors naming the field,
and written as FOCUS 1.3's Contract Commitment dataset."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from finops.commitments import COLUMNS, CommitmentCategory, CommitmentDataset, contract_of, parse_commitments
from finops.errors import InvalidInput
from tests.focus_conformance import check_commitments

PLAN: dict[str, Any] = {
    "id": "arn:aws:savingsplans::111122223333:savingsplan/plan-1",
    "contract": "enterprise-2026",
    "category": "spend",
    "type": "Compute Savings Plan",
    "start": datetime(2026, 1, 1, tzinfo=UTC),  # as YAML reads an unquoted timestamp
    "end": "2029-01-01T00:00:00Z",
    "cost": "26280.00",
    "description": "3-year compute plan",
}
RESERVATION: dict[str, Any] = {
    "id": "ri-1",
    "category": "usage",
    "type": "Reserved Instance",
    "start": "2026-01-01T00:00:00Z",
    "end": "2027-01-01T00:00:00Z",
    "quantity": "8760",
    "unit": "Hours",
}


def test_a_spend_and_a_usage_commitment_are_read() -> None:
    plan, reservation = parse_commitments([PLAN, RESERVATION], "c")
    assert plan.category is CommitmentCategory.SPEND and plan.cost == Decimal("26280.00")
    assert plan.contract == "enterprise-2026" and plan.contract_start == plan.start
    assert reservation.contract == "ri-1" and reservation.quantity == Decimal(8760) and reservation.unit == "Hours"
    assert reservation.cost is None and reservation.description is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"category": "money"}, "c[0].category: 'money' is not one of spend, usage"),
        ({"category": ["spend"]}, "c[0].category: ['spend'] is not one of spend, usage"),
        ({"end": date(2029, 1, 1)}, "c[0].end: 2029-01-01 has no time (write 2029-01-01T00:00:00Z)"),
        ({"end": "2025-01-01T00:00:00Z"}, "c[0].end: must be after start"),
        ({"start": "2026-01-01"}, "c[0].start: 2026-01-01 has no UTC offset (write 2026-01-01T00:00:00Z)"),
        ({"start": "first of May"}, "c[0].start: 'first of May' is not an ISO 8601 timestamp"),
        ({"cost": 26280.5}, 'c[0].cost: 26280.5 must be a quoted decimal ("26280.00")'),
        ({"cost": "-1"}, "c[0].cost: '-1' must be a finite amount, zero or more"),
        ({"cost": None}, "c[0].cost: required for a spend commitment (the amount committed over the term)"),
        ({"type": None}, "c[0].type: required, must be text, got None"),
        ({"term": "3y"}, "c[0].term: unknown key (expected one of id, contract, category, type, start, end, cost,"),
        ({"contract_end": "2020-01-01T00:00:00Z"}, "c[0].contract_end: must be after contract_start"),
        ({"quantity": "10"}, "c[0].unit: give unit exactly when quantity is given"),
    ],
)
def test_a_bad_field_is_named(change: dict[str, Any], message: str) -> None:
    item = {key: value for key, value in (PLAN | change).items() if value is not None}
    with pytest.raises(InvalidInput) as caught:
        parse_commitments([item], "c")
    assert str(caught.value).startswith(message)


def test_a_usage_commitment_needs_its_quantity_and_unit_and_ids_are_unique() -> None:
    with pytest.raises(InvalidInput, match=r"c\[0\]\.quantity: a usage commitment needs quantity and unit"):
        parse_commitments([{key: v for key, v in RESERVATION.items() if key != "unit"}], "c")
    with pytest.raises(InvalidInput, match=r"c\[1\]\.id: 'ri-1' is listed twice"):
        parse_commitments([RESERVATION, RESERVATION], "c")


def test_an_unlisted_commitment_is_an_error_naming_it() -> None:
    with pytest.raises(InvalidInput, match="the bill applies commitment 'sp-9', which is not listed"):
        contract_of(parse_commitments([PLAN], "c"), "sp-9")


def test_the_dataset_has_the_spec_columns_and_conforms() -> None:
    rows = list(CommitmentDataset(parse_commitments([PLAN, RESERVATION], "c"), "EUR").rows())
    assert [list(row) for row in rows] == [list(COLUMNS)] * 2
    assert rows[0]["ContractCommitmentCategory"] == "Spend" and rows[0]["ContractCommitmentCost"] == "26280.00"
    assert (
        rows[0]["ContractCommitmentQuantity"] == ""
        and rows[0]["ContractCommitmentPeriodStart"] == "2026-01-01T00:00:00Z"
    )
    assert rows[1]["ContractCommitmentUnit"] == "Hours" and rows[1]["ContractId"] == "ri-1"
    assert check_commitments(list(COLUMNS), rows) == []
