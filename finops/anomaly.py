"""The anomaly score of an application's cost today: a robust z-score against its own history.

Pure arithmetic, exact (``Fraction`` over integer micros; nothing is rounded until display):

- **Baseline**: the application's newest recorded days in its current scope (at most
  ``BASELINE_DAYS``, 14), each day's total cost. Fewer than ``MIN_DAYS`` (7) days: no score.
- **Centre and spread**: the median of those days, and the median absolute deviation from it
  (MAD). Both ignore a few extreme days, so one earlier spike does not hide the next one, which a
  mean and standard deviation would. The MAD is scaled by 1.4826, which makes it estimate the
  standard deviation for normally distributed costs, so the score reads like a z-score
  (Iglewicz and Hoaglin's "modified z-score").
- **Spread floor**: the divisor is the scaled MAD but at least ``MIN_SPREAD`` (5 %) of the
  median. A Deployment costs its requests, so its days are often identical (MAD 0), and a cent
  more would otherwise be an infinite score; with the floor, in a flat history, a day 20 % above
  the median scores 4. A baseline that cost nothing at all (median and MAD 0) has no scale: no
  score, and the reason says so.
- **Today**: the run-rate per day, ``cost of today's final hours x 24 / final hours``, compared
  with the daily median: ``score = (run-rate - median) / spread``.
- **Anomalous**: ``score >= THRESHOLD`` (3.5, Iglewicz and Hoaglin's cut-off), decided on the
  exact score. Only a rise is flagged: a drop scores negative but a partial day under-reads an
  application whose cost comes in bursts (a nightly job that has not run yet).
- **Display**: the score rounded half-even to ``SCORE_PLACES`` (2) decimals; money rounded
  half-even to whole micros (a median of an even number of days may end in half a micro).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal
from fractions import Fraction

BASELINE_DAYS = 14  # the newest recorded days compared against
MIN_DAYS = 7  # fewer recorded days: no score
MAD_SCALE = Fraction(14826, 10000)  # MAD x 1.4826 estimates the standard deviation (normal costs)
MIN_SPREAD = Fraction(5, 100)  # the spread is at least 5 % of the median
THRESHOLD = Fraction(7, 2)  # a score of 3.5 or more is anomalous
HOURS_PER_DAY = 24
SCORE_PLACES = 2


def median(values: Sequence[int | Fraction]) -> Fraction:
    """The median (the mean of the two middle values for an even count), exact."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(Fraction(v) for v in values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def mad(values: Sequence[int | Fraction]) -> Fraction:
    """The median absolute deviation from the median (unscaled), exact."""
    centre = median(values)
    return median([abs(Fraction(v) - centre) for v in values])


def run_rate(micros: int, hours: int) -> Fraction:
    """A partial day's cost per day: ``micros`` over ``hours`` hours, times 24."""
    if hours <= 0:
        raise ValueError(f"hours: {hours} must be positive")
    return Fraction(micros * HOURS_PER_DAY, hours)


def round_micros(value: Fraction) -> int:
    """Whole micros, half-even."""
    return round(value)


def score_text(score: Fraction) -> str:
    """The score for display: ``SCORE_PLACES`` decimals, half-even (``Fraction(13, 4)`` -> "3.25")."""
    return str(Decimal(round(score * 10**SCORE_PLACES)).scaleb(-SCORE_PLACES))


@dataclass(frozen=True)
class BaselineDay:
    day: date
    micros: int  # the recorded day's total cost


@dataclass(frozen=True)
class Anomaly:
    """One application's score, with what it was computed from (amounts in exact micros)."""

    days: tuple[BaselineDay, ...]  # the baseline used, oldest first
    today_micros: int  # cost of today's final hours
    today_hours: int  # today's final hours
    score: Fraction | None = None
    run_rate: Fraction | None = None  # micros per day
    median: Fraction | None = None
    mad: Fraction | None = None  # unscaled
    spread: Fraction | None = None  # the divisor: max(MAD x 1.4826, 5 % of the median)
    reason: str | None = None  # why there is no score

    @property
    def anomalous(self) -> bool:
        return self.score is not None and self.score >= THRESHOLD

    @property
    def scaled_mad(self) -> Fraction | None:
        return None if self.mad is None else self.mad * MAD_SCALE


def score(history: Sequence[BaselineDay], today_micros: int, today_hours: int) -> Anomaly:
    """Score today's run-rate against ``history`` (recorded days, any order; the newest
    ``BASELINE_DAYS`` are used)."""
    days = tuple(sorted(history, key=lambda d: d.day)[-BASELINE_DAYS:])
    base = Anomaly(days=days, today_micros=today_micros, today_hours=today_hours)
    if len(days) < MIN_DAYS:
        return replace(base, reason=f"needs {MIN_DAYS} days of history, has {len(days)}")
    values = [d.micros for d in days]
    centre, deviation = median(values), mad(values)
    spread = max(deviation * MAD_SCALE, abs(centre) * MIN_SPREAD)
    base = replace(base, median=centre, mad=deviation, spread=spread)
    if today_hours <= 0:
        return replace(base, reason="no final hour of today yet")
    rate = run_rate(today_micros, today_hours)
    base = replace(base, run_rate=rate)
    if spread == 0:
        return replace(base, reason="the baseline days cost nothing: no spread to compare with")
    return replace(base, score=(rate - centre) / spread)
