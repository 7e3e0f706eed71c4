"""We test these aspects of ``finops.money`` at its edges (where ``make mutate``'s mutants of the
module would otherwise go unnoticed):

- whole currency units (ints) convert to micros exactly, as Decimals do;
- the largest storable amount is exactly a PostgreSQL bigint of micros, either sign; one micro
  more is refused, with a message naming the amount;
- a PriceBook rate's leading zeros do not count towards its 12 integer digits;
- a displayed amount rounds half-even whatever the caller's decimal context says.
"""

from __future__ import annotations

import decimal
from decimal import ROUND_HALF_UP, Decimal

import pytest

from finops.errors import InvalidInput
from finops.money import MAX_MICROS, format_amount, parse_rate, to_micros


def test_whole_units_convert_like_decimals() -> None:
    assert to_micros(5) == to_micros(Decimal(5)) == 5_000_000
    assert to_micros(-3) == -3_000_000
    assert to_micros(0) == 0


@pytest.mark.parametrize("sign", [1, -1], ids=["positive", "negative"])
def test_the_largest_amount_is_a_bigint_of_micros(sign: int) -> None:
    largest = Decimal(sign * MAX_MICROS).scaleb(-6)  # 9,223,372,036,854.775807
    assert to_micros(largest) == sign * MAX_MICROS
    beyond = Decimal(sign * (MAX_MICROS + 1)).scaleb(-6)
    with pytest.raises(InvalidInput, match=rf"^amount {beyond} is too large to store in micros$"):
        to_micros(beyond)


def test_leading_zeros_of_a_rate_do_not_count_as_integer_digits() -> None:
    # 19 characters before the point, one significant digit: within the 12 integer digits.
    assert parse_rate("spec.rates.cpuHour", "0000000000000000001.5") == Decimal("1.5")
    with pytest.raises(InvalidInput, match="more than 12 integer digits"):
        parse_rate("spec.rates.cpuHour", "1000000000000")  # 13 significant digits


def test_a_displayed_amount_rounds_half_even_in_any_decimal_context() -> None:
    with decimal.localcontext(rounding=ROUND_HALF_UP):
        assert format_amount(1_525_000) == "1.52"  # half-up would say 1.53
        assert format_amount(1_535_000) == "1.54"
        assert format_amount(1_525_000, places=3) == "1.525"
