"""Query-time parsing of ``window``, ``step`` and ``accumulate``, following OpenCost's window.go.

``24h`` is *aligned*, not rolling (reference §1.3): it ends at the next full hour, and ``7d`` ends at
tomorrow 00:00 UTC and covers today plus six earlier days. Keywords are evaluated in UTC (OpenCost's
default UTC_OFFSET).

All instants are integer epoch seconds in UTC.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

MINUTE = 60
HOUR = 3600
DAY = 86400
WEEK = 7 * DAY

_UNITS = {"m": MINUTE, "h": HOUR, "d": DAY, "w": WEEK}
_DURATION_RE = re.compile(r"^(\d+)(m|h|d|w)$")
_OFFSET_RE = re.compile(r"^(\d+)(m|h|d|w) offset (\d+)(m|h|d|w)$")
_UNIX_PAIR_RE = re.compile(r"^(\d+)[,-](\d+)$")
_NAMED_STEPS = {"hour": HOUR, "day": DAY, "week": WEEK}
_ACCUMULATE = {
    "": "none",
    "false": "none",
    "f": "none",
    "0": "none",
    "none": "none",
    "true": "all",
    "t": "all",
    "1": "all",
    "all": "all",
    "hour": "hour",
    "day": "day",
    "week": "week",
}
MAX_SETS = 2000


class QueryError(ValueError):
    """A query parameter is invalid; the server answers 400 with OpenCost's error envelope."""


def floor(ts: int, unit: int) -> int:
    return ts - ts % unit


def week_start(ts: int) -> int:
    """00:00 UTC of the Sunday starting ``ts``'s week (Go's Weekday counts from Sunday)."""
    day = floor(ts, DAY)
    weekday = (datetime.fromtimestamp(day, UTC).weekday() + 1) % 7
    return day - weekday * DAY


def month_start(ts: int) -> int:
    moment = datetime.fromtimestamp(ts, UTC)
    return int(datetime(moment.year, moment.month, 1, tzinfo=UTC).timestamp())


def rfc3339(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _parse_rfc3339(text: str) -> int:
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        raise ValueError("RFC3339 time needs a zone (Z or +hh:mm)")
    return int(moment.timestamp())


def parse_window(text: str | None, now: int) -> tuple[int, int]:
    """``[start, end)`` in epoch seconds; ``now`` is the server clock in epoch seconds."""
    if text is None or not text.strip():
        raise QueryError("missing 'window' parameter")
    window = text.strip()
    start, end = _resolve(window, now)
    if end <= start:
        raise QueryError(f"invalid 'window' parameter: window end must be after its start: {window}")
    return start, end


def _resolve(window: str, now: int) -> tuple[int, int]:
    now_minute = floor(now, MINUTE)
    today = floor(now, DAY)
    if window == "today":
        return today, today + DAY
    if window == "yesterday":
        return today - DAY, today
    if window == "week":
        return week_start(now), now_minute
    if window == "lastweek":
        return week_start(now) - WEEK, week_start(now)
    if window == "month":
        return month_start(now), now_minute
    if window == "lastmonth":
        this_month = month_start(now)
        return month_start(this_month - DAY), this_month
    match = _DURATION_RE.match(window)
    if match:
        count, unit = int(match.group(1)), match.group(2)
        align = DAY if unit in ("d", "w") else _UNITS[unit]
        end = floor(now, align) + align
        return end - count * _UNITS[unit], end
    match = _OFFSET_RE.match(window)
    if match:
        end = now_minute - int(match.group(3)) * _UNITS[match.group(4)]
        return end - int(match.group(1)) * _UNITS[match.group(2)], end
    match = _UNIX_PAIR_RE.match(window)
    if match:
        return int(match.group(1)), int(match.group(2))
    parts = window.split(",")
    if len(parts) == 2:
        try:
            return _parse_rfc3339(parts[0]), _parse_rfc3339(parts[1])
        except ValueError:
            pass
    raise QueryError(f"invalid 'window' parameter: illegal window: {window}")


def parse_step(text: str | None, start: int, end: int) -> int:
    """Step length in seconds; the default is the whole window (one set)."""
    if text is None or not text.strip():
        return end - start
    step_text = text.strip()
    if step_text in _NAMED_STEPS:
        step = _NAMED_STEPS[step_text]
    else:
        match = _DURATION_RE.match(step_text)
        if not match or int(match.group(1)) == 0:
            raise QueryError(f"invalid 'step' parameter: {step_text!r} (use a duration like 1h, 1d, 30m)")
        step = int(match.group(1)) * _UNITS[match.group(2)]
    if -(-(end - start) // step) > MAX_SETS:
        raise QueryError(f"invalid 'step' parameter: {step_text} gives more than {MAX_SETS} sets for this window")
    return step


def step_windows(start: int, end: int, step: int) -> list[tuple[int, int]]:
    """Consecutive ``[s, e)`` sets from ``start``; the last one is cut at ``end``."""
    sets = []
    cursor = start
    while cursor < end:
        sets.append((cursor, min(cursor + step, end)))
        cursor += step
    return sets


def parse_accumulate(text: str | None) -> str:
    """``none``, ``all``, ``hour``, ``day`` or ``week`` (``true`` means ``all``)."""
    value = (text or "").strip().lower()
    if value not in _ACCUMULATE:
        raise QueryError(f"invalid 'accumulate' parameter: {text!r} (sandbox supports true, false, hour, day, week)")
    return _ACCUMULATE[value]


def accumulate_bucket(set_start: int, option: str) -> int:
    """The bucket a step set falls into when accumulating by ``option``."""
    if option == "hour":
        return floor(set_start, HOUR)
    if option == "day":
        return floor(set_start, DAY)
    if option == "week":
        return week_start(set_start)
    return 0


def parse_bool(text: str | None) -> bool:
    """Go's strconv.ParseBool; anything unparsable is the default (false), as OpenCost's GetBool does."""
    return (text or "").strip() in ("1", "t", "T", "TRUE", "true", "True")
