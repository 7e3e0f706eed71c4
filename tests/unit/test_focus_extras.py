"""We test how the FOCUS export's days gain their GPU-hours and grams (``finops.focus_origins.
with_extras``): a namespace's day keeps its money and gains its figures; a day's idle is split per
GPU model without changing the day's idle money; an extra with no day is a day of zero cost."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from finops.focus_origins import DailyCost, DailyExtra, with_extras

DAY = date(2026, 11, 20)


def test_namespace_days_gain_their_figures_and_the_idle_is_split_per_gpu_model() -> None:
    days = [
        DailyCost(DAY, "c", "ml", "research", None, 7_000_000, Decimal(2)),
        DailyCost(DAY, "c", "", None, None, 9_000_000, Decimal(5), is_idle=True),
    ]
    extras = [
        DailyExtra(DAY, "c", "ml", "research", None, False, None, Decimal(2), 0, 75),
        DailyExtra(DAY, "c", "", None, None, True, None, None, 0, 40),
        DailyExtra(DAY, "c", "", None, None, True, "A100", Decimal(1), 6_000_000, None),
    ]
    found = with_extras(days, extras)
    assert found == [
        DailyCost(DAY, "c", "ml", "research", None, 7_000_000, Decimal(2), gpu_hours=Decimal(2), grams=75),
        DailyCost(DAY, "c", "", None, None, 3_000_000, Decimal(5), is_idle=True, grams=40),
        DailyCost(DAY, "c", "", None, None, 6_000_000, Decimal(0), True, Decimal(1), gpu_model="A100"),
    ]
    assert sum(d.micros for d in found) == sum(d.micros for d in days)  # the money is unchanged


def test_an_extra_without_a_day_is_a_day_of_zero_cost() -> None:
    extra = DailyExtra(DAY, "c", "batch", "data", None, False, None, None, 0, 3)
    assert with_extras([], [extra]) == [DailyCost(DAY, "c", "batch", "data", None, 0, grams=3)]
