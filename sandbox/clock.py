"""A clock the tests move by hand (``infra.clock.Clock``): ``advance`` runs, in order and on the
caller's thread, whatever ``call_later`` scheduled up to the new time."""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class FakeClock:
    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)) -> None:
        self._now = start
        self._elapsed = 0.0
        self._due: list[tuple[float, int, str, Callable[[], None]]] = []
        self._order = itertools.count()
        self._lock = threading.Lock()
        self.scheduled: list[tuple[str, float]] = []
        """Every ``call_later`` as (name, delay), for tests that check what was scheduled."""

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._elapsed

    def call_later(self, delay: float, fn: Callable[[], None], name: str = "later") -> None:
        with self._lock:
            self.scheduled.append((name, delay))
            heapq.heappush(self._due, (self._elapsed + max(delay, 0.0), next(self._order), name, fn))

    @property
    def pending(self) -> int:
        return len(self._due)

    def advance(self, seconds: float) -> None:
        """Move the time on by ``seconds``, running each call that falls due (and any it schedules
        within the same span) at its own time."""
        until = self._elapsed + seconds
        while True:
            with self._lock:
                if not self._due or self._due[0][0] > until:
                    break
                at, _, _, fn = heapq.heappop(self._due)
            self._move_to(at)
            fn()
        self._move_to(until)

    def _move_to(self, elapsed: float) -> None:
        self._now += timedelta(seconds=elapsed - self._elapsed)
        self._elapsed = elapsed
