"""We test these aspects of the subscription fee on generated schedules (hypothesis): every
alignment with random periods and prices, activation at any second of 2020-2030, with or without
a deactivation, over random ranges of whole hours:

- the sum over consecutive hourly windows equals the fee over the whole range (no tick is lost
  or counted twice), and splitting a window anywhere preserves the total;
- every hourly charge is 0, the opening amount, or a whole number of prices, and never negative;
- nothing is charged before activation or after the snapped deactivation, and the snapped end is
  a boundary at or after the raw deactivation.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from finops.fees import Fee, FeeSchedule, TickAlignment

HOUR = timedelta(hours=1)

fees = st.one_of(
    st.builds(
        Fee,
        price_micros=st.integers(1, 10**12),
        period=st.sampled_from([1, 45, 60, 90 * 60, 3600, 7200, 86_400]),
        alignment=st.just(TickAlignment.ACTIVATED_AT),
    ),
    st.builds(
        Fee,
        price_micros=st.integers(1, 10**12),
        period=st.integers(1, 30),
        alignment=st.just(TickAlignment.HOUR_BOUNDARY),
    ),
    st.builds(
        Fee,
        price_micros=st.integers(1, 10**12),
        period=st.integers(1, 10),
        alignment=st.just(TickAlignment.DAY_BOUNDARY),
    ),
    st.builds(
        Fee,
        price_micros=st.integers(1, 10**12),
        period=st.integers(1, 3),
        alignment=st.just(TickAlignment.MONTH_BOUNDARY),
    ),
)
moments = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC))


@st.composite
def schedules(draw: st.DrawFn) -> FeeSchedule:
    fee = draw(fees)
    activated = draw(moments)
    lifetime = draw(st.none() | st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=120)))
    return FeeSchedule(fee, activated, None if lifetime is None else activated + lifetime)


@st.composite
def hour_ranges(draw: st.DrawFn, schedule: FeeSchedule) -> tuple[datetime, datetime]:
    offset = draw(st.integers(-48, 24 * 100))
    start = schedule.activated_at.replace(minute=0, second=0) + offset * HOUR
    return start, start + draw(st.integers(0, 24 * 40)) * HOUR


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_hourly_windows_add_up_to_the_fee_over_the_range(data: st.DataObject) -> None:
    schedule = data.draw(schedules())
    start, end = data.draw(hour_ranges(schedule))
    price, opening = schedule.fee.price_micros, schedule.opening_micros
    total = 0
    moment = start
    while moment < end:
        charge = schedule.amount(moment, moment + HOUR)
        assert charge >= 0
        assert charge == 0 or (charge - opening) % price == 0 or charge % price == 0
        total += charge
        moment += HOUR
    assert total == schedule.amount(start, end)


@settings(max_examples=300, deadline=None)
@given(schedule=schedules(), a=moments, b=moments, c=moments)
def test_splitting_a_window_anywhere_preserves_its_fee(
    schedule: FeeSchedule, a: datetime, b: datetime, c: datetime
) -> None:
    first, middle, last = sorted([a, b, c])
    assert schedule.amount(first, middle) + schedule.amount(middle, last) == schedule.amount(first, last)


@settings(max_examples=300, deadline=None)
@given(schedule=schedules(), moment=moments)
def test_nothing_is_charged_outside_the_life_of_the_subscription(schedule: FeeSchedule, moment: datetime) -> None:
    assert schedule.amount(min(moment, schedule.activated_at), schedule.activated_at) == 0
    assert schedule.opening_micros <= schedule.fee.price_micros
    if schedule.snapped_end is not None:
        assert schedule.deactivated_at is not None
        assert schedule.snapped_end >= schedule.deactivated_at
        just_before = schedule.snapped_end - timedelta(microseconds=1)
        assert schedule.ticks(schedule.snapped_end) == schedule.ticks(just_before) + 1  # on a boundary
        later = max(moment, schedule.snapped_end)
        assert schedule.amount(schedule.snapped_end, later) == 0
        # The last tick is charged in full (unless it is also the prorated opening tick).
        last = schedule.amount(just_before, schedule.snapped_end)
        expected = schedule.opening_micros if schedule.ticks(schedule.snapped_end) == 1 else schedule.fee.price_micros
        assert last == expected
