"""We test these aspects of metered usage pricing (``finops.usage``):

- each meter's quantity from an allocation row: cores and GPUs *used* x hours, average bytes /
  2^30 x hours, PV byte-hours / 2^30, network (transfer + receive) / 2^30 with no time factor;
- clamping to the Subscription's active interval: the first and last hour trimmed, network too,
  rows wholly outside ignored, rows measured over part of the hour prorated over their own span;
- the unit price: the row's own stamped rate (an exact decimal in currency units) with an
  absolute or factor margin (a factor below 1000 is a discount), exact in micros and never
  rounded (fractional micros are kept), a negative price clamped to 0;
- no rate is ever rounded to micros: a storage rate with 11 decimals, a sub-micro rate and a factor
  margin on it are priced exactly, from the PriceBook's text to the per-row rounding;
- rows without a rate are dropped and reported, never charged at the margin alone;
- the rounding rule: exact quantity x unit price, rounded half-even per row, rows summed;
- the unit price reported: exact for one rate, and for an hour whose rows carry different rates
  the quantity-weighted mean rounded to 6 decimals of a micro (display only).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from finops.errors import InvalidInput
from finops.pricebooks import parse_pricebook
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
HOUR_START = datetime(2026, 8, 12, 10, tzinfo=UTC)
RATES = {  # currency units per unit, as a PriceBook states them
    "cpuHour": Decimal("0.031"),
    "spotCPUHour": Decimal(0),
    "ramGbHour": Decimal("0.004"),
    "spotRAMGbHour": Decimal(0),
    "pvGbHour": Decimal("0.00012"),
    "gpuHour": Decimal("1.8"),
    "networkGiB": Decimal("0.09"),
}
ALWAYS = ActiveInterval(datetime(2026, 1, 1, tzinfo=UTC))
CPU, GPU, RAM, PV, NET = Meter.CPU_HOUR, Meter.GPU_HOUR, Meter.RAM_GB_HOUR, Meter.PV_GB_HOUR, Meter.NETWORK_GB


def minute(m: int) -> datetime:
    return HOUR_START + timedelta(minutes=m)


def row(
    *,
    cpu: Any = None,
    gpu: Any = None,
    ram: Any = None,
    pv: Any = None,
    tx: Any = None,
    rx: Any = None,
    rates: Any = RATES,
    **fields: Any,
) -> UsageRow:
    """A row over the whole hour 10:00-11:00 with the default rates, overridden by ``fields``."""
    values: dict[str, Any] = {"start": minute(0), "end": minute(60), "key": "shop/api", **fields}
    return UsageRow(
        cpu_core_usage_avg=cpu,
        gpu_usage_avg=gpu,
        ram_byte_usage_avg=ram,
        pv_byte_hours=pv,
        network_transfer_bytes=tx,
        network_receive_bytes=rx,
        rates=rates,
        **values,
    )


def since(m: int) -> ActiveInterval:
    return ActiveInterval(minute(m))


def until(m: int) -> ActiveInterval:
    return ActiveInterval(ALWAYS.start, minute(m))


def between(first: int, last: int) -> ActiveInterval:
    return ActiveInterval(minute(first), minute(last))


def absolute(micros: int) -> Margin:
    return Margin(absolute_micros=micros)


def factor(milli: int) -> Margin:
    return Margin(factor_milli=milli)


# -- the table -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    meter: Meter
    rows: tuple[UsageRow, ...]
    amount: int
    quantity: str
    margin: Margin = NO_MARGIN
    active: ActiveInterval = ALWAYS


CASES = {
    # Each meter over a whole hour, at the book's rate.
    "cpu/2.5-cores-used-for-an-hour": Case(CPU, (row(cpu=Decimal("2.5")),), 77_500, "2.5"),
    "cpu/row-measured-for-30-min": Case(CPU, (row(end=minute(30), cpu=Decimal(2)),), 31_000, "1"),
    "cpu/unmeasured-is-0-still-priced": Case(CPU, (row(),), 0, "0"),
    "gpu/2-gpus-used": Case(GPU, (row(gpu=Decimal(2)),), 3_600_000, "2"),
    "gpu/unmeasured-is-free": Case(GPU, (row(gpu=None),), 0, "0"),
    "ram/2-gib-average": Case(RAM, (row(ram=Decimal(2 * GIB)),), 8_000, "2"),
    "pv/10-gib-hours": Case(PV, (row(pv=Decimal(10 * GIB)),), 1_200, "10"),
    "network/transfer-plus-receive": Case(NET, (row(tx=Decimal(3 * GIB), rx=Decimal(GIB)),), 360_000, "4"),
    "network/no-time-factor-for-a-short-row": Case(NET, (row(end=minute(6), tx=4 * GIB),), 360_000, "4"),
    "several-rows-add-up": Case(CPU, (row(cpu=1), row(key="shop/db", cpu=3)), 124_000, "4"),
    # Margins, applied to the row's own rate before multiplying by units.
    "margin/absolute-200": Case(CPU, (row(cpu=2),), 62_400, "2", absolute(200)),
    "margin/factor-1150-markup": Case(CPU, (row(cpu=2),), 71_300, "2", factor(1150)),
    "margin/factor-980-discount": Case(CPU, (row(cpu=2),), 60_760, "2", factor(980)),
    "margin/factor-0-free": Case(GPU, (row(gpu=2),), 0, "2", factor(0)),
    "margin/negative-price-clamped-to-0": Case(CPU, (row(cpu=2),), 0, "2", absolute(-50_000)),
    "margin/rate-0-is-a-rate": Case(CPU, (row(cpu=2, rates={"cpuHour": Decimal(0)}),), 400, "2", absolute(200)),
    # Clamping to the active interval [activatedAt, deactivatedAt).
    "clamp/first-hour-from-10:15": Case(CPU, (row(cpu=2),), 46_500, "1.5", active=since(15)),
    "clamp/last-hour-to-10:40-thirds": Case(CPU, (row(cpu=2),), 41_333, "1.333333333333", active=until(40)),
    "clamp/network-first-hour-from-10:45": Case(NET, (row(tx=4 * GIB),), 90_000, "1", active=since(45)),
    "clamp/network-last-hour-to-10:30": Case(NET, (row(rx=4 * GIB),), 180_000, "2", active=until(30)),
    "clamp/pv-last-hour-to-10:30": Case(PV, (row(pv=10 * GIB),), 600, "5", active=until(30)),
    "clamp/ram-active-10:20-to-10:30": Case(RAM, (row(ram=6 * GIB),), 4_000, "1", active=between(20, 30)),
    "clamp/partial-row-own-span": Case(NET, (row(end=minute(30), tx=4 * GIB),), 180_000, "2", active=since(15)),
    "clamp/row-wholly-before-activation-ignored": Case(CPU, (row(cpu=2),), 0, "0", active=since(60)),
    "clamp/row-wholly-after-deactivation-ignored": Case(NET, (row(tx=GIB),), 0, "0", active=until(0)),
    # Rows without a rate are dropped, not charged at the margin alone.
    "drop/no-pricebook": Case(CPU, (row(cpu=2, rates=None),), 0, "0", absolute(200)),
    "drop/book-without-the-meter": Case(GPU, (row(gpu=1, rates={"cpuHour": Decimal("0.031")}),), 0, "0"),
    "drop/only-the-unrated-row": Case(CPU, (row(cpu=1), row(cpu=5, rates=None)), 31_000, "1"),
    # The rounding rule: exact product, half-even per row, rows summed.
    "round/2.5-micros-to-2": Case(NET, (row(tx=GIB // 2, rates={"networkGiB": Decimal("0.000005")}),), 2, "0.5"),
    "round/3.5-micros-to-4": Case(NET, (row(tx=GIB // 2, rates={"networkGiB": Decimal("0.000007")}),), 4, "0.5"),
    "round/per-row-then-summed-2+2-not-5": Case(
        NET, (row(tx=GIB // 2, rates={"networkGiB": Decimal("0.000005")}),) * 2, 4, "1"
    ),
    "round/below-half-down": Case(CPU, (row(cpu=Decimal("0.0000161")),), 0, "0.0000161"),
    "round/above-half-up": Case(CPU, (row(cpu=Decimal("0.0000162")),), 1, "0.0000162"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_usage_charge(case: Case) -> None:
    charge = usage_charge(case.meter, case.rows, case.margin, case.active)
    assert charge.meter is case.meter
    assert charge.amount_micros == case.amount
    assert charge.quantity == Decimal(case.quantity)


def test_row_quantity_is_exact() -> None:
    assert row_quantity(Meter.CPU_HOUR, row(cpu=2), ALWAYS.start, minute(40)) == Fraction(4, 3)
    assert row_quantity(Meter.RAM_GB_HOUR, row(ram=GIB), minute(20)) == Fraction(2, 3)
    assert row_quantity(Meter.NETWORK_GB, row(tx=GIB), minute(60)) == 0


def test_a_usage_meter_never_credits() -> None:
    assert row_quantity(Meter.NETWORK_GB, row(tx=-GIB), ALWAYS.start) == 0


def test_a_zero_length_row_is_a_point_in_time() -> None:
    point = row(start=minute(30), end=minute(30), tx=GIB, cpu=4)
    assert row_quantity(Meter.NETWORK_GB, point, minute(30)) == 1
    assert row_quantity(Meter.NETWORK_GB, point, minute(31)) == 0
    assert row_quantity(Meter.NETWORK_GB, point, ALWAYS.start, minute(30)) == 0
    assert row_quantity(Meter.CPU_HOUR, point, ALWAYS.start) == 0


def test_dropped_rows_are_reported() -> None:
    rows = [row(cpu=1), row(cpu=5, rates=None), row(rates={})]
    charge = usage_charge(Meter.CPU_HOUR, rows, NO_MARGIN, ActiveInterval(minute(30)))
    assert (charge.rows_priced, charge.rows_dropped) == (1, 2)
    assert charge.dropped_quantity == Decimal("2.5")
    assert (charge.quantity, charge.amount_micros) == (Decimal("0.5"), 15_500)
    assert charge.unit_price_micros == Decimal(31_000)
    nothing = usage_charge(Meter.CPU_HOUR, rows[1:], NO_MARGIN, ALWAYS)
    assert (nothing.amount_micros, nothing.unit_price_micros, nothing.unit_prices) == (0, None, ())


# -- the unit price ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rate", "margin", "unit"),
    [
        ("0.031", NO_MARGIN, "31000"),
        ("0.031", Margin(absolute_micros=200), "31200"),
        ("0.031", Margin(factor_milli=1150), "35650"),
        ("1.8", Margin(factor_milli=1200), "2160000"),
        ("0.031611", Margin(factor_milli=980), "30978.78"),
        ("0.031611", Margin(factor_milli=1000), "31611"),
        ("0.000001", Margin(factor_milli=1500), "1.5"),
        ("0.000001", Margin(factor_milli=2500), "2.5"),
        ("0.000003", Margin(factor_milli=500), "1.5"),
        ("0.00005479452", NO_MARGIN, "54.79452"),
        ("0.0000004", NO_MARGIN, "0.4"),
        ("0.0000004", Margin(factor_milli=1150), "0.46"),
        ("0.0000004", Margin(absolute_micros=1), "1.4"),
        ("0.000000000000001", NO_MARGIN, "0.000000001"),
        ("0", Margin(absolute_micros=200), "200"),
        ("0.0001", Margin(absolute_micros=-101), "0"),
    ],
    ids=[
        "no-margin",
        "absolute",
        "factor-markup",
        "factor-gpu",
        "factor-discount-keeps-fractional-micros",
        "factor-1000-is-identity",
        "factor-1.5-micros-not-rounded",
        "factor-2.5-micros-not-rounded",
        "factor-half-of-3-not-rounded",
        "storage-rate-with-11-decimals",
        "sub-micro-rate-is-not-free",
        "factor-on-a-sub-micro-rate",
        "absolute-on-a-sub-micro-rate",
        "smallest-rate",
        "zero-rate-plus-absolute",
        "negative-clamps-to-0",
    ],
)
def test_price_is_exact(rate: str, margin: Margin, unit: str) -> None:
    priced = price(Decimal(rate), margin)
    assert isinstance(priced, Fraction) and priced == Fraction(Decimal(unit))


def test_unit_price_of_an_hour_with_one_rate_is_that_rate() -> None:
    charge = usage_charge(Meter.CPU_HOUR, [row(cpu=1)] * 3, Margin(factor_milli=1150), ALWAYS)
    assert (charge.unit_price_micros, charge.unit_prices) == (Decimal(35_650), (Decimal(35_650),))
    assert charge.rows_priced == 3
    fractional = usage_charge(CPU, [row(cpu=1, rates={"cpuHour": Decimal("0.031611")})], factor(980), ALWAYS)
    assert fractional.unit_price_micros == Decimal("30978.78") and fractional.amount_micros == 30_979


def test_unit_price_of_an_hour_with_mixed_rates_is_the_quantity_weighted_mean() -> None:
    old_book = row(tx=GIB, rates={"networkGiB": Decimal("0.09")})
    new_book = row(tx=3 * GIB, rates={"networkGiB": Decimal("0.1")})
    charge = usage_charge(Meter.NETWORK_GB, [new_book, old_book], NO_MARGIN, ALWAYS)
    assert charge.amount_micros == 390_000
    assert (charge.unit_price_micros, charge.unit_prices) == (Decimal(97_500), (Decimal(90_000), Decimal(100_000)))
    no_traffic = [replace(old_book, network_transfer_bytes=0), replace(new_book, network_transfer_bytes=0)]
    idle = usage_charge(Meter.NETWORK_GB, no_traffic, NO_MARGIN, ALWAYS)
    assert (idle.amount_micros, idle.unit_price_micros) == (0, Decimal(95_000))


def test_the_mean_price_of_a_mixed_hour_is_rounded_for_display_only() -> None:
    one = row(tx=GIB, rates={"networkGiB": Decimal("0.0000011")})  # 1.1 micros
    two = row(tx=2 * GIB, rates={"networkGiB": Decimal("0.0000021")})  # 2.1 micros
    charge = usage_charge(NET, [one, two], NO_MARGIN, ALWAYS)
    # (1 x 1.1 + 2 x 2.1) / 3 = 1.7666...: six decimals of a micro, half-even.
    assert charge.unit_price_micros == Decimal("1.766667")
    assert charge.unit_prices == (Decimal("1.1"), Decimal("2.1"))
    assert charge.amount_micros == round(Fraction(11, 10)) + round(Fraction(42, 10)) == 5  # per row, not the mean


# -- no rate is ever rounded to micros -----------------------------------------------------------


def book_rates(**rates: str) -> dict[str, Decimal]:
    """The rates of a PriceBook stating ``rates``, parsed as the collector parses them."""
    obj = {"metadata": {"namespace": "finops", "name": "exact"}, "spec": {"currency": "USD", "rates": rates}}
    return dict(parse_pricebook(obj).rates)


def test_a_storage_rate_with_11_decimals_is_priced_exactly() -> None:
    # 0.00005479452 per GiB-hour x 10^9 GiB-hours = 54,794.52 exactly; a unit price rounded to
    # 55 micros would give 55,000.00 (+0.38%). x 10^6 GiB-hours = 54.79452 (not 55.00).
    rates = book_rates(ramGbHour="0.00005479452")
    charge = usage_charge(RAM, [row(ram=Decimal(10**9 * GIB), rates=rates)], NO_MARGIN, ALWAYS)
    assert charge.quantity == Decimal(10**9)
    assert charge.amount_micros == 54_794_520_000
    assert charge.unit_price_micros == Decimal("54.79452")
    million = usage_charge(RAM, [row(ram=Decimal(10**6 * GIB), rates=rates)], NO_MARGIN, ALWAYS)
    assert million.amount_micros == 54_794_520


def test_a_sub_micro_rate_is_not_free() -> None:
    rates = book_rates(cpuHour="0.0000004")  # 0.4 micros per core-hour
    charge = usage_charge(CPU, [row(cpu=Decimal(10), rates=rates)], NO_MARGIN, ALWAYS)
    assert (charge.amount_micros, charge.unit_price_micros) == (4, Decimal("0.4"))
    many = usage_charge(CPU, [row(cpu=Decimal(1_000_000), rates=rates)], NO_MARGIN, ALWAYS)
    assert many.amount_micros == 400_000


def test_a_factor_margin_on_a_sub_micro_rate_stays_exact_until_the_row_is_rounded() -> None:
    rates = book_rates(cpuHour="0.0000015", gpuHour="0.0000004")
    # 1.5 micros x 1.5 = 2.25 micros, x 10 cores = 22.5 -> 22 (half-even, once, on the row). A rate
    # rounded to 2 micros would give 30, a unit price rounded to 2 micros 20.
    charge = usage_charge(CPU, [row(cpu=Decimal(10), rates=rates)], factor(1500), ALWAYS)
    assert (charge.amount_micros, charge.unit_price_micros) == (22, Decimal("2.25"))
    # 0.4 micros x 1.15 = 0.46 micros, x 100 GPUs = 46: a rounded rate or price would be free.
    gpus = usage_charge(GPU, [row(gpu=Decimal(100), rates=rates)], factor(1150), ALWAYS)
    assert (gpus.amount_micros, gpus.unit_price_micros) == (46, Decimal("0.46"))


def test_meters_map_to_pricebook_rates() -> None:
    assert {m.value: m.rate_field for m in Meter} == {
        "cpuHour": "cpuHour",
        "gpuHour": "gpuHour",
        "ramGbHour": "ramGbHour",
        "pvGbHour": "pvGbHour",
        "networkGb": "networkGiB",
    }
    assert set(RATES) >= {m.rate_field for m in Meter}


# -- parsing and validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "margin"),
    [
        (None, NO_MARGIN),
        ({}, NO_MARGIN),
        ({"absoluteMicros": 200}, Margin(absolute_micros=200)),
        ({"factorMilli": 980}, Margin(factor_milli=980)),
        ({"absoluteMicros": 0, "factorMilli": None}, Margin(absolute_micros=0)),
    ],
    ids=["absent", "empty", "absolute", "factor", "null-is-absent"],
)
def test_parse_margin(spec: dict[str, Any] | None, margin: Margin) -> None:
    assert parse_margin(spec) == margin


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"absoluteMicros": 200, "factorMilli": 1000},
            r"margins: absoluteMicros and factorMilli are mutually exclusive",
        ),
        ({"absoluteMicros": -1}, r"margins\.absoluteMicros: must be an integer >= 0"),
        ({"factorMilli": -980}, r"margins\.factorMilli: must be an integer >= 0"),
        ({"factorMilli": 1.15}, r"margins\.factorMilli: must be an integer"),
        ({"factorMilli": True}, r"margins\.factorMilli: must be an integer"),
        ({"includedUsage": 5}, r"margins: unknown field\(s\) includedUsage"),
        ("200", r"margins: must be an object"),
    ],
    ids=["both", "negative-absolute", "negative-factor", "float", "bool", "unknown-key", "not-an-object"],
)
def test_parse_margin_refuses_and_names_the_field(spec: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=rf"^{message}"):
        parse_margin(spec)


def test_invalid_rows_and_intervals() -> None:
    with pytest.raises(InvalidInput, match="shop/api"):
        row_quantity(Meter.CPU_HOUR, row(cpu=Decimal("NaN")), ALWAYS.start)
    with pytest.raises(ValueError, match="timezone-aware"):
        row(start=datetime(2026, 8, 12, 10))
    with pytest.raises(ValueError, match="ends before it starts"):
        row(end=minute(-1))
    with pytest.raises(ValueError, match="timezone-aware"):
        ActiveInterval(datetime(2026, 8, 12, 10))
