"""The hour ledger: which hours of allocation data exist, and whether they can still change.

Every (cluster, aggregation, hour) is in one state:

- ``missing``: never stored (no ledger row);
- ``open``: stored, may still change: a run's pinned hour (the hour still running), or an hour
  OpenCost answered with no allocations at all, retried until the grace period ends;
- ``final``: stored for good, never rewritten;
- ``lost``: given up, with the reason: OpenCost no longer keeps the hour (older than its history),
  or it stayed empty past the grace period. Rows stored before are kept; reports count the hour
  as not covered.

Final and lost hours are *settled*: their rows will not change. Usage charges are final only up to
the first hour that is not settled (gaps count as not settled), so a missing hour can never be
charged as zero while OpenCost may still have it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from finops.hours import HOUR, Hour


class HourState(StrEnum):
    MISSING = "missing"
    OPEN = "open"
    FINAL = "final"
    LOST = "lost"

    @property
    def settled(self) -> bool:
        return self in (HourState.FINAL, HourState.LOST)


def horizon(pinned: Hour, history_hours: int) -> datetime:
    """The oldest hour OpenCost still answers for: hours before it can only be given up."""
    return pinned.start - history_hours * HOUR


def window_start(pinned: Hour, *, lookback: int, history_hours: int, ledger_start: datetime | None) -> datetime:
    """Where a run starts looking: the ``lookback`` hours before the pinned one, and further back to
    the oldest hour the ledger knows of (so an outage of any length is caught up), but never before
    the horizon."""
    start = pinned.start - lookback * HOUR
    if ledger_start is not None:
        start = min(start, ledger_start)
    return max(start, horizon(pinned, history_hours))


def hours_to_collect(pinned: Hour, start: datetime, ledger: Mapping[datetime, HourState]) -> list[tuple[Hour, bool]]:
    """The hours a run fetches, oldest first, with whether each is written final: every hour in
    ``[start, pinned)`` that is not settled (missing or open), then the pinned hour, written open."""
    todo: list[tuple[Hour, bool]] = []
    hour = start
    while hour < pinned.start:
        if not ledger.get(hour, HourState.MISSING).settled:
            todo.append((Hour(hour), True))
        hour += HOUR
    todo.append((pinned, False))
    return todo


def empty_answer(hour: Hour, *, finalize: bool, now: datetime, grace: timedelta) -> tuple[HourState, str]:
    """The state of an hour OpenCost answered with no allocations at all (not even ``__idle__``,
    which a cluster running nothing still has): never final on first sight. It stays open and is
    retried until ``grace`` after the hour ended, then it is lost."""
    if finalize and now >= hour.end + grace:
        return HourState.LOST, f"OpenCost answered no allocations up to {_hours(grace)} after the hour ended"
    return HourState.OPEN, "OpenCost answered no allocations (retried by the next run)"


def first_unsettled(
    start: datetime, end: datetime, settled: Collection[datetime], ledger_start: datetime | None
) -> datetime:
    """The first hour in ``[start, end)`` that is neither final nor lost (missing counts as not
    settled), else ``end``. Hours before ``ledger_start`` (the first hour ever collected) were never
    asked for and cannot be any more: they count as settled, with no usage, so billing of a
    Subscription older than the installation can finalize; load history first
    (``finops collect --from``) to price them. Without any ledger nothing is settled."""
    if ledger_start is None:
        return start
    hour = max(start, ledger_start)
    while hour < end and hour in settled:
        hour += HOUR
    return min(hour, end)


MAX_RANGES = 10


def hour_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


@dataclass(frozen=True)
class HourRange:
    """Consecutive hours, ``first`` to ``last`` (both included), with what they are (``missing``,
    ``lost: <reason>``...; empty when the list says it)."""

    first: datetime
    last: datetime
    label: str = ""

    @property
    def hours(self) -> int:
        return (self.last - self.first) // HOUR + 1

    def __str__(self) -> str:
        span = hour_text(self.first) if self.first == self.last else f"{hour_text(self.first)}..{hour_text(self.last)}"
        return f"{span} {self.label}" if self.label else span


def hour_ranges(hours: Iterable[datetime]) -> list[HourRange]:
    """Hours (starts) as ranges of consecutive hours, in order."""
    spans: list[HourRange] = []
    for hour in sorted(set(hours)):
        if spans and spans[-1].last + HOUR == hour:
            spans[-1] = HourRange(spans[-1].first, hour)
        else:
            spans.append(HourRange(hour, hour))
    return spans


def compact(spans: Sequence[HourRange], limit: int = MAX_RANGES) -> list[str]:
    """The ranges as text, the first ``limit`` of them, then ``and N more ranges (M hours)``."""
    shown = [str(r) for r in spans[:limit]]
    if rest := spans[limit:]:
        shown.append(f"and {len(rest)} more ranges ({sum(r.hours for r in rest)} hours)")
    return shown


def ranges(hours: Iterable[datetime], *, limit: int = MAX_RANGES) -> str:
    """Hours as compact ranges (``2026-11-03T00:00Z..2026-11-03T05:00Z``), at most ``limit``."""
    return ", ".join(compact(hour_ranges(hours), limit))


def _hours(span: timedelta) -> str:
    return f"{int(span.total_seconds() // 3600)} h"
