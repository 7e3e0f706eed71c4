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
from typing import Any

import httpx

from finops.errors import TemporaryError

log = logging.getLogger(__name__)

SYNC_ACCEPTED = "dev.finops.sync.accepted"


class SinkUnavailable(TemporaryError):
    """The event sink did not accept the event."""


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
    if response.status_code >= 300:
        raise SinkUnavailable(f"event sink {url} answered {response.status_code}")


def send(url: str, event_type: str, event_id: str, source: str, data: dict[str, Any], *, timeout: float = 5.0) -> None:
    """Deliver one event and wait for the sink to accept it (a broker answers at once)."""
    _post(url, event_type, event_id, source, data, timeout)


def send_detached(url: str, event_type: str, event_id: str, source: str, data: dict[str, Any]) -> None:
    """Deliver one event to a sink that handles it inline (the local stack's own URL) without
    waiting for its answer. The receiving request holds its own work; if this process dies
    first, the event stays pending and the hourly run re-drives it."""

    def deliver() -> None:
        try:
            _post(url, event_type, event_id, source, data, timeout=600.0)
        except SinkUnavailable as exc:
            log.warning(
                "event not delivered; the hourly run will re-drive it", extra={"fields": {"error": exc.message}}
            )

    threading.Thread(target=deliver, name=f"event-{event_id}", daemon=True).start()
