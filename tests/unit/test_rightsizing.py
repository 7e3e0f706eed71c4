"""We test these aspects of the rightsizing arithmetic (``finops.quantities``, ``finops.rightsizing``):

- Kubernetes quantities parse exactly (binary, decimal SI and exponent suffixes), bad ones name
  the field;
- suggestions round up to 0.01 cores and 16 MiB, and a value on a step is kept;
- the longest run is the request held for the most hours, ties going to the larger request;
- the change is price x (max(suggested, usage) x hours - billed) per row at the row's own price,
  exact until one rounding, and the month is x 720 / the measured period (per hour, its longest row);
- a row without a positive billed quantity or a cost is unpriced, every priced row is counted;
- an upper bound above 3x the target is unsettled;
- display texts: no bare decimal point, Ki for whole KiB, other values as plain numbers.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from finops.errors import InvalidInput
from finops.quantities import parse_quantity
from finops.rightsizing import RowUse, change, decimal_text, longest_run, quantity_text, suggest, unsettled

MIB = 1024**2


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("250m", Fraction(1, 4)),
        ("2", Fraction(2)),
        ("1.5Gi", Fraction(3 * 1024**3, 2)),
        ("512Mi", Fraction(512 * MIB)),
        ("262144k", Fraction(262_144_000)),
        ("1e3", Fraction(1000)),
        ("100n", Fraction(1, 10_000_000)),
        (".5", Fraction(1, 2)),
        (3, Fraction(3)),
    ],
    ids=["milli", "whole", "Gi-fraction", "Mi", "kilo", "exponent", "nano", "leading-dot", "int"],
)
def test_quantities_parse_exactly(text: str | int, value: Fraction) -> None:
    assert parse_quantity("q", text) == value


@pytest.mark.parametrize("text", ["", "1.5X", "Mi", "1 Gi", "0x10", True, 1.5], ids=repr)
def test_bad_quantities_name_the_field(text: object) -> None:
    with pytest.raises(InvalidInput, match=r"^target\.cpu: "):
        parse_quantity("target.cpu", text)


@pytest.mark.parametrize(
    ("resource", "target", "suggested", "text"),
    [
        ("cpu", Fraction(123, 1000), Fraction(13, 100), "130m"),
        ("cpu", Fraction(13, 100), Fraction(13, 100), "130m"),
        ("cpu", Fraction(2), Fraction(2), "2"),
        ("cpu", Fraction(1, 10**6), Fraction(1, 100), "10m"),
        ("memory", Fraction(100 * MIB), Fraction(112 * MIB), "112Mi"),
        ("memory", Fraction(112 * MIB), Fraction(112 * MIB), "112Mi"),
        ("memory", Fraction(1), Fraction(16 * MIB), "16Mi"),
        ("memory", Fraction(1023 * MIB), Fraction(1024 * MIB), "1Gi"),
    ],
)
def test_suggestions_round_up_to_the_step(resource: str, target: Fraction, suggested: Fraction, text: str) -> None:
    assert suggest(resource, target) == suggested
    assert quantity_text(resource, suggested) == text


def row(
    hour: int = 0,
    hours: str = "1",
    request: str | None = "0.25",
    usage: str | None = "0.05",
    billed: str | None = "0.25",
    cost: int | None = 8_000,
) -> RowUse:
    def f(value: str | None) -> Fraction | None:
        return None if value is None else Fraction(value)

    return RowUse(hour, Fraction(hours), f(request), f(usage), f(billed), cost)


def test_longest_run() -> None:
    rows = [row(0, request="0.5"), row(1, request="0.25"), row(2, hours="0.5", request="0.25"), row(3, request=None)]
    assert longest_run(rows) == Fraction(1, 4)
    assert longest_run([row(0, request="0.5"), row(1, request="0.25")]) == Fraction(1, 2)  # tie: the larger
    assert longest_run([row(request=None)]) is None


def test_the_change_is_priced_per_row_at_its_own_price() -> None:
    # The module's worked example: 0.032 per core-hour, 0.25 billed, 0.13 suggested, 0.05 used.
    one = change([row()], Fraction(13, 100))
    assert one.exact_micros == -3840 and one.window_micros == -3840
    assert one.measured_hours == 1 and one.monthly_micros == -2_764_800
    # One rounding: -0.5 micro stays exact until the end (half-even: 0), the month is exact x 720.
    tiny = change([row(usage="0", billed="1", cost=1)], Fraction(1, 2))
    assert (tiny.exact_micros, tiny.window_micros, tiny.monthly_micros) == (Fraction(-1, 2), 0, -360)
    # Usage above the suggestion is billed as usage; each row at its own price.
    rows = [row(0, usage="0.2", cost=1_000_000), row(0, usage="0.01", cost=2_000_000)]
    both = change(rows, Fraction(1, 10))
    assert (
        both.exact_micros
        == Fraction(4, 1) * (Fraction(2, 10) - Fraction(1, 4)) * 1_000_000
        + Fraction(8) * (Fraction(1, 10) - Fraction(1, 4)) * 1_000_000
    )
    assert both.measured_hours == 1  # two replicas in one hour are one measured hour


def test_unpriced_rows_and_partial_hours() -> None:
    rows = [row(0, cost=None), row(1, billed="0"), row(2, hours="0.5", billed="0.125", cost=1_000_000)]
    result = change(rows, Fraction(1, 4))
    assert (result.priced_rows, result.unpriced_rows) == (1, 2)
    assert result.measured_hours == Fraction(5, 2) and result.exact_micros == 0  # 0.25 x 0.5 = billed
    assert change([], Fraction(1)).monthly_micros == 0


def test_unsettled_above_three_times_the_target() -> None:
    assert unsettled(Fraction(1), Fraction(301, 100)) and not unsettled(Fraction(1), Fraction(3))
    assert not unsettled(Fraction(1), None)
    assert decimal_text(Fraction(1, 3)) == "0.333333" and decimal_text(Fraction(-5, 2)) == "-2.5"


def test_exponents_up_to_thirty_are_accepted() -> None:
    assert parse_quantity("q", "1e30") == 10**30 and parse_quantity("q", "1E-30") == Fraction(1, 10**30)
    with pytest.raises(InvalidInput) as caught:
        parse_quantity("target.memory", "1e31")
    assert caught.value.message == "target.memory: '1e31' has an exponent beyond any resource quantity"


def test_the_measured_hour_is_the_longest_row_whichever_comes_first() -> None:
    rows = [row(0, hours="1"), row(0, hours="0.5"), row(1, hours="0.25"), row(1, hours="0.75")]
    assert change(rows, Fraction(1, 4)).measured_hours == Fraction(7, 4)


def test_every_priced_row_is_counted_and_a_row_without_a_positive_billed_quantity_is_not() -> None:
    rows = [row(0), row(1), row(2), row(3, billed=None), row(4, billed="-0.25"), row(5, billed="0")]
    result = change(rows, Fraction(13, 100))
    assert (result.priced_rows, result.unpriced_rows) == (3, 3)
    assert result.exact_micros == 3 * -3840  # the unpriced rows add nothing, not even a negative price


def test_unsettled_is_three_times_the_target_not_three_over_it() -> None:
    assert not unsettled(Fraction(2), Fraction(6)) and unsettled(Fraction(2), Fraction(61, 10))
    assert not unsettled(Fraction(1, 2), Fraction(1))  # 3 / 0.5 would be 6: below it, 3 x 0.5 = 1.5: above


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(3), "3"),
        (Fraction(-3), "-3"),
        (Fraction(0), "0"),
        (Fraction(-1, 10**7), "0"),
        (Fraction(1, 10), "0.1"),
    ],
)
def test_decimal_text_drops_a_bare_point(value: Fraction, text: str) -> None:
    assert decimal_text(value) == text


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        ("memory", Fraction(2048), "2Ki"),
        ("memory", Fraction(3 * 1024), "3Ki"),
        ("memory", Fraction(1000), "1000"),  # no binary unit divides it
        ("memory", Fraction(0), "0"),
        ("memory", Fraction(1, 2), "0.5"),  # not whole bytes: shown, never a suggestion
        ("cpu", Fraction(1, 2000), "0.0005"),  # not whole millicores: shown, never a suggestion
    ],
)
def test_quantity_text_of_other_values(resource: str, value: Fraction, text: str) -> None:
    assert quantity_text(resource, value) == text
