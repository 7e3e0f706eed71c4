"""We test these aspects of rounding a report table to cents (``finops.rounding``):

- largest remainder (Hamilton) gives the spare units to the largest remainders, ties to the first;
- a whole table: the grand total is the exact total rounded half-even, rows and columns add up,
  every cell, row total and column total is within one unit of exact, whole values stay put;
- the case where row totals by largest remainder would leave a column more than a unit off, alone
  and, generated, several times in one table;
- column totals given by the caller: met exactly with every cell and row within a unit, or refused
  when no such rounding reaches them (and bad totals refused by name).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finops.rounding import apportion, largest_remainder, round_half_even, round_table


def test_largest_remainder_gives_the_spare_units_to_the_largest_remainders() -> None:
    # option A of the method's example, in cents: 571,428.57 + 285,714.28 + 142,857.14
    values = [Fraction(571_428_57, 100), Fraction(285_714_28, 100), Fraction(142_857_14, 100)]
    assert largest_remainder(values, 1_000_000) == [571_429, 285_714, 142_857]
    assert largest_remainder(values, 1_000_001) == [571_429, 285_715, 142_857]
    assert largest_remainder(values, 999_999) == [571_428, 285_714, 142_857]


def test_largest_remainder_ties_go_to_the_first_and_whole_values_never_move() -> None:
    halves = [Fraction(1, 2), Fraction(3), Fraction(1, 2)]
    assert largest_remainder(halves, 4) == [1, 3, 0]
    with pytest.raises(ValueError, match="cannot round"):
        largest_remainder(halves, 6)
    assert largest_remainder([Fraction(-3, 2), Fraction(5, 2)], 1) == [-1, 2]


@settings(max_examples=300, deadline=None)
@given(
    numerators=st.lists(st.integers(-(10**9), 10**9), min_size=1, max_size=12),
    denominator=st.integers(1, 10**6),
    move=st.integers(-3, 3),
)
def test_apportion_rounds_as_largest_remainder_does(numerators: list[int], denominator: int, move: int) -> None:
    # the same fractions over one denominator, in integers: the same units, or the same refusal
    total = round(sum(Fraction(n, denominator) for n in numerators)) + move
    try:
        expected: list[int] | str = largest_remainder([Fraction(n, denominator) for n in numerators], total)
    except ValueError:
        expected = "refused"
    try:
        found: list[int] | str = apportion(numerators, denominator, total)
    except ValueError:
        found = "refused"
    assert found == expected


def test_apportion_ties_go_to_the_first_and_whole_values_never_move() -> None:
    assert apportion([1, 6, 1], 2, 4) == [1, 3, 0]
    assert apportion([3, 2, 2], 4, 2) == [1, 1, 0]  # 0.75 first, then the first of the two halves
    with pytest.raises(ValueError, match="cannot round"):
        apportion([1, 6, 1], 2, 6)


def test_round_half_even() -> None:
    assert [round_half_even(Fraction(n, 2)) for n in (1, 3, 5, -1, -3)] == [0, 2, 2, 0, -2]


def test_an_empty_table_and_ragged_rows() -> None:
    assert round_table([]) == []
    with pytest.raises(ValueError, match="same number"):
        round_table([[Fraction(1)], [Fraction(1), Fraction(2)]])


def test_a_column_is_kept_within_a_unit_even_when_that_moves_a_row_total() -> None:
    # Ten lines with 0.11 of a cent in the allocated column and an idle line with 0.3: by largest
    # remainder the idle line would take the one spare cent and the allocated column (101.1) would
    # show 100. The rounding moves that cent to an owner line instead.
    owners = [[Fraction(1011, 100), Fraction(0), Fraction(0)] for _ in range(10)]
    table = [*owners, [Fraction(0), Fraction(53, 10), Fraction(0)]]
    rounded = round_table(table)
    assert sum(map(sum, rounded)) == 106
    assert [sum(row[j] for row in rounded) for j in range(3)] == [101, 5, 0]
    assert rounded[-1] == [0, 5, 0]
    assert_controlled(table, rounded)


def test_a_row_total_that_moves_stays_within_a_unit_of_exact() -> None:
    # Row totals by largest remainder give the spare cent to a line of 0.3 + 0.3 (total 0.6, so 1),
    # leaving the first column (0.9) at 0. Moving a cent into that column takes one from a row: the
    # 0.6 line may give its cent to the 0.41 line, but may not take a second one (2 > 0.6 + 1).
    table = [
        [Fraction(45, 100), Fraction(0), Fraction(0)],
        [Fraction(0), Fraction(3, 10), Fraction(0)],
        [Fraction(0), Fraction(0), Fraction(3, 10)],
        [Fraction(0), Fraction(3, 10), Fraction(3, 10)],
        [Fraction(0), Fraction(11, 100), Fraction(3, 10)],
        [Fraction(45, 100), Fraction(0), Fraction(0)],
    ]
    rounded = round_table(table)
    assert_controlled(table, rounded)
    assert [sum(row) for row in rounded] == [0, 0, 0, 1, 1, 1]


def assert_controlled(table: list[list[Fraction]], rounded: list[list[int]]) -> None:
    def near(value: int, exact: Fraction) -> bool:
        return math.floor(exact) <= value <= math.ceil(exact)

    assert sum(map(sum, rounded)) == round_half_even(sum((sum(row, Fraction(0)) for row in table), Fraction(0)))
    for row, exact_row in zip(rounded, table, strict=True):
        assert near(sum(row), sum(exact_row, Fraction(0)))
        assert all(near(cell, exact) for cell, exact in zip(row, exact_row, strict=True))
    for j in range(len(table[0])):
        assert near(sum(row[j] for row in rounded), sum((row[j] for row in table), Fraction(0)))


cells = st.one_of(
    st.just(Fraction(0)),
    st.integers(-(10**6), 10**9),
    st.builds(Fraction, st.integers(-(10**8), 10**12), st.sampled_from([2, 3, 7, 100, 10_000, 10**6])),
).map(Fraction)


@given(st.integers(1, 4).flatmap(lambda width: st.lists(st.lists(cells, min_size=width, max_size=width), min_size=1)))
def test_any_table_rounds_with_every_sum_adding_up(table: list[list[Fraction]]) -> None:
    assert_controlled(table, round_table(table))


# Tables of lines with one or two costs each (an owner line; an idle line with idle and shared), a
# few whole cents and a small, middling or large fraction of one: the tables where cents must move
# between rows to keep every column within a cent (the case above); a run of 400 examples makes
# about twenty such moves, where the tables of the test above almost never need one.
def cost_line(width: int) -> st.SearchStrategy[list[Fraction]]:
    fraction = st.sampled_from([Fraction(11, 100), Fraction(3, 10), Fraction(45, 100)])
    cost = st.builds(lambda whole, part: whole + part, st.integers(0, 3), fraction)
    columns = st.sets(st.integers(0, width - 1), min_size=1, max_size=2)
    return st.builds(
        lambda js, values: [values[k] if k in js else Fraction(0) for k in range(width)],
        columns,
        st.lists(cost, min_size=width, max_size=width),
    )


@settings(max_examples=400)
@given(st.integers(2, 4).flatmap(lambda width: st.lists(cost_line(width), min_size=8, max_size=30)))
def test_tables_whose_columns_need_cents_moved_between_rows_still_add_up(table: list[list[Fraction]]) -> None:
    assert_controlled(table, round_table(table))


def test_given_column_totals_are_reached_or_refused() -> None:
    # Two rows of one whole unit each, split half and half over four columns: whichever two
    # columns are given the spare units, one per row can be paid, two from one row cannot.
    half = Fraction(1, 2)
    table = [[half, half, Fraction(0), Fraction(0)], [Fraction(0), Fraction(0), half, half]]
    rounded = round_table(table, [1, 0, 0, 1])
    assert rounded == [[1, 0, 0, 0], [0, 0, 0, 1]]
    with pytest.raises(ValueError, match="reaches the given column totals"):
        round_table(table, [1, 1, 0, 0])
    # Two half units: the grand total is one, which row totals by largest remainder give the
    # first row; a second column that asks for it moves that unit to the other row.
    assert round_table([[half, Fraction(0)], [Fraction(0), half]], [0, 1]) == [[0, 0], [0, 1]]
    with pytest.raises(ValueError, match="adding up to 2"):
        round_table(table, [1, 0, 0, 0])
    with pytest.raises(ValueError, match="rounded up or down"):
        round_table(table, [2, -1, 0, 1])


@given(st.integers(1, 4).flatmap(lambda width: st.lists(st.lists(cells, min_size=width, max_size=width), min_size=1)))
def test_given_column_totals_from_another_rounding_are_met_exactly(table: list[list[Fraction]]) -> None:
    # The columns as the transposed table rounds them: what the FOCUS export asks of its rows
    # (origin charges), given the report's lines. Reached exactly, or refused; never missed.
    transposed = [list(column) for column in zip(*table, strict=True)]
    targets = [sum(row) for row in round_table(transposed)]
    try:
        rounded = round_table(table, targets)
    except ValueError:
        return
    assert [sum(row[j] for row in rounded) for j in range(len(targets))] == targets
    assert_controlled(table, rounded)
