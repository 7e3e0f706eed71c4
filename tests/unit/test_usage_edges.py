"""We test these aspects of ``finops.usage`` at its edges (where ``make mutate``'s mutants of the
module would otherwise go unnoticed; objects are built inside the tests, since mutmut does not
re-import modules):

- rows wholly outside the active interval are ignored: neither priced nor reported as dropped,
  whichever side of it they fall on and wherever they come in the hour's list;
- a row of zero length inside the interval is charged whole (network), one outside is ignored;
- GPU-hours are GPUs used times the hours of overlap;
- the exact unit price is reported as the exact decimal, digit for digit, even for the largest
  representable rate (no float on the way);
- errors name what is wrong: the row with a non-finite usage value (every meter, every figure),
  a non-finite rate, unknown margin fields (listed), naive interval and row bounds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from finops.errors import InvalidInput
from finops.usage import (
    NO_MARGIN,
    ActiveInterval,
    Margin,
    Meter,
    UsageRow,
    parse_margin,
    price,
    row_quantity,
    usage_charge,
)

GIB = 2**30
TEN = datetime(2026, 8, 12, 10, tzinfo=UTC)
RATES = {"cpuHour": Decimal("0.031"), "gpuHour": Decimal("1.8"), "networkGiB": Decimal("0.09")}


def minute(m: int) -> datetime:
    return TEN + timedelta(minutes=m)


def row(start: int = 0, end: int = 60, *, key: str = "shop/api", rates: Any = RATES, **usage: Any) -> UsageRow:
    return UsageRow(start=minute(start), end=minute(end), key=key, rates=rates, **usage)


def test_rows_after_deactivation_are_neither_priced_nor_dropped() -> None:
    active = ActiveInterval(minute(-120), minute(0))  # deactivated at 10:00
    rows = [row(cpu_core_usage_avg=2), row(cpu_core_usage_avg=2, rates=None)]
    charge = usage_charge(Meter.CPU_HOUR, rows, NO_MARGIN, active)
    assert (charge.rows_priced, charge.rows_dropped, charge.unit_prices, charge.amount_micros) == (0, 0, (), 0)


def test_a_row_outside_the_interval_does_not_hide_the_rows_after_it() -> None:
    active = ActiveInterval(minute(0), minute(60))
    before = row(-60, 0, cpu_core_usage_avg=8)  # 09:00-10:00, wholly before activation
    inside = row(cpu_core_usage_avg=2)
    charge = usage_charge(Meter.CPU_HOUR, [before, inside], NO_MARGIN, active)
    # 2 cores x 1 h x 31,000 micros
    assert (charge.rows_priced, charge.amount_micros, charge.quantity) == (1, 62_000, Decimal(2))


def test_a_point_in_time_row_inside_the_interval_is_charged_whole() -> None:
    point = row(30, 30, network_transfer_bytes=GIB, network_receive_bytes=GIB)
    inside = usage_charge(Meter.NETWORK_GB, [point], NO_MARGIN, ActiveInterval(minute(0), minute(60)))
    # 2 GiB x 90,000 micros
    assert (inside.rows_priced, inside.amount_micros, inside.quantity) == (1, 180_000, Decimal(2))
    outside = usage_charge(Meter.NETWORK_GB, [point], NO_MARGIN, ActiveInterval(minute(0), minute(30)))
    assert (outside.rows_priced, outside.amount_micros) == (0, 0)


def test_gpu_hours_are_gpus_used_times_the_hours_of_overlap() -> None:
    active = ActiveInterval(minute(30))
    # 2 GPUs x 0.5 h = 1 GPU-hour, at 1.8 a GPU-hour
    assert row_quantity(Meter.GPU_HOUR, row(gpu_usage_avg=2), active.start) == 1
    assert usage_charge(Meter.GPU_HOUR, [row(gpu_usage_avg=2)], NO_MARGIN, active).amount_micros == 1_800_000


@pytest.mark.parametrize(
    ("rate", "margin", "text"),
    [
        ("0.031611", Margin(factor_milli=1500), "47416.5"),
        ("0.031", NO_MARGIN, "31000"),
        ("0.00005479452", NO_MARGIN, "54.79452"),
        ("123456789012.123456789012345", NO_MARGIN, "123456789012123456.789012345"),  # beyond a float
    ],
    ids=["half-micro", "whole", "storage", "largest"],
)
def test_the_unit_price_is_reported_digit_for_digit(rate: str, margin: Margin, text: str) -> None:
    charge = usage_charge(
        Meter.CPU_HOUR, [row(cpu_core_usage_avg=1, rates={"cpuHour": Decimal(rate)})], margin, ActiveInterval(TEN)
    )
    assert str(charge.unit_price_micros) == text
    assert [str(p) for p in charge.unit_prices] == [text]


FIGURES = {
    Meter.CPU_HOUR: ["cpu_core_usage_avg"],
    Meter.GPU_HOUR: ["gpu_usage_avg"],
    Meter.RAM_GB_HOUR: ["ram_byte_usage_avg"],
    Meter.PV_GB_HOUR: ["pv_byte_hours"],
    Meter.NETWORK_GB: ["network_transfer_bytes", "network_receive_bytes"],
}


@pytest.mark.parametrize(
    ("meter", "figure"), [(m, f) for m, figures in FIGURES.items() for f in figures], ids=lambda v: str(v)
)
def test_a_non_finite_usage_value_names_its_row(meter: Meter, figure: str) -> None:
    usage: dict[str, Any] = {figure: Decimal("NaN")}
    bad = row(key="shop/web-1", **usage)
    with pytest.raises(InvalidInput, match=r"^allocation row 'shop/web-1': NaN is not a finite number$"):
        row_quantity(meter, bad, TEN)


def test_a_non_finite_rate_is_named() -> None:
    with pytest.raises(InvalidInput, match=r"^rate: Infinity is not a finite number$"):
        price(Decimal("Infinity"))


def test_unknown_margin_fields_are_all_listed() -> None:
    with pytest.raises(InvalidInput, match=r"^margins: unknown field\(s\) includedUsage, tier$"):
        parse_margin({"tier": 1, "includedUsage": 5})


def test_naive_bounds_are_refused_with_their_message() -> None:
    naive = datetime(2026, 8, 12, 11)
    with pytest.raises(ValueError, match=r"^ActiveInterval bounds must be timezone-aware$"):
        ActiveInterval(TEN, naive)
    with pytest.raises(ValueError, match=r"^UsageRow start and end must be timezone-aware$"):
        UsageRow(start=TEN, end=naive)
    assert ActiveInterval(TEN, minute(60)).end == minute(60)  # aware bounds are fine
