"""Hour windows: UTC, half-open ``[start, end)``, pinned from the run's trigger.

A run's hour comes from its trigger (the CronJob's scheduled timestamp), never from the clock
when the trigger has one, so a retried Job recomputes exactly the hour it was scheduled for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from finops.errors import InvalidInput

HOUR = timedelta(hours=1)


@dataclass(frozen=True, order=True)
class Hour:
    """One UTC hour, ``[start, start + 1h)``."""

    start: datetime

    def __post_init__(self) -> None:
        if self.start.tzinfo is None:
            raise ValueError("Hour.start must be timezone-aware")
        # Always UTC: a timestamptz read back in a session of another TimeZone names the same
        # instant, but its date() and text would be that zone's.
        object.__setattr__(self, "start", self.start.astimezone(UTC))
        if self.start != truncate_to_hour(self.start):
            raise ValueError(f"Hour.start {self.start.isoformat()} is not on an hour boundary")

    @property
    def end(self) -> datetime:
        return self.start + HOUR

    def previous(self, n: int = 1) -> Hour:
        return Hour(self.start - n * HOUR)

    def __str__(self) -> str:
        return self.start.strftime("%Y-%m-%dT%H:00Z")


def midnight(day: date) -> datetime:
    """The start of the UTC ``day``."""
    return datetime.combine(day, time(), tzinfo=UTC)


def truncate_to_hour(moment: datetime) -> datetime:
    """The start of the UTC hour containing ``moment``."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def parse_timestamp(text: str, *, field: str) -> datetime:
    """An RFC 3339 timestamp with an offset; ``field`` names it in the error."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise InvalidInput(f"{field}: {text!r} is not an RFC 3339 timestamp") from exc
    if moment.tzinfo is None:
        raise InvalidInput(f"{field}: {text!r} has no UTC offset (use e.g. 2026-11-29T10:00:00Z)")
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:  # 9999-12-31T23:59:59-01:00 is past the last representable moment
        raise InvalidInput(f"{field}: {text!r} is out of range") from exc


def pin_hour(scheduled: datetime | None, now: datetime) -> Hour:
    """The run's hour: the scheduled time's hour when the trigger gave one, else now's."""
    return Hour(truncate_to_hour(scheduled if scheduled is not None else now))


def lookback(pinned: Hour, hours: int) -> list[Hour]:
    """The ``hours`` hours before ``pinned``, oldest first."""
    return [pinned.previous(n) for n in range(hours, 0, -1)]


def hours_between(start: datetime, end: datetime) -> Iterator[Hour]:
    """Every hour starting in ``[start, end)``, start truncated to its hour."""
    current = truncate_to_hour(start)
    while current < end:
        yield Hour(current)
        current += HOUR
