"""Direct costs (finops.directcosts), unit by unit. We test these aspects:

- ``share_out``: who receives a pool of shared direct costs (owner, unallocated and cloud lines
  with positive allocated cost, nothing else), the exact amounts of the proportional and the even
  split, and ``__shared__`` when nobody can receive;
- ``DirectCost``: amounts in whole micros (a whole ``Decimal`` becomes an ``int``), each invalid
  charge period refused with its own message;
- ``DirectCost.within`` and ``overlaps``: a moment counts whole inside the period and nothing at
  or after its end; a charge period counts for its part inside, exactly.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

import pytest

from finops.allocations import UNALLOCATED
from finops.directcosts import DirectCost, share_out
from finops.lines import CLOUD, SHARED, LineKind
from finops.periods import Period
from finops.policy import SharedSplit

M = 1_000_000
NOV = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
PAYMENTS = (LineKind.OWNER, "payments")
SEARCH = (LineKind.OWNER, "search")
UNTAGGED = (LineKind.UNALLOCATED, UNALLOCATED)
CLOUD_LINE = (LineKind.CLOUD, CLOUD)
SHARED_LINE = (LineKind.SHARED, SHARED)


def test_owner_unallocated_and_cloud_lines_with_positive_cost_receive_in_proportion() -> None:
    allocated = {
        PAYMENTS: Fraction(3 * M),
        UNTAGGED: Fraction(M),
        CLOUD_LINE: Fraction(2 * M),
        SEARCH: Fraction(0),  # no cost: receives nothing
        (LineKind.OWNER, "refunded"): Fraction(-M),  # negative: receives nothing
        (LineKind.IDLE, "__idle__"): Fraction(50 * M),  # not a receiver, whatever its cost
        (LineKind.UNRECONCILED, "__unreconciled__"): Fraction(50 * M),
    }
    shares = share_out(allocated, Fraction(7), SharedSplit.PROPORTIONAL)
    assert shares == {PAYMENTS: Fraction(7, 2), UNTAGGED: Fraction(7, 6), CLOUD_LINE: Fraction(7, 3)}
    assert sum(shares.values()) == 7


def test_the_even_split_gives_each_receiver_the_same_exact_amount() -> None:
    allocated = {PAYMENTS: Fraction(9 * M), SEARCH: Fraction(M), UNTAGGED: Fraction(M, 2)}
    assert share_out(allocated, Fraction(10), SharedSplit.EVEN) == dict.fromkeys(allocated, Fraction(10, 3))
    proportional = share_out(allocated, Fraction(21), SharedSplit.PROPORTIONAL)
    assert proportional == {PAYMENTS: Fraction(18), SEARCH: Fraction(2), UNTAGGED: Fraction(1)}


def test_a_line_below_one_micro_still_receives() -> None:
    allocated = {PAYMENTS: Fraction(1), SEARCH: Fraction(1, 2)}
    assert share_out(allocated, Fraction(3), SharedSplit.PROPORTIONAL) == {PAYMENTS: Fraction(2), SEARCH: Fraction(1)}


@pytest.mark.parametrize(
    "allocated",
    [{}, {PAYMENTS: Fraction(0)}, {PAYMENTS: Fraction(-M)}, {(LineKind.IDLE, "__idle__"): Fraction(M)}],
    ids=["no-lines", "zero", "negative", "idle-only"],
)
def test_without_a_receiver_the_pool_stays_on_the_shared_line(allocated: dict) -> None:  # type: ignore[type-arg]
    assert share_out(allocated, Fraction(-5), SharedSplit.PROPORTIONAL) == {SHARED_LINE: Fraction(-5)}
    assert share_out(allocated, Fraction(-5), SharedSplit.EVEN) == {SHARED_LINE: Fraction(-5)}


def test_an_empty_pool_is_shared_out_to_nobody() -> None:
    assert share_out({PAYMENTS: Fraction(M)}, Fraction(0), SharedSplit.EVEN) == {}


def test_a_whole_decimal_amount_becomes_int_micros() -> None:
    cost = DirectCost("payments", None, Decimal("5000000"))  # type: ignore[arg-type]
    assert cost.amount_micros == 5 * M and type(cost.amount_micros) is int


@pytest.mark.parametrize("amount", [Decimal("1.5"), 1.0, True, "5"], ids=["fraction", "float", "bool", "text"])
def test_an_amount_not_in_whole_micros_is_refused_naming_the_field(amount: object) -> None:
    with pytest.raises(ValueError, match=r"^amount_micros must be whole micros, got "):
        DirectCost("payments", None, amount)  # type: ignore[arg-type]


def test_a_charge_period_needs_both_ends() -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for ends in ({"start": start}, {"end": start}):
        with pytest.raises(ValueError, match=r"^a direct cost's charge period needs both start and end$"):
            DirectCost("payments", None, M, **ends)  # type: ignore[arg-type]


@pytest.mark.parametrize("naive", ["start", "end", "both"])
def test_a_charge_period_must_be_timezone_aware_at_both_ends(naive: str) -> None:
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    if naive in ("start", "both"):
        start = start.replace(tzinfo=None)
    if naive in ("end", "both"):
        end = end.replace(tzinfo=None)
    with pytest.raises(ValueError, match=r"^a direct cost's charge period must be timezone-aware$"):
        DirectCost("payments", None, M, start=start, end=end)


def test_a_charge_period_ending_before_it_starts_is_refused() -> None:
    start = datetime(2026, 11, 2, tzinfo=UTC)
    with pytest.raises(ValueError, match=r"^a direct cost's charge period ends before it starts: "):
        DirectCost("payments", None, M, start=start, end=start - timedelta(microseconds=1))


def test_without_a_charge_period_the_amount_counts_whole() -> None:
    cost = DirectCost("payments", None, 7 * M)
    assert cost.within(NOV) == 7 * M and cost.overlaps(NOV)


@pytest.mark.parametrize(
    ("moment", "inside"),
    [
        (NOV.start, True),
        (NOV.end - timedelta(microseconds=1), True),
        (NOV.end, False),  # the period is half-open
        (NOV.start - timedelta(microseconds=1), False),
    ],
    ids=["at-start", "last-micro", "at-end", "before"],
)
def test_a_moment_counts_whole_inside_the_period_and_not_at_all_outside(moment: datetime, inside: bool) -> None:
    cost = DirectCost("payments", None, 7 * M, start=moment, end=moment)
    assert cost.within(NOV) == (7 * M if inside else 0)
    assert cost.overlaps(NOV) is inside


@pytest.mark.parametrize(
    ("start", "end", "part"),
    [
        (datetime(2026, 10, 31, 12, tzinfo=UTC), datetime(2026, 11, 1, 12, tzinfo=UTC), Fraction(1, 2)),
        (datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 3, tzinfo=UTC), Fraction(1, 3)),
        (datetime(2026, 10, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC), Fraction(30, 92)),
        (datetime(2026, 11, 3, tzinfo=UTC), datetime(2026, 11, 4, tzinfo=UTC), Fraction(1)),
        (datetime(2026, 12, 1, tzinfo=UTC), datetime(2026, 12, 2, tzinfo=UTC), Fraction(0)),  # adjacent
        (datetime(2026, 12, 5, tzinfo=UTC), datetime(2026, 12, 6, tzinfo=UTC), Fraction(0)),  # after
        (datetime(2026, 10, 5, tzinfo=UTC), datetime(2026, 10, 6, tzinfo=UTC), Fraction(0)),  # before
    ],
    ids=["half-before", "third-after", "spanning", "inside", "adjacent", "after", "before"],
)
def test_a_charge_period_counts_for_its_part_inside_exactly(start: datetime, end: datetime, part: Fraction) -> None:
    cost = DirectCost("payments", None, 92 * M, start=start, end=end)
    within = cost.within(NOV)
    assert within == 92 * M * part and isinstance(within, Fraction)
    assert cost.overlaps(NOV) is (part > 0)
