"""Sending CloudEvents (binary mode) to a Knative sink, e.g. the ``K_SINK`` a SinkBinding injects.

The measurement of an accepted sync runs in a request of its own: the event carries only the
persisted sync event's id, so a duplicate or forged delivery can at most re-measure an event that
is already accepted and still pending (claims are idempotent).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import httpx

from finops.errors import TemporaryError

log = logging.getLogger(__name__)

SYNC_ACCEPTED = "dev.finops.sync.accepted"


MAX_DELIVERIES = 6  # attempts of a detached delivery the sink answers "not yet" (429/503)
MAX_RETRY_AFTER = 300.0  # the longest Retry-After a detached delivery honours, in seconds


class SinkUnavailable(TemporaryError):
    """The event sink did not accept the event."""


class SinkBusy(SinkUnavailable):
    """The sink answered 429 or 503: deliver again after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@functools.cache
def _client() -> httpx.Client:
    """One keep-alive client per process: building one costs ~20 ms of CPU, per event."""
    return httpx.Client(timeout=httpx.Timeout(5.0, read=600.0))


os.register_at_fork(after_in_child=_client.cache_clear)


def _post(url: str, event_type: str, event_id: str, source: str, data: dict[str, Any], timeout: float) -> None:
    headers = {
        "ce-specversion": "1.0",
        "ce-type": event_type,
        "ce-id": event_id,
        "ce-source": source,
        "content-type": "application/json",
    }
    try:
        response = _client().post(url, json=data, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise SinkUnavailable(f"event sink {url} unreachable: {type(exc).__name__}: {exc}") from exc
    if response.status_code in (429, 503):
        after = _seconds(response.headers.get("Retry-After"))
        raise SinkBusy(f"event sink {url} answered {response.status_code} (retry after {after:g} s)", after)
    if response.status_code >= 300:
        raise SinkUnavailable(f"event sink {url} answered {response.status_code}")


def _seconds(retry_after: str | None, default: float = 5.0) -> float:
    """A ``Retry-After`` in seconds (the HTTP-date form is not used by our functions)."""
    try:
        return min(max(float(retry_after or default), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        return default


def send(url: str, event_type: str, event_id: str, source: str, data: dict[str, Any], *, timeout: float = 5.0) -> None:
    """Deliver one event and wait for the sink to accept it (a broker answers at once)."""
    _post(url, event_type, event_id, source, data, timeout)


def send_detached(
    url: str,
    event_type: str,
    event_id: str,
    source: str,
    data: dict[str, Any],
    *,
    delay: float = 0.0,
) -> None:
    """Deliver one event to a sink that handles it inline (the local stack's own URL, or the
    on-sync Service without a Broker) without waiting for its answer, ``delay`` seconds from now.
    A sink that answers 429 or 503 gets it again after its ``Retry-After``, up to
    ``MAX_DELIVERIES`` attempts, as a Broker would redeliver it: the wait is a timer, never a
    sleeping request thread. The receiving request holds its own work; if this process dies
    first, the event stays pending and the hourly run re-drives it."""

    def deliver(attempt: int) -> None:
        try:
            _post(url, event_type, event_id, source, data, timeout=600.0)
        except SinkBusy as exc:
            if attempt < MAX_DELIVERIES:
                _schedule(exc.retry_after, deliver, attempt + 1, event_id)
                return
            _not_delivered(exc)
        except SinkUnavailable as exc:
            _not_delivered(exc)

    _schedule(delay, deliver, 1, event_id)


def _schedule(delay: float, deliver: Callable[[int], None], attempt: int, event_id: str) -> None:
    timer = threading.Timer(max(delay, 0.0), deliver, args=(attempt,))
    timer.name, timer.daemon = f"event-{event_id}-{attempt}", True
    timer.start()


def _not_delivered(exc: SinkUnavailable) -> None:
    log.warning("event not delivered; the hourly run will re-drive it", extra={"fields": {"error": exc.message}})
