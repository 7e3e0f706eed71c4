"""We test these aspects of the rightsizing arithmetic (``finops.quantities``, ``finops.rightsizing``):

- Kubernetes quantities parse exactly (binary, decimal SI and exponent suffixes), bad ones name
  the field;
- suggestions round up to 0.01 cores and 16 MiB, and a value on a step is kept;
- the longest run is the request held for the most hours, ties going to the larger request;
- the change is price x (max(suggested, usage) x hours - billed) per row at the row's own price,
  exact until one rounding, and the month is x 720 / the measured period (per hour, its longest row);
- an upper bound above 3x the target is unsettled.
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
