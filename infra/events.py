"""Sending CloudEvents (binary mode) to a Knative sink, e.g. the ``K_SINK`` a SinkBinding injects.

The measurement of an accepted sync runs in a request of its own: the event carries only the
persisted sync event's id, so a duplicate or forged delivery can at most re-measure an event that
is already accepted and still pending (claims are idempotent).

The POST is on the webhook's 202 path, so it is lean: the request is written as bytes on a
kept-alive socket and the answer read with ``httptools`` (the C HTTP/1.1 parser of Node.js,
``llhttp``, as uvicorn uses it: status, ``Retry-After``, keep-alive, any framing of the body).
Measured per event: httpx 0.65 ms of CPU (and about 40 ms of cold start: it imports its command
line, ``rich`` and ``pygments``), the standard library's ``http.client`` 0.15 ms (its header
parsing is the ``email`` package's), this 0.03 ms. A connection the sink closed while idle is
retried once on a fresh one (a duplicate event is harmless: claims are idempotent).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httptools

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


class _Connection:
    """A kept-alive connection to a sink and the parser of its answers (``httptools``, whose
    callbacks are these methods): one parser per connection, as HTTP/1.1 answers follow each
    other on it."""

    __slots__ = ("complete", "headers_complete", "keep_alive", "parser", "retry_after", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.parser = httptools.HttpResponseParser(self)
        self.complete = self.headers_complete = self.keep_alive = False
        self.retry_after: str | None = None

    def exchange(self, request: bytes, timeout: float) -> tuple[int, str | None, bool]:
        """``(status, Retry-After, reusable)`` of one request; ``_Stale`` when the connection had
        been closed before any byte of the answer."""
        self.complete = self.headers_complete = self.keep_alive = False
        self.retry_after = None
        self.sock.settimeout(timeout)
        self.sock.sendall(request)
        received = False
        while not self.complete:
            chunk = self.sock.recv(65536)
            if not chunk:
                if self.headers_complete:  # a body delimited by the end of the connection
                    break
                raise (ConnectionResetError if received else _Stale)("the sink closed the connection")
            received = True
            self.parser.feed_data(chunk)
        return self.parser.get_status_code(), self.retry_after, self.keep_alive

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self.retry_after = value.decode("latin-1").strip()

    def on_headers_complete(self) -> None:
        self.headers_complete = True

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()  # known until the parser resets for the next
        self.complete = True

    def close(self) -> None:
        self.sock.close()


class _Sink:
    """Kept-alive connections to one sink (scheme, host and port), shared by the request threads:
    a sender takes an idle connection or opens one, and puts it back after a complete answer."""

    def __init__(self, scheme: str, host: str, port: int | None) -> None:
        self.scheme, self.host = scheme, host
        self.port = port or (443 if scheme == "https" else 80)
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def post(self, request: bytes, timeout: float) -> tuple[int, str | None]:
        """``(status, Retry-After)`` of one request; ``OSError``/``HttpParserError`` when it failed."""
        with self._lock:
            idle = self._idle.pop() if self._idle else None
        if idle is not None:
            try:
                return self._exchange(idle, request, timeout)
            except _Stale:
                pass  # closed by the sink while idle: once more, on a fresh connection
        return self._exchange(self._open(timeout), request, timeout)

    def _open(self, timeout: float) -> _Connection:
        sock = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        return _Connection(sock)

    def _exchange(self, conn: _Connection, request: bytes, timeout: float) -> tuple[int, str | None]:
        try:
            status, retry_after, reusable = conn.exchange(request, timeout)
        except BaseException:
            conn.close()
            raise
        kept = False
        if reusable:
            with self._lock:
                kept = len(self._idle) < MAX_IDLE_CONNECTIONS
                if kept:
                    self._idle.append(conn)
        if not kept:
            conn.close()
        return status, retry_after

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _Stale(ConnectionResetError):
    """A kept-alive connection the sink had closed: it ended before any byte of an answer."""


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
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SinkUnavailable(f"event sink {url} is not an http(s) URL")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    body = json.dumps(data).encode()
    host = parts.netloc.rpartition("@")[2]
    if " " in target or not all(v.isascii() and v.isprintable() for v in (target, host, event_type, event_id, source)):
        raise SinkUnavailable(f"event {event_id!r}: its headers or the sink's path hold a control character or space")
    head = (
        f"POST {target} HTTP/1.1\r\nHost: {host}\r\n"
        f"ce-specversion: 1.0\r\nce-type: {event_type}\r\nce-id: {event_id}\r\nce-source: {source}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    try:
        sink = _sink(parts.scheme, parts.hostname, parts.port)
        status, retry_after = sink.post(head.encode() + body, timeout)
    except (OSError, httptools.HttpParserError, ValueError) as exc:  # ValueError: a bad port
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
