"""We test these aspects of the anomaly score's arithmetic (``finops.anomaly``), with values
computed by hand:

- the median (odd and even counts) and the median absolute deviation, exact;
- today's run-rate per day from its final hours (one final hour is enough);
- the score: (run-rate - median) / max(MAD x 1.4826, 5 % of the median), on a baseline with one
  spike (which a mean would follow), on a flat one (the floor), and only the newest 14 days;
- no score, with the reason: fewer than 7 days, no final hour today, a baseline that cost nothing;
- the threshold (3.5, a rise only) decided on the exact score; display rounding half-even.
"""

from __future__ import annotations

from datetime import date, timedelta
from fractions import Fraction

import pytest

from finops.anomaly import BaselineDay, mad, median, round_micros, run_rate, score, score_text

UNIT = 1_000_000  # micros per currency unit


def days(*amounts: float | int, last: date = date(2026, 11, 30)) -> list[BaselineDay]:
    """Recorded days ending ``last``, oldest first; amounts in currency units (exact in micros)."""
    first = last - timedelta(days=len(amounts) - 1)
    return [BaselineDay(first + timedelta(days=i), round(a * UNIT)) for i, a in enumerate(amounts)]


@pytest.mark.parametrize(
    ("values", "expected"),
    [([5, 1, 3], Fraction(3)), ([4, 1, 3, 2], Fraction(5, 2)), ([7], Fraction(7)), ([1, 1, 1, 2], Fraction(1))],
    ids=["odd", "even-halves", "one", "even-ties"],
)
def test_median(values: list[int], expected: Fraction) -> None:
    assert median(values) == expected


def test_median_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="no values"):
        median([])


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 2, 3, 4, 100], Fraction(1)),  # median 3; deviations 2 1 0 1 97 -> 0 1 1 2 97
        ([1, 2, 3, 4], Fraction(1)),  # median 5/2; deviations 3/2 1/2 1/2 3/2
        ([10, 10, 10], Fraction(0)),
        ([8, 9, 10, 10, 11, 12, 40], Fraction(1)),  # median 10; deviations 2 1 0 0 1 2 30
    ],
    ids=["spike", "even", "flat", "baseline-with-spike"],
)
def test_median_absolute_deviation(values: list[int], expected: Fraction) -> None:
    assert mad(values) == expected


def test_run_rate_is_the_final_hours_cost_per_day() -> None:
    assert run_rate(600, 6) == 2400  # 600 over 6 hours: 100 an hour, 2400 a day
    assert run_rate(1, 7) == Fraction(24, 7)  # exact, no rounding
    with pytest.raises(ValueError, match="hours"):
        run_rate(1, 0)


def test_a_spike_in_the_baseline_moves_neither_median_nor_spread() -> None:
    # Median 10, MAD 1, spread 1.4826 (5 % of 10 is 0.5, below it). Today: 6 final hours cost 4.00,
    # so 16.00 a day; score = (16 - 10) / 1.4826 = 4.0469...
    result = score(days(8, 9, 10, 10, 11, 12, 40), 4 * UNIT, 6)
    assert result.median == 10 * UNIT and result.mad == 1 * UNIT
    assert result.spread == Fraction(14826, 10_000) * UNIT and result.scaled_mad == result.spread
    assert result.run_rate == 16 * UNIT
    assert result.score == Fraction(6, 1) / Fraction(14826, 10_000)
    assert score_text(result.score) == "4.05" and result.anomalous and result.reason is None
    # 3.50 over 6 hours: 14.00 a day, (14 - 10) / 1.4826 = 2.698: normal.
    normal = score(days(8, 9, 10, 10, 11, 12, 40), 3_500_000, 6)
    assert normal.score is not None and score_text(normal.score) == "2.70" and not normal.anomalous


def test_a_flat_history_uses_five_percent_of_the_median() -> None:
    # Every day 10.00: MAD 0, so the spread is 0.50. Today 12.00 a day scores 4, 11.00 a day 2.
    result = score(days(*[10] * 7), 12 * UNIT, 24)
    assert result.mad == 0 and result.spread == 500_000
    assert result.score == 4 and result.anomalous and score_text(result.score) == "4.00"
    assert score(days(*[10] * 7), 11 * UNIT, 24).score == 2
    assert score(days(*[10] * 7), 8 * UNIT, 24).score == -4  # a drop: negative, not flagged
    assert not score(days(*[10] * 7), 8 * UNIT, 24).anomalous


def test_only_the_newest_fourteen_days_are_the_baseline() -> None:
    history = days(*[1000] * 6, *[10] * 14)  # six old, expensive days first
    result = score(history, 10 * UNIT, 24)
    assert len(result.days) == 14 and result.days[0].day == history[6].day and result.days[-1] == history[-1]
    assert result.median == 10 * UNIT and result.score == 0
    assert score(list(reversed(history)), 10 * UNIT, 24).days == result.days  # any order given


def test_the_threshold_is_decided_on_the_exact_score() -> None:
    flat = days(*[10] * 7)  # median 10.00, spread 0.50: 11.75 a day is exactly 3.5
    assert score(flat, 11_750_000, 24).score == Fraction(7, 2) and score(flat, 11_750_000, 24).anomalous
    below = score(flat, 11_749_999, 24)
    assert below.score is not None and score_text(below.score) == "3.50" and not below.anomalous


@pytest.mark.parametrize(
    ("history", "micros", "hours", "reason"),
    [
        (days(*[10] * 5), UNIT, 24, "needs 7 days of history, has 5"),
        ([], UNIT, 24, "needs 7 days of history, has 0"),
        (days(*[10] * 7), 0, 0, "no final hour of today yet"),
        (days(*[0] * 7), UNIT, 24, "the baseline days cost nothing: no spread to compare with"),
    ],
    ids=["five-days", "no-days", "no-final-hour", "zero-baseline"],
)
def test_no_score_says_why(history: list[BaselineDay], micros: int, hours: int, reason: str) -> None:
    result = score(history, micros, hours)
    assert result.score is None and result.reason == reason and not result.anomalous


def test_display_rounding_is_half_even() -> None:
    assert [round_micros(Fraction(n, 2)) for n in (3, 5, 7, -3)] == [2, 2, 4, -2]
    assert [score_text(f) for f in (Fraction(13, 4), Fraction(1, 8), Fraction(3, 8), Fraction(-7, 2))] == [
        "3.25",
        "0.12",
        "0.38",
        "-3.50",
    ]
    # Eight days of 1 and 2 micros: the median is 1.5 micros, shown as 2 (half-even).
    result = score(
        [BaselineDay(date(2026, 11, 1) + timedelta(days=i), 1 + i // 4) for i in range(8)],
        2,
        24,
    )
    assert result.median == Fraction(3, 2) and round_micros(result.median) == 2


def test_one_final_hour_is_enough() -> None:
    assert run_rate(100, 1) == 2400
    result = score(days(*[10] * 7), 500_000, 1)  # 0.50 in one hour: 12.00 a day, 4 spreads above
    assert result.run_rate == 12 * UNIT and result.score == 4 and result.reason is None


def test_the_result_keeps_what_it_was_given() -> None:
    for history, micros, hours in ((days(*[10] * 7), 1_234, 5), (days(*[10] * 3), 1_234, 5), (days(*[10] * 7), 9, 0)):
        result = score(history, micros, hours)
        assert (result.today_micros, result.today_hours) == (micros, hours)


def test_the_median_of_nothing_says_so() -> None:
    with pytest.raises(ValueError) as caught:
        median([])
    assert str(caught.value) == "median of no values"
