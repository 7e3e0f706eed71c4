"""Sending CloudEvents (binary mode) to a Knative sink, e.g. the ``K_SINK`` a SinkBinding injects.

The measurement of an accepted sync runs in a request of its own: the event carries only the
persisted sync event's id, so a duplicate or forged delivery can at most re-measure an event that
is already accepted and still pending (claims are idempotent).

Binary mode is four ``ce-*`` headers and the JSON data as the body, written here: the
``cloudevents`` SDK would be a dependency for four headers. An error names the sink without its
credentials or query (where an event token travels).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from finops.errors import TemporaryError
from infra.clock import SYSTEM, Clock

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


_client: httpx.Client | None = None
_client_lock = threading.Lock()


def _http() -> httpx.Client:
    """The process's client, built on first use."""
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(
                timeout=httpx.Timeout(5.0),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=MAX_IDLE_CONNECTIONS),
                follow_redirects=False,
                trust_env=False,
            )
        return _client


def warm() -> None:
    """Build the process's client now (its transport and TLS context cost tens of milliseconds),
    so that the first event does not wait for it."""
    _http()


def _forget_client() -> None:
    """A forked worker opens its own connections (a socket shared with the parent would mix answers)."""
    global _client
    _client = None


def close_connections() -> None:
    """Close every kept-alive connection (the next event opens a new one)."""
    global _client
    with _client_lock:
        client, _client = _client, None
    if client is not None:
        client.close()


os.register_at_fork(after_in_child=_forget_client)

# A kept-alive connection the sink closed while idle fails the next request before any answer;
# sent once more (a duplicate event is harmless: claims are idempotent).
_DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


def _shown(url: str) -> str:
    """``url`` without its credentials, query or fragment, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return urlunsplit((parts.scheme, f"{host}{port}", parts.path, "", ""))


def send(url: str, event_type: str, event_id: str, source: str, data: dict[str, Any], *, timeout: float = 5.0) -> None:
    """Deliver one event and wait for the sink to accept it (a broker answers at once)."""
    shown = _shown(url)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SinkUnavailable(f"event sink {shown} is not an http(s) URL")
    target = parts.path + parts.query
    if " " in target or not all(v.isascii() and v.isprintable() for v in (target, event_type, event_id, source)):
        raise SinkUnavailable(f"event {event_id!r}: its headers or the sink's path hold a control character or space")
    headers = {
        "ce-specversion": "1.0",
        "ce-type": event_type,
        "ce-id": event_id,
        "ce-source": source,
        "content-type": "application/json",
    }
    body = json.dumps(data).encode()
    try:
        try:
            answer = _http().post(url, content=body, headers=headers, timeout=timeout)
        except _DROPPED:
            answer = _http().post(url, content=body, headers=headers, timeout=timeout)
    except (httpx.HTTPError, ValueError) as exc:  # ValueError: a bad port
        raise SinkUnavailable(f"event sink {shown} unreachable: {_cause(exc)}") from exc
    status = answer.status_code
    if status in (429, 503):
        after = _seconds(answer.headers.get("retry-after"))
        raise SinkBusy(f"event sink {shown} answered {status} (retry after {after:g} s)", after)
    if status >= 300:
        raise SinkUnavailable(f"event sink {shown} answered {status}")


def _cause(exc: BaseException) -> str:
    """``ConnectionRefusedError: ...``: the OS error under httpx's, else httpx's own."""
    root: BaseException = exc
    while root.__cause__ is not None or root.__context__ is not None:
        root = root.__cause__ or root.__context__  # type: ignore[assignment]
    if isinstance(root, OSError):
        return f"{type(root).__name__}: {root}"
    return f"{type(exc).__name__}: {exc}"


def _seconds(retry_after: str | None, default: float = 5.0) -> float:
    """A ``Retry-After`` in seconds (the HTTP-date form is not used by our functions)."""
    try:
        return min(max(float(retry_after or default), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        return default


def send_detached(
    url: str,
    event_type: str,
    event_id: str,
    source: str,
    data: dict[str, Any],
    *,
    delay: float = 0.0,
    clock: Clock = SYSTEM,
) -> None:
    """Deliver one event to a sink that handles it inline (the local stack's own URL, or the
    on-sync Service without a Broker) without waiting for its answer, ``delay`` seconds from now.
    A sink that answers 429 or 503 gets it again after its ``Retry-After``, up to
    ``MAX_DELIVERIES`` attempts, as a Broker would redeliver it: the wait is a timer, never a
    sleeping request thread (``clock.call_later``). The receiving request holds its own work; if this process dies
    first, the event stays pending and the hourly run re-drives it."""

    def deliver(attempt: int) -> None:
        try:
            send(url, event_type, event_id, source, data, timeout=600.0)
        except SinkBusy as exc:
            if attempt < MAX_DELIVERIES:
                later(exc.retry_after, attempt + 1)
                return
            _not_delivered(exc)
        except SinkUnavailable as exc:
            _not_delivered(exc)

    def later(delay: float, attempt: int) -> None:
        clock.call_later(delay, lambda: deliver(attempt), name=f"event-{event_id}-{attempt}")

    later(delay, 1)


def _not_delivered(exc: SinkUnavailable) -> None:
    log.warning("event not delivered; the hourly run will re-drive it", extra={"fields": {"error": exc.message}})
