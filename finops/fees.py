"""The subscription fee: a price and a clock, in integer micros.

An Offering's ``spec.pricing.subscriptionFee`` charges ``priceMicros`` per *tick*, a tick being a
boundary on the fee's grid. The fee for a window is the value of the boundaries inside it::

    ticks(t)        = boundaries in (activatedAt, t]
    fee(start, end) = priceMicros * (ticks(end) - ticks(start))      (opening tick prorated)

A boundary exactly on a window's end belongs to that window, so consecutive hourly windows
partition a Subscription's life: their fees add up to the fee over the whole span, and the same
window always costs the same, whenever and however often it is recomputed.

Where the boundaries fall (``tickAlignment``) and what ``period`` means:

============== =================================== ============================================
alignment      period                              boundaries
============== =================================== ============================================
ActivatedAt    ``Nh``, ``Nm`` or ``Ns``            ``activatedAt + k·period`` (k ≥ 1)
HourBoundary   ``N`` or ``Nh`` hours               every N hours on a grid from the Unix epoch
                                                   (1970-01-01T00:00Z), the same grid for every
                                                   Subscription: ``6`` is 00, 06, 12, 18 UTC
DayBoundary    ``N`` or ``Nd`` days                the first UTC midnight strictly after
                                                   activation, then every N*24 h from there
MonthBoundary  ``N`` or ``Nmo`` months             the 1st at 00:00 UTC of the month N months
                                                   after the activation month, then every N months
============== =================================== ============================================

Since v0.1.5 the operator accepts a suffixed period for the boundary alignments. Here a boundary
alignment accepts the bare integer or its *own* unit only (``h``, ``d``, ``mo``); a suffix
belonging to another unit (``3h`` under DayBoundary, ``90m`` under HourBoundary) is refused rather
than converted, so nobody's ``3h`` silently becomes three days. A period of zero, or longer than 100 years, is refused.

**Proration** (boundary alignments only, opening tick only)::

    opening = min(priceMicros, priceMicros * secs(activatedAt → first boundary) // secs(full period))

with whole seconds and integer division (rounding down). The full period is the nominal one:
``N`` hours, ``N * 24`` hours, or ``N * 30.4375`` days (2,629,800 s per month). The opening amount
lands in the window that ends on the first boundary. ActivatedAt never prorates. The ``min`` is
ours: the operator's formula charges more than a whole period for a MonthBoundary Subscription
activated on the 1st of a 31-day month before 13:30 UTC (31 days against 30.4375); an opening
tick is a part of a period, so it is capped at the price.

**Deactivation snap.** ``deactivatedAt`` is moved forward to the next boundary (unless it is on
one) and every window is clamped to that point, so the last tick is always charged in full. The
snapped instant exists only here; status keeps the raw one. A Subscription deactivated before its
first boundary pays that (prorated) first tick.

**minPeriods** is a cleanup guard: the finalizer of a deleted Subscription is released once at
least ``minPeriods`` boundaries have passed since activation. It counts the same grid as the fee
but is *not* clamped by the snap: clamping would hold the finalizer of a Subscription deleted
before ``minPeriods`` ticks forever. No shortfall is ever charged.

Timestamps must be timezone-aware. Kubernetes timestamps have whole-second precision; anything
finer in ``activatedAt`` or ``deactivatedAt`` is dropped, once, when the schedule is built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from finops.errors import InvalidInput
from finops.money import MAX_MICROS

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SECOND = timedelta(seconds=1)
HOUR_SECONDS = 3600
DAY_SECONDS = 86_400
# The proration month: 365.25 / 12 days = 30 days 10 h 30 min.
MONTH_SECONDS = 2_629_800

_SECONDS_IN = {"h": HOUR_SECONDS, "m": 60, "s": 1}
_ACTIVATED_AT_PERIOD = re.compile(r"^([0-9]+)([hms])$")
_BOUNDARY_PERIOD = re.compile(r"^([0-9]+)(h|d|mo)?$")
_HUNDRED_YEARS_DAYS = 36_525


class TickAlignment(StrEnum):
    """Where a fee's tick boundaries fall (``subscriptionFee.tickAlignment``)."""

    ACTIVATED_AT = "ActivatedAt"
    HOUR_BOUNDARY = "HourBoundary"
    DAY_BOUNDARY = "DayBoundary"
    MONTH_BOUNDARY = "MonthBoundary"


# The unit of ``Fee.period`` for each alignment, its suffix, and its upper bound (100 years).
_UNIT = {
    TickAlignment.ACTIVATED_AT: ("s", _HUNDRED_YEARS_DAYS * DAY_SECONDS),
    TickAlignment.HOUR_BOUNDARY: ("h", _HUNDRED_YEARS_DAYS * 24),
    TickAlignment.DAY_BOUNDARY: ("d", _HUNDRED_YEARS_DAYS),
    TickAlignment.MONTH_BOUNDARY: ("mo", 1200),
}


@dataclass(frozen=True)
class Fee:
    """A validated ``subscriptionFee``.

    ``period`` counts the alignment's unit: seconds for ActivatedAt, hours for HourBoundary,
    days for DayBoundary, months for MonthBoundary.
    """

    price_micros: int
    period: int
    alignment: TickAlignment
    min_periods: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.price_micros <= MAX_MICROS:
            raise InvalidInput(f"priceMicros: must be between 1 and {MAX_MICROS}, got {self.price_micros}")
        unit, longest = _UNIT[self.alignment]
        if not 1 <= self.period <= longest:
            raise InvalidInput(f"period: must be between 1 and {longest}{unit} for {self.alignment}")
        if self.min_periods is not None and self.min_periods < 1:
            raise InvalidInput(f"minPeriods: must be at least 1, got {self.min_periods}")

    @property
    def prorated(self) -> bool:
        """Whether the opening tick is prorated (every boundary alignment; never ActivatedAt)."""
        return self.alignment is not TickAlignment.ACTIVATED_AT

    @property
    def nominal_seconds(self) -> int:
        """The full period in seconds, the proration denominator (a month is 2,629,800 s)."""
        per_unit = {
            TickAlignment.ACTIVATED_AT: 1,
            TickAlignment.HOUR_BOUNDARY: HOUR_SECONDS,
            TickAlignment.DAY_BOUNDARY: DAY_SECONDS,
            TickAlignment.MONTH_BOUNDARY: MONTH_SECONDS,
        }[self.alignment]
        return self.period * per_unit


def parse_fee(spec: Mapping[str, Any], *, field: str = "spec.pricing.subscriptionFee") -> Fee:
    """Validate a ``subscriptionFee`` block; ``InvalidInput`` names the offending field."""
    if not isinstance(spec, Mapping):
        raise InvalidInput(f"{field}: must be an object")
    try:
        alignment = TickAlignment(str(spec.get("tickAlignment")))
    except ValueError:
        choices = ", ".join(a.value for a in TickAlignment)
        raise InvalidInput(
            f"{field}.tickAlignment: must be one of {choices}, got {spec.get('tickAlignment')!r}"
        ) from None
    if spec.get("priceMicros") is None:
        raise InvalidInput(f"{field}.priceMicros: is required")
    price = _integer(spec["priceMicros"], f"{field}.priceMicros")
    min_periods = None if spec.get("minPeriods") is None else _integer(spec["minPeriods"], f"{field}.minPeriods")
    period = _parse_period(spec.get("period"), alignment, f"{field}.period")
    try:
        return Fee(price_micros=price, period=period, alignment=alignment, min_periods=min_periods)
    except InvalidInput as exc:
        raise InvalidInput(f"{field}.{exc.message}") from exc


def _integer(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field}: must be an integer, got {value!r}")
    return value


def _parse_period(value: object, alignment: TickAlignment, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and alignment is not TickAlignment.ACTIVATED_AT:
        value = str(value)  # an unquoted YAML integer: the bare form
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: must be a string, got {value!r}")
    text = value.strip()
    unit, longest = _UNIT[alignment]
    if alignment is TickAlignment.ACTIVATED_AT:
        match = _ACTIVATED_AT_PERIOD.fullmatch(text)
        if not match:
            raise InvalidInput(f"{field}: {text!r} must be a whole number of h, m or s (e.g. 1h, 90m) for {alignment}")
        amount = int(match.group(1)) * _SECONDS_IN[match.group(2)]
    else:
        match = _BOUNDARY_PERIOD.fullmatch(text)
        if not match or match.group(2) not in (None, unit):
            raise InvalidInput(
                f"{field}: {text!r} must be a whole number of {unit} (e.g. 1 or 1{unit}) for {alignment}"
            )
        amount = int(match.group(1))
    if not 1 <= amount <= longest:
        raise InvalidInput(f"{field}: {text!r} must be at least 1 and at most 100 years")
    return amount


def _aware(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware")
    return moment.astimezone(UTC)


def _month_index(moment: datetime) -> int:
    return moment.year * 12 + moment.month - 1


def _month_start(index: int) -> datetime:
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


class FeeSchedule:
    """One Subscription's fee: the Offering's ``Fee`` on the clock of its activation.

    ``amount(start, end)`` is the charge for the window ``[start, end)`` (the boundary at ``end``
    is in, the one at ``start`` is out), clamped to the snapped deactivation.
    """

    def __init__(self, fee: Fee, activated_at: datetime, deactivated_at: datetime | None = None) -> None:
        self.fee = fee
        self.activated_at = _aware(activated_at, "activated_at").replace(microsecond=0)
        self.deactivated_at: datetime | None = None
        if deactivated_at is not None:
            self.deactivated_at = _aware(deactivated_at, "deactivated_at").replace(microsecond=0)
            if self.deactivated_at < self.activated_at:
                raise InvalidInput(
                    f"deactivatedAt {self.deactivated_at.isoformat()} is before "
                    f"activatedAt {self.activated_at.isoformat()}"
                )
        self._hour_step = timedelta(hours=fee.period)
        # HourBoundary: index on the epoch grid of the last grid point at or before activation.
        self._grid_origin = (self.activated_at - EPOCH) // self._hour_step
        self.first_boundary = self._boundary(1)
        self.opening_micros = self._opening()
        self.snapped_end: datetime | None = None if self.deactivated_at is None else self._snap(self.deactivated_at)

    def __repr__(self) -> str:
        return (
            f"FeeSchedule({self.fee!r}, activated_at={self.activated_at.isoformat()}, "
            f"deactivated_at={self.deactivated_at.isoformat() if self.deactivated_at else None})"
        )

    # -- the grid ----------------------------------------------------------------------------

    def _boundary(self, k: int) -> datetime:
        """The k-th boundary after activation (k ≥ 1), ignoring deactivation."""
        fee, start = self.fee, self.activated_at
        match fee.alignment:
            case TickAlignment.ACTIVATED_AT:
                return start + k * fee.period * SECOND
            case TickAlignment.HOUR_BOUNDARY:
                return EPOCH + (self._grid_origin + k) * self._hour_step
            case TickAlignment.DAY_BOUNDARY:
                first_midnight = start.replace(hour=0, minute=0, second=0) + timedelta(days=1)
                return first_midnight + (k - 1) * fee.period * timedelta(days=1)
            case TickAlignment.MONTH_BOUNDARY:
                return _month_start(_month_index(start) + k * fee.period)

    def _grid_ticks(self, moment: datetime) -> int:
        """Boundaries in ``(activatedAt, moment]``, ignoring deactivation."""
        fee, start = self.fee, self.activated_at
        match fee.alignment:
            case TickAlignment.ACTIVATED_AT:
                return max(0, (moment - start) // (fee.period * SECOND))
            case TickAlignment.HOUR_BOUNDARY:
                return max(0, (moment - EPOCH) // self._hour_step - self._grid_origin)
            case TickAlignment.DAY_BOUNDARY:
                if moment < self.first_boundary:
                    return 0
                return (moment - self.first_boundary) // timedelta(days=fee.period) + 1
            case TickAlignment.MONTH_BOUNDARY:
                return max(0, (_month_index(moment) - _month_index(start)) // fee.period)

    def _snap(self, moment: datetime) -> datetime:
        """``moment`` if it is a boundary, else the next boundary after it."""
        n = self._grid_ticks(moment)
        if n and self._boundary(n) == moment:
            return moment
        return self._boundary(n + 1)

    def _opening(self) -> int:
        price = self.fee.price_micros
        if not self.fee.prorated:
            return price
        seconds = (self.first_boundary - self.activated_at) // SECOND
        return min(price, price * seconds // self.fee.nominal_seconds)

    # -- the public arithmetic ----------------------------------------------------------------

    def ticks(self, moment: datetime) -> int:
        """Boundaries in ``(activatedAt, moment]``, with ``moment`` clamped to the snapped end."""
        moment = _aware(moment, "moment")
        if self.snapped_end is not None and moment > self.snapped_end:
            moment = self.snapped_end
        return self._grid_ticks(moment)

    def charged_through(self, moment: datetime) -> int:
        """Micros charged from activation up to ``moment`` (inclusive of a boundary there)."""
        n = self.ticks(moment)
        return 0 if n == 0 else self.opening_micros + (n - 1) * self.fee.price_micros

    def amount(self, start: datetime, end: datetime) -> int:
        """The fee for the window ``[start, end)`` in micros."""
        if end < start:
            raise ValueError(f"window end {end.isoformat()} is before its start {start.isoformat()}")
        return self.charged_through(end) - self.charged_through(start)

    def periods_elapsed(self, now: datetime) -> int:
        """Boundaries passed since activation, not clamped by deactivation (the minPeriods clock)."""
        return self._grid_ticks(_aware(now, "now"))

    def min_periods_satisfied(self, now: datetime) -> bool:
        """The finalizer's minPeriods gate: true when the fee has no minPeriods or enough have passed."""
        return self.fee.min_periods is None or self.periods_elapsed(now) >= self.fee.min_periods
