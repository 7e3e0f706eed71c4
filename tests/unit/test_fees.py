"""We test these aspects of the subscription fee (``finops.fees``):

- where each alignment puts its boundaries (ActivatedAt, the epoch hour grid, the first midnight
  after activation, the 1st of the month ``period`` months after the activation month);
- the prorated opening tick of every boundary alignment, landing in the window that ends on the
  first boundary, and its cap at one period's price;
- the deactivation snap: the last tick is charged in full, nothing after the snapped instant;
- windows without a boundary cost 0, and hourly windows add up to the fee over their range;
- minPeriods counts the same grid, is not clamped by deactivation, and never adds a charge;
- ``parse_fee`` accepts the operator's period forms and refuses others, naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from finops.errors import InvalidInput
from finops.fees import Fee, FeeSchedule, TickAlignment, parse_fee

HOUR = timedelta(hours=1)


def at(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def fee(price: int, period: str, alignment: str, min_periods: int | None = None) -> Fee:
    spec: dict[str, Any] = {"priceMicros": price, "period": period, "tickAlignment": alignment}
    if min_periods is not None:
        spec["minPeriods"] = min_periods
    return parse_fee(spec)


def t(text: str) -> datetime:
    """``"08-12 09:15"`` is 2026-08-12T09:15Z; a text with its own year keeps it."""
    return at(text if text[:4].isdigit() and text[4] == "-" else f"2026-{text}")


def hourly(schedule: FeeSchedule, start: datetime, end: datetime) -> dict[datetime, int]:
    """The non-zero hourly charges in [start, end), keyed by the hour's start."""
    charges = {}
    moment = start
    while moment < end:
        amount = schedule.amount(moment, moment + HOUR)
        if amount:
            charges[moment] = amount
        moment += HOUR
    return charges


# -- the worked example the operator documents, exactly ------------------------------------------


def test_month_boundary_opening_tick_lands_in_the_hour_ending_on_the_first_of_the_month() -> None:
    schedule = FeeSchedule(fee(300_000_000, "1", "MonthBoundary"), at("2026-08-12T09:15:00Z"))
    assert schedule.amount(at("2026-08-31T23:00:00Z"), at("2026-09-01T00:00:00Z")) == 193_326_488
    assert schedule.amount(at("2026-09-30T23:00:00Z"), at("2026-10-01T00:00:00Z")) == 300_000_000
    assert hourly(schedule, at("2026-08-12T00:00:00Z"), at("2026-10-15T00:00:00Z")) == {
        at("2026-08-31T23:00:00Z"): 193_326_488,
        at("2026-09-30T23:00:00Z"): 300_000_000,
    }


# -- the table -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A window of ``hours`` hours from ``start``; times are 2026 unless they name a year."""

    fee: Fee
    activated: str
    start: str
    expected: int
    hours: float = 1
    deactivated: str | None = None

    def schedule(self) -> FeeSchedule:
        return FeeSchedule(self.fee, t(self.activated), t(self.deactivated) if self.deactivated else None)

    def window(self) -> tuple[datetime, datetime]:
        return t(self.start), t(self.start) + self.hours * HOUR


def snap(fee: Fee, activated: str, deactivated: str, start: str, expected: int, hours: float = 1) -> Case:
    return Case(fee, activated, start, expected, hours, deactivated)


HOURLY = fee(40_000_000, "1", "HourBoundary")
SIX_HOURLY = fee(60_000_000, "6", "HourBoundary")
FIVE_HOURLY = fee(50_000_000, "5h", "HourBoundary")
DAILY = fee(24_000_000, "1", "DayBoundary")
WEEKLY = fee(168_000_000, "7d", "DayBoundary")
MONTHLY = fee(300_000_000, "1", "MonthBoundary")
QUARTERLY = fee(900_000_000, "3mo", "MonthBoundary")
EVERY_90M = fee(1_500_000, "90m", "ActivatedAt")
EVERY_24H = fee(24_000_000, "24h", "ActivatedAt")

CASES = {
    # HourBoundary, period 1, activated 09:15: 45 of 60 minutes, then full hours.
    "hour/opening-prorated-45-of-60-min": Case(HOURLY, "08-12 09:15", "08-12 09:00", 30_000_000),
    "hour/second-tick-full": Case(HOURLY, "08-12 09:15", "08-12 10:00", 40_000_000),
    "hour/before-activation-is-0": Case(HOURLY, "08-12 09:15", "08-12 08:00", 0),
    "hour/whole-day": Case(HOURLY, "08-12 09:15", "08-12 00:00", 30_000_000 + 14 * 40_000_000, hours=24),
    "hour/activated-on-the-grid-full-opening": Case(HOURLY, "08-12 10:00", "08-12 10:00", 40_000_000),
    "hour/sub-second-activation-dropped": Case(HOURLY, "08-12 09:15:00.700000", "08-12 09:00", 30_000_000),
    # HourBoundary, period 6: grid 00/06/12/18 UTC; 2h45m of 6h.
    "hour6/opening-prorated-to-12:00": Case(SIX_HOURLY, "08-12 09:15", "08-12 11:00", 27_500_000),
    "hour6/no-boundary-in-window-is-0": Case(SIX_HOURLY, "08-12 09:15", "08-12 12:00", 0),
    "hour6/full-tick-at-18:00": Case(SIX_HOURLY, "08-12 09:15", "08-12 17:00", 60_000_000),
    # HourBoundary, period 5 (does not divide 24): the epoch grid falls on 02/07/12/17/22 that day.
    "hour5/epoch-grid-opening-to-12:00": Case(FIVE_HOURLY, "08-12 09:15", "08-12 11:00", 27_500_000),
    "hour5/epoch-grid-full-at-17:00": Case(FIVE_HOURLY, "08-12 09:15", "08-12 16:00", 50_000_000),
    # DayBoundary: the first midnight after activation; 6 of 24 hours.
    "day/opening-prorated-6-of-24-h": Case(DAILY, "08-12 18:00", "08-12 23:00", 6_000_000),
    "day/second-midnight-full": Case(DAILY, "08-12 18:00", "08-13 23:00", 24_000_000),
    "day/midday-is-0": Case(DAILY, "08-12 18:00", "08-13 11:00", 0),
    # DayBoundary, period 7: opening tick to the next midnight measured against 168 h.
    "day7/opening-2-of-168-h": Case(WEEKLY, "08-12 22:00", "08-12 23:00", 2_000_000),
    "day7/next-boundary-a-week-after-that-midnight": Case(WEEKLY, "08-12 22:00", "08-19 23:00", 168_000_000),
    "day7/the-following-midnight-is-0": Case(WEEKLY, "08-12 22:00", "08-13 23:00", 0),
    # MonthBoundary: a fixed 2,629,800 s month in the denominator.
    "month/feb-from-the-1st-28-days": Case(MONTHLY, "02-01 00:00", "02-28 23:00", 275_975_359),
    "month/opening-capped-at-price-31-day-october": Case(MONTHLY, "10-01 00:00", "10-31 23:00", 300_000_000),
    "month3/opening-to-november": Case(QUARTERLY, "08-12 09:15", "10-31 23:00", 794_558_521),
    "month3/no-tick-on-september-1st": Case(QUARTERLY, "08-12 09:15", "08-31 23:00", 0),
    "month3/full-quarter-february": Case(QUARTERLY, "08-12 09:15", "2027-01-31 23:00", 900_000_000),
    "month3/a-year-and-a-half": Case(QUARTERLY, "08-12 09:15", "01-01 00:00", 794_558_521 + 3 * 900_000_000, 13_848),
    # ActivatedAt: boundaries at activation + k * period, never prorated.
    "activated-at/no-tick-in-the-activation-hour": Case(EVERY_90M, "08-12 09:15", "08-12 09:00", 0),
    "activated-at/first-tick-full-at-10:45": Case(EVERY_90M, "08-12 09:15", "08-12 10:00", 1_500_000),
    "activated-at/no-tick-11:00-12:00": Case(EVERY_90M, "08-12 09:15", "08-12 11:00", 0),
    "activated-at/tick-at-12:15": Case(EVERY_90M, "08-12 09:15", "08-12 12:00", 1_500_000),
    "activated-at/boundary-on-window-end-is-in": Case(EVERY_90M, "08-12 09:15", "08-12 10:15", 1_500_000, 0.5),
    "activated-at/boundary-on-window-start-is-out": Case(EVERY_90M, "08-12 09:15", "08-12 10:45", 0, 0.5),
    # Deactivation snap: forward to the next boundary, last tick in full, nothing after.
    # snap(fee, activated, deactivated, window start, expected[, hours])
    "snap/hour-11:40-charges-11-12": snap(HOURLY, "08-12 09:15", "08-12 11:40", "08-12 11:00", 40_000_000),
    "snap/hour-nothing-after-12:00": snap(HOURLY, "08-12 09:15", "08-12 11:40", "08-12 12:00", 0),
    "snap/hour-whole-life": snap(HOURLY, "08-12 09:15", "08-12 11:40", "08-12 00:00", 110_000_000, 24),
    "snap/hour-on-a-boundary-stays": snap(HOURLY, "08-12 09:15", "08-12 11:00", "08-12 00:00", 70_000_000, 24),
    "snap/before-first-boundary-opening": snap(HOURLY, "08-12 09:15", "08-12 09:20", "08-12 00:00", 30_000_000, 24),
    "snap/at-activation-opening": snap(HOURLY, "08-12 09:15", "08-12 09:15", "08-12 09:00", 30_000_000),
    "snap/24h-late-deactivation-full": snap(EVERY_24H, "08-12 09:15", "08-15 12:00", "08-16 09:00", 24_000_000),
    "snap/24h-whole-life-four-ticks": snap(EVERY_24H, "08-12 09:15", "08-15 12:00", "08-01 00:00", 96_000_000, 744),
    "snap/month-to-october-1st": snap(MONTHLY, "08-12 09:15", "09-15 08:00", "09-30 23:00", 300_000_000),
    "snap/month-nothing-in-november": snap(MONTHLY, "08-12 09:15", "09-15 08:00", "10-31 23:00", 0),
    "snap/day-a-second-late-pays-a-day": snap(DAILY, "08-12 18:00", "08-14 00:00:01", "08-14 23:00", 24_000_000),
    # Degenerate windows.
    "window/empty-is-0": Case(HOURLY, "08-12 09:15", "08-12 10:00", 0, hours=0),
    "window/long-before-activation-is-0": Case(MONTHLY, "08-12 09:15", "01-01 00:00", 0, hours=24 * 200),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_fee_for_a_window(case: Case) -> None:
    assert case.schedule().amount(*case.window()) == case.expected


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_hourly_windows_add_up_to_the_fee_over_their_range(case: Case) -> None:
    schedule = case.schedule()
    start = case.window()[0].replace(minute=0, second=0, microsecond=0)
    end = start + 24 * 40 * HOUR
    assert sum(hourly(schedule, start, end).values()) == schedule.amount(start, end)
    assert schedule.amount(start, end) == schedule.amount(start, end)  # idempotent


def test_the_first_boundary_and_the_snapped_end() -> None:
    schedule = FeeSchedule(HOURLY, at("2026-08-12T09:15:00Z"), at("2026-08-12T11:40:00Z"))
    assert schedule.first_boundary == at("2026-08-12T10:00:00Z")
    assert schedule.snapped_end == at("2026-08-12T12:00:00Z")


def test_deactivated_at_is_not_changed_by_the_snap() -> None:
    schedule = FeeSchedule(HOURLY, at("2026-08-12T09:15:00Z"), at("2026-08-12T11:40:00Z"))
    assert schedule.deactivated_at == at("2026-08-12T11:40:00Z")


# -- minPeriods ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deactivated", "now", "elapsed", "satisfied"),
    [
        (None, "2026-08-12T09:59:59Z", 0, False),
        (None, "2026-08-13T08:00:00Z", 23, False),
        (None, "2026-08-13T09:00:00Z", 24, True),
        ("2026-08-12T10:30:00Z", "2026-08-12T11:00:00Z", 2, False),
        ("2026-08-12T10:30:00Z", "2026-08-13T09:00:00Z", 24, True),
    ],
    ids=["before-first-tick", "23-of-24", "24-of-24", "deleted-early-waits", "deleted-early-released-on-the-clock"],
)
def test_min_periods_counts_the_fee_grid_not_clamped_by_deactivation(
    deactivated: str | None, now: str, elapsed: int, satisfied: bool
) -> None:
    schedule = FeeSchedule(
        fee(40_000_000, "1", "HourBoundary", min_periods=24),
        at("2026-08-12T09:15:00Z"),
        at(deactivated) if deactivated else None,
    )
    assert schedule.periods_elapsed(at(now)) == elapsed
    assert schedule.min_periods_satisfied(at(now)) is satisfied


def test_min_periods_adds_no_shortfall_and_is_optional() -> None:
    guarded = FeeSchedule(
        fee(40_000_000, "1", "HourBoundary", 24), at("2026-08-12T09:15:00Z"), at("2026-08-12T10:30:00Z")
    )
    day = (at("2026-08-12T00:00:00Z"), at("2026-08-14T00:00:00Z"))
    assert guarded.amount(*day) == 30_000_000 + 40_000_000
    unguarded = FeeSchedule(HOURLY, at("2026-08-12T09:15:00Z"))
    assert unguarded.min_periods_satisfied(at("2026-08-12T09:15:00Z"))


# -- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("period", "alignment", "value"),
    [
        ("1h", "ActivatedAt", 3600),
        ("90m", "ActivatedAt", 5400),
        ("3600s", "ActivatedAt", 3600),
        ("45s", "ActivatedAt", 45),
        ("3", "HourBoundary", 3),
        ("3h", "HourBoundary", 3),
        (6, "HourBoundary", 6),
        ("7", "DayBoundary", 7),
        ("7d", "DayBoundary", 7),
        ("12", "MonthBoundary", 12),
        ("3mo", "MonthBoundary", 3),
    ],
)
def test_parse_fee_period_forms(period: object, alignment: str, value: int) -> None:
    parsed = parse_fee({"priceMicros": 1, "period": period, "tickAlignment": alignment, "minPeriods": 2})
    assert (parsed.period, parsed.alignment, parsed.min_periods) == (value, TickAlignment(alignment), 2)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"period": "1", "tickAlignment": "HourBoundary"}, "priceMicros"),
        ({"priceMicros": 0, "period": "1", "tickAlignment": "HourBoundary"}, "priceMicros"),
        ({"priceMicros": True, "period": "1", "tickAlignment": "HourBoundary"}, "priceMicros"),
        ({"priceMicros": "5", "period": "1", "tickAlignment": "HourBoundary"}, "priceMicros"),
        ({"priceMicros": 1, "period": "1", "tickAlignment": "WeekBoundary"}, "tickAlignment"),
        ({"priceMicros": 1, "period": "1"}, "tickAlignment"),
        ({"priceMicros": 1, "period": "1h30m", "tickAlignment": "ActivatedAt"}, "period"),
        ({"priceMicros": 1, "period": "1", "tickAlignment": "ActivatedAt"}, "period"),
        ({"priceMicros": 1, "period": "1d", "tickAlignment": "ActivatedAt"}, "period"),
        ({"priceMicros": 1, "period": "0h", "tickAlignment": "ActivatedAt"}, "period"),
        ({"priceMicros": 1, "period": "90m", "tickAlignment": "HourBoundary"}, "period"),
        ({"priceMicros": 1, "period": "3h", "tickAlignment": "DayBoundary"}, "period"),
        ({"priceMicros": 1, "period": "3h", "tickAlignment": "MonthBoundary"}, "period"),
        ({"priceMicros": 1, "period": "1d", "tickAlignment": "MonthBoundary"}, "period"),
        ({"priceMicros": 1, "period": "0", "tickAlignment": "DayBoundary"}, "period"),
        ({"priceMicros": 1, "period": "1201", "tickAlignment": "MonthBoundary"}, "period"),
        ({"priceMicros": 1, "tickAlignment": "DayBoundary"}, "period"),
        ({"priceMicros": 1, "period": "1", "tickAlignment": "DayBoundary", "minPeriods": 0}, "minPeriods"),
        ({"priceMicros": 1, "period": "1", "tickAlignment": "DayBoundary", "minPeriods": 1.5}, "minPeriods"),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(str(x) for x in v.values()),
)
def test_parse_fee_refuses_and_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput, match=rf"^spec\.pricing\.subscriptionFee\.{field}: "):
        parse_fee(spec)


def test_schedule_refuses_deactivation_before_activation_and_naive_times() -> None:
    with pytest.raises(InvalidInput, match="before activatedAt"):
        FeeSchedule(HOURLY, at("2026-08-12T09:15:00Z"), at("2026-08-12T09:00:00Z"))
    with pytest.raises(ValueError, match="timezone-aware"):
        FeeSchedule(HOURLY, datetime(2026, 8, 12, 9, 15))
    with pytest.raises(ValueError, match="before its start"):
        FeeSchedule(HOURLY, at("2026-08-12T09:15:00Z")).amount(at("2026-08-12T11:00:00Z"), at("2026-08-12T10:00:00Z"))


def test_other_offsets_are_the_same_instant() -> None:
    schedule = FeeSchedule(HOURLY, datetime.fromisoformat("2026-08-12T11:15:00+02:00"))
    end = datetime.fromisoformat("2026-08-12T12:00:00+02:00")
    assert schedule.amount(end - HOUR, end) == 30_000_000
    assert schedule.first_boundary == datetime(2026, 8, 12, 10, tzinfo=UTC)
