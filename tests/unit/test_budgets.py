"""We test these aspects of budgets (``finops.budgets``), without I/O:

- ``parse_budgets``: owner and cost-centre budgets, amounts exact in micros, the policy reading
  them (and ``as_document`` reading back); every refusal names the key path: not a list, not a
  mapping, unknown key, neither or both names, a bad name, a missing, float, negative, zero or
  over-precise amount, a duplicate;
- the horizon: month-to-date ends at ``now``'s UTC midnight; the run-rate reads the 7 full days
  before it, fewer when the month or the data is younger (and says which); none on the first day;
  a month over has no hours left; a month not started is refused;
- the forecast: month-to-date + (window cost / window hours) x hours left, exact, rounded once to
  cents; percentages to one decimal, half-even; ``over_budget_forecast`` agrees with the figures
  shown.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from fractions import Fraction

import pytest

from finops.budgets import Budget, forecast, horizon, parse_budgets
from finops.errors import InvalidInput
from finops.periods import Period
from finops.policy import parse_policy

NOVEMBER = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
UNIT = 1_000_000


def nov(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def test_owner_and_cost_centre_budgets_in_micros() -> None:
    budgets = parse_budgets([{"owner": "search", "amount": "4000.00"}, {"cost_center": "cc-1", "amount": 12}])
    assert budgets == (Budget("search", None, 4000 * UNIT), Budget(None, "cc-1", 12 * UNIT))
    assert parse_budgets(None) == ()
    assert parse_budgets([{"owner": "a", "amount": "0.000001"}])[0].amount_micros == 1


def test_the_policy_reads_budgets_and_writes_them_back() -> None:
    doc = {
        "currency": "EUR",
        "budgets": [{"owner": "search", "amount": "4000.5"}, {"cost_center": "cc-1", "amount": 7}],
    }
    policy = parse_policy(doc)
    assert policy.budgets == (Budget("search", None, 4_000_500_000), Budget(None, "cc-1", 7 * UNIT))
    written = policy.as_document()["budgets"]
    assert written == [{"owner": "search", "amount": "4000.50"}, {"cost_center": "cc-1", "amount": "7.00"}]
    assert parse_policy({**policy.as_document()}).budgets == policy.budgets


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"owner": "a", "amount": "1"}, "policy.budgets: must be a list"),
        (["search"], "policy.budgets[0]: must be a mapping"),
        ([{"owner": "a", "amount": "1", "team": "x"}], "policy.budgets[0].team: unknown key"),
        ([{"amount": "1"}], "policy.budgets[0]: name exactly one of owner or cost_center"),
        ([{"owner": "a", "cost_center": "b", "amount": "1"}], "policy.budgets[0]: name exactly one"),
        ([{"owner": "-bad-", "amount": "1"}], 'policy.budgets[0].owner: "-bad-" is not a valid label value'),
        ([{"cost_center": 7, "amount": "1"}], "policy.budgets[0].cost_center: 7 is not a valid label value"),
        ([{"owner": "a"}], "policy.budgets[0].amount: required"),
        ([{"owner": "a", "amount": 4000.5}], "policy.budgets[0].amount: 4000.5 is not a decimal amount; quote it"),
        ([{"owner": "a", "amount": "-1"}], "policy.budgets[0].amount:"),
        ([{"owner": "a", "amount": "0.00"}], "policy.budgets[0].amount: a budget is more than zero"),
        ([{"owner": "a", "amount": "1.0000001"}], "policy.budgets[0].amount:"),
        (
            [{"owner": "a", "amount": "1"}, {"cost_center": "a", "amount": "2"}, {"owner": "a", "amount": "3"}],
            'policy.budgets[2].owner: "a" has a budget already (policy.budgets[0])',
        ),
    ],
    ids=[
        "not-a-list",
        "not-a-mapping",
        "unknown-key",
        "no-name",
        "both-names",
        "bad-owner",
        "bad-cost-centre",
        "no-amount",
        "float",
        "negative",
        "zero",
        "seven-decimals",
        "duplicate",
    ],
)
def test_refusals_name_the_key_path(value: object, message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_budgets(value)
    assert refused.value.message.startswith(message), refused.value.message


def test_a_policy_refusal_names_policy_budgets() -> None:
    with pytest.raises(InvalidInput, match=r"^policy\.budgets\[1\]\.amount: required"):
        parse_policy({"currency": "EUR", "budgets": [{"owner": "a", "amount": "1"}, {"owner": "b"}]})


def test_the_run_rate_reads_the_seven_full_days_before_today() -> None:
    at = horizon(NOVEMBER, nov(12, 9, 30))
    assert at.cut == nov(12) and at.month_to_date == Period(nov(1), nov(12))
    assert at.window == Period(nov(5), nov(12)) and at.window_hours == 168
    assert at.remaining_hours == 19 * 24  # today's partial day is among the hours left
    assert "last 7 full days (2026-11-05..2026-11-11, 168 hours) x 456 hours left" in at.method()
    assert "younger" not in at.method()


def test_a_younger_month_or_younger_data_reads_fewer_days_and_says_why() -> None:
    month = horizon(NOVEMBER, nov(4, 23, 59))
    assert month.window == Period(nov(1), nov(4)) and month.window_hours == 72
    assert "last 3 full days" in month.method() and "(the month is younger)" in month.method()
    # The rate is over the window's 72 hours, not 168: 300 in 3 days, 648 hours left.
    assert forecast(Budget("a", None, UNIT), month, 300 * UNIT, 300 * UNIT).as_document()["forecast"] == "3000.00"
    data = horizon(NOVEMBER, nov(12, 1), first_day_with_data=date(2026, 11, 9))
    assert data.window == Period(nov(9), nov(12)) and "(the data is younger)" in data.method()
    older = horizon(NOVEMBER, nov(12, 1), first_day_with_data=date(2026, 10, 1))
    assert older.window == Period(nov(5), nov(12))


def test_no_forecast_before_a_full_day_and_none_needed_after_the_month() -> None:
    first = horizon(NOVEMBER, nov(1, 23))
    assert first.window is None and first.month_to_date is None and "no forecast yet" in first.method()
    status = forecast(Budget("a", None, 100 * UNIT), first, 0, 0)
    assert status.as_document()["forecast"] is None and status.over_budget_forecast is False
    nodata = horizon(NOVEMBER, nov(12), first_day_with_data=date(2026, 11, 12))
    assert nodata.window is None
    over = horizon(NOVEMBER, datetime(2027, 1, 3, tzinfo=UTC))
    assert over.over and over.remaining_hours == 0 and over.month_to_date == NOVEMBER
    assert forecast(Budget("a", None, 100 * UNIT), over, 123_450_000, 0).as_document()["forecast"] == "123.45"
    with pytest.raises(InvalidInput, match="month: 2026-11 has not started"):
        horizon(NOVEMBER, datetime(2026, 10, 31, 23, tzinfo=UTC))


def test_the_forecast_is_month_to_date_plus_the_rate_over_the_hours_left() -> None:
    at = horizon(NOVEMBER, nov(12, 9))  # 168-hour window, 456 hours left
    status = forecast(Budget("search", None, 4000 * UNIT), at, 1_100 * UNIT, 700 * UNIT)
    assert status.rate_per_hour == Fraction(700 * UNIT, 168)
    assert status.forecast_exact == 1_100 * UNIT + Fraction(700 * UNIT, 168) * 456  # 3000 exactly
    assert status.as_document() == {
        "owner": "search",
        "amount": "4000.00",
        "month_to_date": "1100.00",
        "run_rate_per_hour": "4.166667",
        "forecast": "3000.00",
        "percent_used": "27.5",
        "percent_forecast": "75.0",
        "over_budget_forecast": False,
    }


def test_rounding_happens_once_half_even_and_the_flag_agrees_with_the_figures() -> None:
    at = horizon(NOVEMBER, nov(12, 9))
    # 1 micro per 168 hours of window, 456 hours left: 456/168 micros, far below a cent.
    tiny = forecast(Budget(None, "cc-1", 1), at, 0, 1)
    assert tiny.as_document()["forecast"] == "0.00" and tiny.over_budget_forecast is False
    # The forecast lands on 2.345 exactly: half-even gives 2.34, not 2.35.
    half = forecast(Budget("a", None, 2_340_000), at, 2_345_000 - 456 * 1_000, 168 * 1_000)
    assert half.forecast_exact == 2_345_000 and half.as_document()["forecast"] == "2.34"
    assert half.over_budget_forecast is False and half.percent_forecast == Decimal("100.0")
    # A budget with micros: the forecast as shown (2.35 > 2.345) is over.
    over = forecast(Budget("a", None, 2_345_000), at, 2_346_000 - 456 * 1_000, 168 * 1_000)
    assert over.as_document()["forecast"] == "2.35" and over.over_budget_forecast is True
    # Percentages: 1/3 of the budget is 33.3 %, 2/3 is 66.7 %, 0.05 % rounds half-even to 0.0.
    third = forecast(Budget("a", None, 3 * UNIT), horizon(NOVEMBER, datetime(2027, 1, 1, tzinfo=UTC)), UNIT, 0)
    assert (third.percent_used, third.percent_forecast) == (Decimal("33.3"), Decimal("33.3"))
    assert forecast(Budget("a", None, 3 * UNIT), at, 2 * UNIT, 0).percent_used == Decimal("66.7")
    assert forecast(Budget("a", None, 2000 * UNIT), at, UNIT, 0).percent_used == Decimal("0.0")


def test_the_boundaries_of_the_month_and_the_method_text() -> None:
    # The month's first instant has started (a forecast is not yet possible, but it is no error).
    first = horizon(NOVEMBER, nov(1))
    assert first.month_to_date is None and first.window is None
    with pytest.raises(ValueError, match=r"^now must be timezone-aware$"):
        horizon(NOVEMBER, datetime(2026, 11, 12))
    # The first instant after the month: over, whatever the hours.
    ended = horizon(NOVEMBER, datetime(2026, 12, 1, tzinfo=UTC))
    assert ended.over and ended.method() == "the month is over: the forecast is the month's cost (all its days)"
    at = horizon(NOVEMBER, nov(12, 9))
    assert at.method().startswith("forecast = month-to-date (full UTC days 2026-11-01..2026-11-11) + run-rate")


def test_a_moment_in_another_zone_is_read_in_utc() -> None:
    from datetime import timedelta, timezone

    # 2026-11-12T01:00+05:00 is 2026-11-11T20:00Z: the cut is the 11th's midnight, not the 12th's.
    at = horizon(NOVEMBER, datetime(2026, 11, 12, 1, tzinfo=timezone(timedelta(hours=5))))
    assert at.cut == nov(11) and "(full UTC days 2026-11-01..2026-11-10)" in at.method()


def test_a_budget_without_a_forecast_has_no_forecast_percentage() -> None:
    status = forecast(Budget("a", None, 100 * UNIT), horizon(NOVEMBER, nov(1, 5)), 0, 0)
    assert status.as_document()["percent_forecast"] is None


@pytest.mark.parametrize("value", [5, "search", b"x", {"owner": "a"}])
def test_budgets_must_be_a_list_naming_what_was_given(value: object) -> None:
    with pytest.raises(InvalidInput, match=r"^policy\.budgets: must be a list, got "):
        parse_budgets(value)
    with pytest.raises(InvalidInput, match=r'^policy\.budgets\[0\]: must be a mapping, got "search"'):
        parse_budgets(["search"])
    with pytest.raises(ValueError, match=r"^a budget names exactly one of owner or cost_center$"):
        Budget(None, None, 1)


def test_the_method_names_utc_days_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "LOCAL+12")  # POSIX for UTC-12: a UTC midnight is the day before, locally
    time.tzset()
    try:
        at = horizon(NOVEMBER, nov(12, 9))
        assert "(full UTC days 2026-11-01..2026-11-11)" in at.method()
        assert at.cut == nov(12)
    finally:
        monkeypatch.undo()
        time.tzset()
