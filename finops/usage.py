"""Metered usage: pricing allocation rows for an Offering's ``resourcePricing`` meters.

A usage charge, for one Subscription, one meter and one hour, is priced from the allocation rows
its ``usageSources`` select. Each row is priced on its own:

1. **Quantity**, from the row's measured usage, clamped to the Subscription's active interval
   ``[activatedAt, deactivatedAt)`` (the raw deactivation, not the fee's snapped one). A row
   covers ``[start, end)`` (OpenCost's data window inside the hour); usage is taken as uniform
   over it, so the quantity is the row's whole quantity times ``overlap / span``:

   ============ ========================================================= ====================
   meter        quantity of the whole row                                 exact PriceBook rate
   ============ ========================================================= ====================
   cpuHour      average cores *used* x hours (usage, not requests: the     ``cpuHour``
                operator's behaviour, kept)
   gpuHour      average GPUs used x hours (0 when unmeasured)              ``gpuHour``
   ramGbHour    average bytes used / 2^30 x hours                          ``ramGbHour``
   pvGbHour     byte-hours / 2^30                                          ``pvGbHour``
   networkGb    (transfer + receive bytes) / 2^30, no time factor          ``networkGiB``
   ============ ========================================================= ====================

   An unmeasured value (None) counts as 0. A usage meter never credits: a row whose quantity
   comes out negative counts as 0. A row of zero length is a point in time: all of it counts
   when its instant is in the active interval, none of it otherwise.

2. **Unit price**, from the row's *own* stamped PriceBook rate (the book the collector priced the
   row with, not the Offering's ``resolvedPricing``) and the meter's margin. The rate is the
   book's exact decimal in currency units (0.00005479452 per GiB-hour stays that, as OpenCost
   prices it), and the unit price is **exact, in micros, never rounded**: ``rate x 10^6 +
   absoluteMicros``, or ``rate x 10^6 x factorMilli / 1000`` (fractional micros are kept).
   A negative result is clamped to 0. A row without a rate for the meter (no PriceBook stamped,
   the operator's id 0) is **dropped**: it is reported in ``UsageCharge.rows_dropped`` and
   ``dropped_quantity``, never charged at the margin alone. A rate of 0 *is* a rate.

3. **Amount: the rounding rule, the only one.** ``quantity x unit price`` is computed exactly
   (quantities are exact rationals: the inputs are decimals and time overlaps are fractions of a
   span; rates and margins are exact too) and rounded **half-even to whole micros, per row**. The
   charge for the hour is the sum of the rounded rows. Nothing else is rounded before it, and
   nothing is rounded twice: the reported ``quantity`` (a Decimal rounded half-even to
   ``QUANTITY_PLACES`` places) and ``unit_price_micros`` are for display and storage only and
   never re-enter a price.

``UsageCharge.unit_price_micros`` is the exact unit price (a Decimal: a rate and a margin are
finite decimals, so is their price) when all priced rows share one. Several rows in one hour may
carry different stamped rates (a PriceBook changed mid-hour, or rows from different books); it is
then the quantity-weighted mean of the rows' unit prices (the plain mean when every quantity is
0), rounded half-even to ``PRICE_PLACES`` decimals of a micro, for display only. ``unit_prices``
lists the distinct exact prices, so a caller can tell a mixed hour from a single-rate one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any

from finops.errors import InvalidInput
from finops.money import MICROS_PER_UNIT

GIB = 2**30
QUANTITY_PLACES = 12
PRICE_PLACES = 6  # decimals of a micro kept in the displayed mean price of a mixed-rate hour
_MICROSECOND = timedelta(microseconds=1)
_HOUR_MICROSECONDS = 3_600_000_000


class Meter(StrEnum):
    """The usage meters of ``resourcePricing`` (``subscription`` names no usage and is not one)."""

    CPU_HOUR = "cpuHour"
    GPU_HOUR = "gpuHour"
    RAM_GB_HOUR = "ramGbHour"
    PV_GB_HOUR = "pvGbHour"
    NETWORK_GB = "networkGb"

    @property
    def rate_field(self) -> str:
        """The PriceBook ``spec.rates`` key that prices this meter."""
        return "networkGiB" if self is Meter.NETWORK_GB else self.value


@dataclass(frozen=True)
class Margin:
    """A meter's ``margins``: add ``absolute_micros`` or multiply by ``factor_milli`` / 1000."""

    absolute_micros: int | None = None
    factor_milli: int | None = None

    def __post_init__(self) -> None:
        if self.absolute_micros is not None and self.factor_milli is not None:
            raise InvalidInput("absoluteMicros and factorMilli are mutually exclusive - set only one")


NO_MARGIN = Margin()


def parse_margin(spec: Mapping[str, Any] | None, *, field: str = "margins") -> Margin:
    """Validate a ``margins`` block (absent or empty means no margin); errors name the field."""
    if spec is None:
        return NO_MARGIN
    if not isinstance(spec, Mapping):
        raise InvalidInput(f"{field}: must be an object")
    unknown = set(spec) - {"absoluteMicros", "factorMilli"}
    if unknown:
        raise InvalidInput(f"{field}: unknown field(s) {', '.join(sorted(unknown))}")
    values: dict[str, int | None] = {}
    for key in ("absoluteMicros", "factorMilli"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InvalidInput(f"{field}.{key}: must be an integer >= 0, got {value!r}")
        values[key] = value
    try:
        return Margin(absolute_micros=values["absoluteMicros"], factor_milli=values["factorMilli"])
    except InvalidInput as exc:
        raise InvalidInput(f"{field}: {exc.message}") from exc


def price(rate: Decimal | int, margin: Margin = NO_MARGIN) -> Fraction:
    """The exact unit price in micros of a rate in currency units, with the margin applied, never
    below 0. Not rounded: fractional micros are kept until the per-row amount is rounded."""
    unit = _exact(rate, "rate") * MICROS_PER_UNIT
    if margin.absolute_micros is not None:
        unit += margin.absolute_micros
    elif margin.factor_milli is not None:
        unit *= Fraction(margin.factor_milli, 1000)
    return max(Fraction(0), unit)


@dataclass(frozen=True)
class ActiveInterval:
    """A Subscription's billable interval ``[activatedAt, deactivatedAt)``; ``end`` None is open."""

    start: datetime
    end: datetime | None = None

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or (self.end is not None and self.end.tzinfo is None):
            raise ValueError("ActiveInterval bounds must be timezone-aware")


@dataclass(frozen=True)
class UsageRow:
    """What pricing needs from one allocation row: its window, its usage, its stamped rates.

    ``rates`` is the stamped PriceBook's exact rates (currency units, never rounded) keyed by
    ``spec.rates`` name (``cpuHour`` ... ``networkGiB``), or None when the row was collected
    without a PriceBook.
    """

    start: datetime
    end: datetime
    cpu_core_usage_avg: Decimal | int | None = None
    gpu_usage_avg: Decimal | int | None = None
    ram_byte_usage_avg: Decimal | int | None = None
    pv_byte_hours: Decimal | int | None = None
    network_transfer_bytes: Decimal | int | None = None
    network_receive_bytes: Decimal | int | None = None
    rates: Mapping[str, Decimal] | None = None
    key: str = ""

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("UsageRow start and end must be timezone-aware")
        if self.end < self.start:
            raise ValueError(f"UsageRow {self.key!r} ends before it starts")

    def rate(self, meter: Meter) -> Decimal | None:
        """The stamped rate for ``meter`` in currency units, or None when the row has none."""
        return None if self.rates is None else self.rates.get(meter.rate_field)


@dataclass(frozen=True)
class UsageCharge:
    """One meter's charge over a set of rows (typically one hour of one Subscription)."""

    meter: Meter
    quantity: Decimal  # of the priced rows, rounded half-even to QUANTITY_PLACES
    amount_micros: int
    unit_price_micros: Decimal | None  # exact for one price, else the rounded mean; None when none priced
    unit_prices: tuple[Decimal, ...]  # the distinct exact unit prices of the priced rows, ascending
    rows_priced: int
    rows_dropped: int  # rows in the active interval without a rate for the meter
    dropped_quantity: Decimal


def _exact(value: Decimal | int | None, what: str) -> Fraction:
    if value is None:
        return Fraction(0)
    if isinstance(value, Decimal) and not value.is_finite():
        raise InvalidInput(f"{what}: {value} is not a finite number")
    return Fraction(value)


def _overlap(row: UsageRow, active_start: datetime, active_end: datetime | None) -> tuple[Fraction, Fraction]:
    """(fraction of the row inside the active interval, hours of overlap)."""
    start = max(row.start, active_start)
    end = row.end if active_end is None else min(row.end, active_end)
    span = (row.end - row.start) // _MICROSECOND
    if span == 0:  # a point in time
        inside = row.start >= active_start and (active_end is None or row.start < active_end)
        return Fraction(int(inside)), Fraction(0)
    overlap = max(0, (end - start) // _MICROSECOND)
    return Fraction(overlap, span), Fraction(overlap, _HOUR_MICROSECONDS)


def row_quantity(meter: Meter, row: UsageRow, active_start: datetime, active_end: datetime | None = None) -> Fraction:
    """The exact quantity of ``meter`` in ``row`` inside ``[active_start, active_end)``."""
    fraction, hours = _overlap(row, active_start, active_end)
    if fraction == 0:
        return Fraction(0)
    what = f"allocation row {row.key!r}"
    match meter:
        case Meter.CPU_HOUR:
            quantity = _exact(row.cpu_core_usage_avg, what) * hours
        case Meter.GPU_HOUR:
            quantity = _exact(row.gpu_usage_avg, what) * hours
        case Meter.RAM_GB_HOUR:
            quantity = _exact(row.ram_byte_usage_avg, what) / GIB * hours
        case Meter.PV_GB_HOUR:
            quantity = _exact(row.pv_byte_hours, what) / GIB * fraction
        case Meter.NETWORK_GB:
            moved = _exact(row.network_transfer_bytes, what) + _exact(row.network_receive_bytes, what)
            quantity = moved / GIB * fraction
    return max(Fraction(0), quantity)


def to_quantity(value: Fraction) -> Decimal:
    """An exact quantity as a Decimal rounded half-even to ``QUANTITY_PLACES`` decimals."""
    scaled = round(value * 10**QUANTITY_PLACES)  # half-even
    return Decimal(f"{scaled}E-{QUANTITY_PLACES}")  # built from text: exact, whatever the context


def usage_charge(meter: Meter, rows: Iterable[UsageRow], margin: Margin, active: ActiveInterval) -> UsageCharge:
    """Price ``rows`` for ``meter``: per-row quantity x per-row unit price, rounded half-even per row.

    Rows entirely outside the active interval are ignored; rows inside it without a rate are
    dropped and counted.
    """
    quantity = dropped = Fraction(0)
    amount = priced = skipped = 0
    weighted = Fraction(0)
    prices: list[Fraction] = []
    for row in rows:
        if _overlap(row, active.start, active.end)[0] == 0:
            continue
        row_q = row_quantity(meter, row, active.start, active.end)
        rate = row.rate(meter)
        if rate is None:
            skipped += 1
            dropped += row_q
            continue
        unit = price(rate, margin)
        amount += round(row_q * unit)  # half-even, per row
        quantity += row_q
        weighted += row_q * unit
        prices.append(unit)
        priced += 1
    return UsageCharge(
        meter=meter,
        quantity=to_quantity(quantity),
        amount_micros=amount,
        unit_price_micros=_unit_price(prices, weighted, quantity),
        unit_prices=tuple(_decimal(p) for p in sorted(set(prices))),
        rows_priced=priced,
        rows_dropped=skipped,
        dropped_quantity=to_quantity(dropped),
    )


def _decimal(value: Fraction) -> Decimal:
    """A finite decimal (a denominator of 2s and 5s only, as every unit price has) as an exact
    Decimal; ``ValueError`` for any other fraction, which would need rounding."""
    twos = fives = 0
    rest = value.denominator
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        raise ValueError(f"{value} is not a finite decimal")
    places = max(twos, fives)
    return Decimal(f"{value.numerator * 10**places // value.denominator}E-{places}")  # exact, from text


def _unit_price(prices: list[Fraction], weighted: Fraction, quantity: Fraction) -> Decimal | None:
    if not prices:
        return None
    if len(set(prices)) == 1:
        return _decimal(prices[0])  # exact
    mean = weighted / quantity if quantity else Fraction(sum(prices), len(prices))
    return Decimal(f"{round(mean * 10**PRICE_PLACES)}E-{PRICE_PLACES}")  # half-even; display only
