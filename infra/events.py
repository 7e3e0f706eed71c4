"""Sending CloudEvents (binary mode) to a Knative sink, e.g. the ``K_SINK`` a SinkBinding injects.

The measurement of an accepted sync runs in a request of its own: the event carries only the
persisted sync event's id, so a duplicate or forged delivery can at most re-measure an event that
is already accepted and still pending (claims are idempotent).

The POST goes over the standard library's ``http.client`` on kept-alive connections, not httpx:
it is on the webhook's 202 path, where httpx cost about 0.65 ms of CPU per event (0.18 ms here)
and, imported, about 40 ms of cold start (``httpx`` imports its command line, ``rich`` and
``pygments``). A connection the sink closed while idle is retried once on a fresh one (a
duplicate event is harmless: claims are idempotent).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from finops.errors import TemporaryError

log = logging.getLogger(__name__)

SYNC_ACCEPTED = "dev.finops.sync.accepted"


MAX_DELIVERIES = 6  # attempts of a detached delivery the sink answers "not yet" (429/503)
MAX_RETRY_AFTER = 300.0  # the longest Retry-After a detached delivery honours, in seconds
MAX_IDLE_CONNECTIONS = 32  # kept-alive connections per sink; more concurrent senders open and close their own


class SinkUnavailable(TemporaryError):
    """The event sink did not accept the event."""


class SinkBusy(SinkUnavailable):
    """The sink answered 429 or 503: deliver again after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Sink:
    """Kept-alive connections to one sink (scheme, host and port), shared by the request threads:
    a sender takes an idle connection or opens one, and puts it back after a complete answer."""

    def __init__(self, scheme: str, host: str, port: int | None) -> None:
        self.scheme, self.host, self.port = scheme, host, port
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def post(self, target: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, str | None]:
        """``(status, Retry-After)`` of one POST; ``OSError``/``HTTPException`` when it failed."""
        with self._lock:
            idle = self._idle.pop() if self._idle else None
        if idle is not None:
            try:
                return self._exchange(idle, target, body, headers, timeout)
            except _STALE:
                pass  # closed by the sink while idle: once more, on a fresh connection
        return self._exchange(self._open(timeout), target, body, headers, timeout)

    def _open(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _exchange(
        self, conn: http.client.HTTPConnection, target: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> tuple[int, str | None]:
        try:
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            conn.timeout = timeout
            conn.request("POST", target, body=body, headers=headers)
            response = conn.getresponse()
            response.read()  # the whole answer, so the connection can carry the next event
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            with self._lock:
                kept = len(self._idle) < MAX_IDLE_CONNECTIONS
                if kept:
                    self._idle.append(conn)
            if not kept:
                conn.close()
        return response.status, response.getheader("Retry-After")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


_STALE = (http.client.RemoteDisconnected, http.client.BadStatusLine, ConnectionResetError, BrokenPipeError)
"""How a kept-alive connection the sink has closed fails (before any answer)."""


_sinks: dict[tuple[str, str, int | None], _Sink] = {}
_sinks_lock = threading.Lock()


def _sink(scheme: str, host: str, port: int | None) -> _Sink:
    key = (scheme, host, port)
    sink = _sinks.get(key)
    if sink is None:
        with _sinks_lock:
            sink = _sinks.setdefault(key, _Sink(scheme, host, port))
    return sink


def _forget_sinks() -> None:
    """A forked worker opens its own connections (a socket shared with the parent would mix answers)."""
    _sinks.clear()


def close_connections() -> None:
    """Close every kept-alive connection to every sink (the next event opens a new one)."""
    with _sinks_lock:
        sinks = list(_sinks.values())
    for sink in sinks:
        sink.close()


os.register_at_fork(after_in_child=_forget_sinks)


def _post(url: str, event_type: str, event_id: str, source: str, data: dict[str, Any], timeout: float) -> None:
    headers = {
        "ce-specversion": "1.0",
        "ce-type": event_type,
        "ce-id": event_id,
        "ce-source": source,
        "content-type": "application/json",
    }
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SinkUnavailable(f"event sink {url} is not an http(s) URL")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    body = json.dumps(data).encode()
    try:
        sink = _sink(parts.scheme, parts.hostname, parts.port)
        status, retry_after = sink.post(target, body, headers, timeout)
    except (OSError, http.client.HTTPException, ValueError) as exc:  # ValueError: a bad port
        raise SinkUnavailable(f"event sink {url} unreachable: {type(exc).__name__}: {exc}") from exc
    if status in (429, 503):
        after = _seconds(retry_after)
        raise SinkBusy(f"event sink {url} answered {status} (retry after {after:g} s)", after)
    if status >= 300:
        raise SinkUnavailable(f"event sink {url} answered {status}")


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
