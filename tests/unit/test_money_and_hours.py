"""We test these aspects of the domain's money and time:

- rates parse from decimal strings into exact Decimals (never rounded to micros), up to 12 integer
  digits and 15 decimal places; anything else is refused naming the field;
- micros round half-even once, and never go through float;
- the run's hour is pinned from the trigger and lookback hours are the ones before it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from finops.errors import InvalidInput
from finops.hours import Hour, lookback, parse_timestamp, pin_hour, truncate_to_hour
from finops.money import format_amount, from_micros, parse_rate, rate_text, to_micros


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("0.031611", "0.031611"),
        ("1", "1"),
        (5, "5"),
        ("", "0"),
        (None, "0"),
        ("0.00005479452", "0.00005479452"),
        ("0.0000004", "0.0000004"),
        ("12.5", "12.5"),
        (" 0.10 ", "0.1"),
        ("999999999999.999999999999999", "999999999999.999999999999999"),
        ("0001.500000000000000000", "1.5"),
    ],
    ids=[
        "cpu-rate",
        "integer",
        "int-value",
        "empty-is-unset",
        "missing-is-unset",
        "storage-kept-exactly",
        "sub-micro-is-not-free",
        "decimal",
        "padded",
        "largest",
        "zeros-that-change-nothing-do-not-count",
    ],
)
def test_parse_rate_is_exact(text: str | int | None, rate: str) -> None:
    parsed = parse_rate("spec.rates.cpuHour", text)
    assert isinstance(parsed, Decimal) and parsed == Decimal(rate)
    assert rate_text(parsed) == rate


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("-1", "not a non-negative decimal"),
        ("1e3", "not a non-negative decimal"),
        ("1E-7", "not a non-negative decimal"),
        ("abc", "not a non-negative decimal"),
        ("0.1.2", "not a non-negative decimal"),
        (".5", "not a non-negative decimal"),
        (" ", "not a non-negative decimal"),
        (0.1, "must be a decimal string"),
        (True, "must be a decimal string"),
        (-1, "not a non-negative decimal"),
        ("9" * 13, "more than 12 integer digits"),
        (10**12, "more than 12 integer digits"),
        ("0." + "0" * 15 + "1", "more than 15 decimal places"),
    ],
    ids=[
        "negative",
        "exponent",
        "small-exponent",
        "text",
        "two-points",
        "no-integer-part",
        "blank",
        "float",
        "bool",
        "negative-int",
        "13-integer-digits",
        "int-too-large",
        "16-places",
    ],
)
def test_parse_rate_refuses_and_names_the_field(bad: object, why: str) -> None:
    with pytest.raises(InvalidInput, match=rf"^PriceBook ns/name: spec\.rates\.ramGbHour: .*{why}"):
        parse_rate("PriceBook ns/name: spec.rates.ramGbHour", bad)


def test_micros_round_half_even_and_round_trip() -> None:
    assert to_micros(Decimal("0.0000005")) == 0
    assert to_micros(Decimal("0.0000015")) == 2
    assert to_micros(Decimal("1.51733")) == 1_517_330
    assert from_micros(1_517_330) == Decimal("1.51733")
    assert format_amount(1_515_000) == "1.52"
    assert format_amount(1_525_000) == "1.52"  # half-even at the cent


def test_pin_hour_prefers_the_trigger_over_the_clock() -> None:
    now = datetime(2026, 11, 29, 17, 42, tzinfo=UTC)
    scheduled = parse_timestamp("2026-11-29T10:05:00+01:00", field="scheduledTime")
    assert pin_hour(scheduled, now) == Hour(datetime(2026, 11, 29, 9, tzinfo=UTC))
    assert pin_hour(None, now) == Hour(datetime(2026, 11, 29, 17, tzinfo=UTC))


def test_lookback_is_the_hours_before_oldest_first() -> None:
    pinned = Hour(datetime(2026, 11, 29, 1, tzinfo=UTC))
    assert [str(h) for h in lookback(pinned, 3)] == ["2026-11-28T22:00Z", "2026-11-28T23:00Z", "2026-11-29T00:00Z"]
    assert lookback(pinned, 0) == []


@pytest.mark.parametrize("bad", ["yesterday", "2026-11-29T10:00:00", "2026-13-01T00:00:00Z"])
def test_parse_timestamp_requires_rfc3339_with_offset(bad: str) -> None:
    with pytest.raises(InvalidInput, match="scheduledTime"):
        parse_timestamp(bad, field="scheduledTime")


def test_hour_must_be_on_a_boundary() -> None:
    with pytest.raises(ValueError, match="hour boundary"):
        Hour(datetime(2026, 1, 1, 0, 30, tzinfo=UTC))
    assert truncate_to_hour(datetime(2026, 1, 1, 5, 59, 59, tzinfo=UTC)).hour == 5


def test_a_timestamp_whose_utc_time_overflows_is_refused_naming_the_field() -> None:
    from finops.errors import InvalidInput
    from finops.hours import parse_timestamp

    with pytest.raises(InvalidInput, match="scheduledTime: '9999-12-31T23:59:59-01:00' is out of range"):
        parse_timestamp("9999-12-31T23:59:59-01:00", field="scheduledTime")


def test_an_hour_is_utc_whatever_zone_it_was_read_in() -> None:
    from zoneinfo import ZoneInfo

    from finops.hours import Hour

    local = datetime(2026, 11, 20, 20, tzinfo=ZoneInfo("America/New_York"))  # 2026-11-21 01:00 UTC
    hour = Hour(local)
    assert hour.start.tzinfo is UTC and hour.start.date().isoformat() == "2026-11-21"
    assert str(hour) == "2026-11-21T01:00Z" and hour == Hour(datetime(2026, 11, 21, 1, tzinfo=UTC))
