"""The one clock: what time it is, and running something later. Everything that reads the time or
waits takes a ``Clock`` (``SYSTEM`` unless given), so a test passes ``sandbox.clock.FakeClock`` and
advances it by hand instead of waiting on the wall clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds that only move forward, for durations and deadlines."""
        ...

    def call_later(self, delay: float, fn: Callable[[], None], name: str = "later") -> None:
        """Run ``fn`` once ``delay`` seconds from now, on a thread of its own; never blocks."""
        ...


class SystemClock:
    """The wall clock; ``call_later`` starts a daemon timer thread."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, fn: Callable[[], None], name: str = "later") -> None:
        timer = threading.Timer(max(delay, 0.0), fn)
        timer.name, timer.daemon = name, True
        timer.start()


SYSTEM: Clock = SystemClock()
