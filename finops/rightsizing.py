"""Rightsizing advice from a VerticalPodAutoscaler's recommendation, priced the way cost is measured.

A VPA in ``updateMode: Off`` recommends requests and applies nothing: that is advice a team acts
on. For each container it names, per resource (CPU, memory):

- **current**: the request the container held for the most hours of the stored allocation rows
  in the window (its longest run; a tie goes to the larger request), not what a manifest says;
- **suggested**: the VPA's ``target`` rounded *up* to 0.01 cores and to 16 MiB (a request a
  little above the recommendation, in steps people write);
- **unsettled** when the VPA's ``upperBound`` is more than 3x its ``target``: the recommender has
  not seen enough to be confident (low confidence), so the advice is shown but flagged;
- **the money**: each stored row (one container of one pod for one hour) was billed
  ``billed = max(request, usage) x hours`` (its core-hours or byte-hours) for ``cost``. Its own
  price is ``cost / billed`` (the PriceBook and adjustments of that run), and with the suggested
  request it would have been billed ``price x max(suggested, usage) x hours``. The change is
  ``price x (max(suggested, usage) x hours - billed)``, summed exactly over the window's rows
  (``Fraction``), then rounded half-even to micros once per line; the monthly figure is that
  exact sum ``x 720 / hours`` (``finops.measurement.HOURS_PER_MONTH``; ``hours`` = the period
  the container was actually measured: for each stored hour, the longest of its rows there, so two
  replicas do not count twice and the current, partial hour counts as its minutes; never a fixed
  30 days), rounded once. A row without a cost or with no billed quantity has no price and is counted as unpriced.

Worked example: a row of 1 hour that requested 0.25 cores, used 0.05 and was billed 0.25
core-hours for 8,000 micros (its price: 0.032 per core-hour); the VPA's target is 0.123 cores, so the
suggestion is 0.13. Change: 0.032 x (max(0.13, 0.05) x 1 - 0.25) = -0.00384, i.e. -3,840 micros;
over 1 measured hour that is -2.764800 a month (x 720).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from fractions import Fraction

from finops.measurement import HOURS_PER_MONTH
from finops.quantities import MIB

CPU_STEP = Fraction(1, 100)  # cores
MEMORY_STEP = 16 * MIB  # bytes
UNSETTLED_RATIO = 3  # upperBound above this many targets: low confidence


def round_up(value: Fraction, step: Fraction | int) -> Fraction:
    """``value`` rounded up to a whole number of ``step`` (a value already on a step is kept)."""
    return math.ceil(Fraction(value) / step) * Fraction(step)


def suggest(resource: str, target: Fraction) -> Fraction:
    """The suggested request for a VPA ``target``: up to 0.01 cores (``cpu``) or 16 MiB (``memory``)."""
    return round_up(target, CPU_STEP if resource == "cpu" else MEMORY_STEP)


def quantity_text(resource: str, value: Fraction) -> str:
    """A suggested request as a manifest writes it: ``130m``, ``2`` cores; ``112Mi``, ``1Gi``."""
    if resource == "cpu":
        milli = value * 1000
        if milli.denominator != 1:
            return str(float(value))  # never for a suggestion (whole millicores); shown, not parsed
        return str(milli.numerator // 1000) if milli.numerator % 1000 == 0 else f"{milli.numerator}m"
    if value.denominator == 1:
        size = value.numerator
        for unit, factor in (("Gi", 1024**3), ("Mi", MIB), ("Ki", 1024)):
            if size and size % factor == 0:
                return f"{size // factor}{unit}"
        return str(size)
    return str(float(value))


def decimal_text(value: Fraction | None, places: int = 6) -> str | None:
    """An exact quantity as a decimal string (rounded half-even to ``places``), for display."""
    if value is None:
        return None
    scaled = round(value * 10**places)
    sign = "-" if scaled < 0 else ""
    whole, frac = divmod(abs(scaled), 10**places)
    text = f"{sign}{whole}.{frac:0{places}d}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def unsettled(target: Fraction, upper_bound: Fraction | None) -> bool:
    """Low confidence: the VPA's upper bound is more than 3x its target."""
    return upper_bound is not None and upper_bound > UNSETTLED_RATIO * target


@dataclass(frozen=True)
class RowUse:
    """One stored allocation row of a container for one resource (cores or bytes)."""

    hour: Hashable  # the row's hour: the measured period is, per hour, its longest row
    hours: Fraction  # the row's minutes / 60
    request: Fraction | None  # average request over the row
    usage: Fraction | None  # average usage over the row
    billed: Fraction | None  # what the row billed: core-hours or byte-hours, max(request, usage) x hours
    cost_micros: int | None  # the row's cost of this resource, adjustments included


def longest_run(rows: Iterable[RowUse]) -> Fraction | None:
    """The request held for the most hours (ties: the larger request); None without any request."""
    hours: dict[Fraction, Fraction] = defaultdict(Fraction)
    for row in rows:
        if row.request is not None:
            hours[row.request] += row.hours
    if not hours:
        return None
    return max(hours, key=lambda request: (hours[request], request))


@dataclass(frozen=True)
class Change:
    """The priced change of a request over the window's rows."""

    exact_micros: Fraction  # sum over priced rows, exact
    measured_hours: Fraction  # per stored hour, its longest row's hours
    priced_rows: int
    unpriced_rows: int

    @property
    def window_micros(self) -> int:
        """Rounded half-even once."""
        return round(self.exact_micros)

    @property
    def monthly_micros(self) -> int:
        """The exact change x 720 / measured hours, rounded half-even once (0 without hours)."""
        if self.measured_hours <= 0:
            return 0
        return round(self.exact_micros * HOURS_PER_MONTH / self.measured_hours)


def change(rows: Iterable[RowUse], suggested: Fraction) -> Change:
    """``sum(price x (max(suggested, usage) x hours - billed))`` over ``rows``, each at its own price."""
    total = Fraction(0)
    hours: dict[Hashable, Fraction] = {}
    priced = unpriced = 0
    for row in rows:
        hours[row.hour] = max(hours.get(row.hour, Fraction(0)), row.hours)
        if row.cost_micros is None or not row.billed or row.billed <= 0:
            unpriced += 1
            continue
        price = Fraction(row.cost_micros) / row.billed
        total += price * (max(suggested, row.usage or Fraction(0)) * row.hours - row.billed)
        priced += 1
    return Change(total, sum(hours.values(), Fraction(0)), priced, unpriced)
