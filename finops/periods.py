"""Report periods: half-open ``[start, end)``, timezone-aware, measured in calendar months."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction

from finops.errors import InvalidInput

ONE_MICROSECOND = timedelta(microseconds=1)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def day_span(day: date) -> tuple[datetime, datetime]:
    """The UTC day as a half-open period."""
    start = datetime.combine(day, time(), tzinfo=UTC)
    return start, start + timedelta(days=1)


@dataclass(frozen=True)
class Period:
    """The report's period, ``[start, end)``, timezone-aware."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        for name, moment in (("start", self.start), ("end", self.end)):
            if moment.tzinfo is None:
                raise InvalidInput(f"period.{name}: {moment.isoformat()} has no UTC offset")
        if self.start >= self.end:
            raise InvalidInput(f"period: start {self.start.isoformat()} is not before end {self.end.isoformat()}")

    def months(self) -> Fraction:
        """How many calendar months (UTC) the period covers, exactly: the sum, over the months it
        touches, of the part of each month inside the period."""
        start, end = self.start.astimezone(UTC), self.end.astimezone(UTC)
        month = start.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        total = Fraction(0)
        while month < end:
            following = month.replace(year=month.year + month.month // 12, month=month.month % 12 + 1)
            inside = min(end, following) - max(start, month)
            total += Fraction(inside // ONE_MICROSECOND, (following - month) // ONE_MICROSECOND)
            month = following
        return total

    def as_document(self) -> dict[str, str]:
        return {"start": iso(self.start), "end": iso(self.end)}
