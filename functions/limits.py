"""Per-replica limits of the functions that receive events, and how a replica's worker processes
share them.

A Knative replica serves with ``WORKERS`` gunicorn processes (``on_sync`` runs two: the GIL lets
one process use one core). The limits an operator sets are per replica (``MAX_IN_FLIGHT``,
``EVENTS_PER_SECOND``, ``EVENTS_BURST``): each worker holds an equal share of them (at least one),
since gunicorn hands connections to whichever worker accepts first and the processes share no
memory.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar, cast

from finops.errors import TemporaryError
from infra.settings import ServingSettings, load

P = ParamSpec("P")
T = TypeVar("T")


def one_per_process(build: Callable[P, T]) -> Callable[P, T]:
    """``functools.cache`` under a lock, for a limiter: the first requests of a fresh worker ask
    for it from several threads at once, and ``functools.cache`` alone lets each build its own,
    so a burst right after a cold start would hold the limit once per thread."""
    cached = cast(Callable[P, T], functools.cache(build))  # its arguments are hashable settings
    lock = threading.Lock()

    @functools.wraps(build)
    def shared(*args: P.args, **kwargs: P.kwargs) -> T:
        with lock:
            return cached(*args, **kwargs)

    return shared


@functools.cache
def workers() -> int:
    """gunicorn's worker processes in this replica (``WORKERS``, as functions-framework reads it)."""
    return load(ServingSettings).WORKERS


def worker_count_share(per_replica: int) -> int:
    """This worker's share of a per-replica count, rounded up (at least 1)."""
    return max(1, math.ceil(per_replica / workers()))


class TooManyEvents(TemporaryError):
    """Event deliveries above this worker's rate; the sender retries after ``retry_after_seconds``."""

    http_status = 429

    def __init__(self, message: str, retry_after_seconds: float) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class RateLimit:
    """A token bucket: ``burst`` deliveries at once, refilled at ``per_second``."""

    def __init__(self, per_second: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_second, self.burst, self._clock = per_second, burst, clock
        self._tokens, self._at = float(burst), clock()
        self._lock = threading.Lock()

    @classmethod
    def per_replica(cls, per_second: float, burst: int) -> RateLimit:
        """This worker's bucket of a replica's ``per_second`` and ``burst``."""
        return cls(per_second / workers(), worker_count_share(burst))

    def take(self) -> None:
        """Take one delivery's token, or raise ``TooManyEvents`` saying when one is free."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.per_second)
            self._at = now
            if self._tokens < 1:
                wait = (1 - self._tokens) / self.per_second
                raise TooManyEvents(
                    f"more than {self.per_second:g} event deliveries a second on this worker "
                    f"(EVENTS_PER_SECOND over WORKERS={workers()})",
                    wait,
                )
            self._tokens -= 1


class TooManyInFlight(TemporaryError):
    """Too many measurements in flight on this worker; retry later."""

    http_status = 429


class InFlight:
    """A worker's count of measurements, checked before accepting more work."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._count = 0
        self._lock = threading.Lock()

    def check(self) -> None:
        """``TooManyInFlight`` when the worker is full (a webhook is refused before it is stored)."""
        if self._count >= self.limit:
            raise TooManyInFlight(f"{self.limit} measurements already in flight on this worker")

    def __enter__(self) -> None:
        with self._lock:
            if self._count >= self.limit:
                raise TooManyInFlight(f"{self._count} measurements in flight on this worker (limit {self.limit})")
            self._count += 1

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self._count -= 1


@one_per_process
def in_flight(per_replica: int) -> InFlight:
    """This worker's count of measurements: its share of the replica's ``MAX_IN_FLIGHT``."""
    return InFlight(worker_count_share(per_replica))


@one_per_process
def event_rate(per_second: float, burst: int) -> RateLimit:
    """This worker's share of the replica's budget of event deliveries."""
    return RateLimit.per_replica(per_second, burst)
