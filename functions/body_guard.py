"""The body guard in front of every function: a request's body is read before the function runs,
bounded in size and in time, with threads kept for ``/healthz`` (see ``BodyGuard``).

Every body is limited to ``MAX_BODY_BYTES`` (64 KiB), except on the few routes ``LARGE_BODIES``
lists for their function (``FUNCTION_TARGET``): cost_api's CI push of a cloud estimate takes up
to 10 MiB. Such a route gets its own limit, a longer read time and its own count of bodies read
at once (memory, not threads, is what a 10 MiB JSON costs), and still takes a reader thread like
any body; every other path of that function, and every other function, keeps 64 KiB.
"""

from __future__ import annotations

import contextlib
import heapq
import importlib
import io
import itertools
import json
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import flask

from finops.errors import InvalidInput
from functions.edge import MAX_BODY_BYTES, PayloadTooLarge, read_at_most
from infra.settings import ServingSettings

log = logging.getLogger("finops.edge")


@dataclass(frozen=True)
class LargeBody:
    """A route allowed a body above ``MAX_BODY_BYTES``."""

    method: str
    path: re.Pattern[str]  # matched whole against PATH_INFO
    limit: int  # bytes
    at_once: int = 2  # such bodies read (and then parsed) at once per replica; beyond, 503 at once
    timeout: float = 60.0  # seconds to receive it (at least; BODY_READ_TIMEOUT_SECONDS if longer)
    # "module:function" asked before any byte is read: it takes the WSGI environ and answers None
    # (read the body) or (status, message) to refuse; so a stranger cannot make a replica read
    # a large body. Resolved on first use (the function's module is imported by then).
    precheck: str = ""

    def refusal(self, environ: dict[str, Any]) -> tuple[int, str] | None:
        if not self.precheck:
            return None
        module, _, name = self.precheck.partition(":")
        check: Callable[[dict[str, Any]], tuple[int, str] | None] = getattr(importlib.import_module(module), name)
        return check(environ)


CLOUD_ESTIMATE_BODY = LargeBody(
    "POST",
    re.compile(r"/api/v1/apps/[^/]+/[^/]+/cloud-estimate/?"),
    10 * 1024 * 1024,
    precheck="functions.cost_api.estimates:precheck",
)
LARGE_BODIES: dict[str, tuple[LargeBody, ...]] = {"cost_api": (CLOUD_ESTIMATE_BODY,)}


class BodyGuard:
    """WSGI middleware in front of every function: a request's body is read *before* the function
    runs, bounded in size and in time, so a slow or lying client cannot hold a thread.

    - A declared ``Content-Length`` above ``limit`` is answered 413 at once, nothing read (the
      framework would otherwise read the whole declared body before answering).
    - At most ``readers`` bodies are read at once; beyond that, 503 with ``Retry-After`` at once.
      The threads left over (``THREADS`` minus ``readers``) always serve ``/healthz`` and bodiless
      requests, however many uploads stall.
    - A body not complete within ``timeout`` seconds of the headers is cut (the socket's read side
      is shut down, which wakes a blocked read) and answered 408; a client gone mid-body, or a
      malformed chunked body, is answered 400.

    Every refusal closes the connection once its answer is sent (``_Closing``: gunicorn drops the
    answer's own ``Connection: close``). The function then reads the buffered body from memory.
    """

    def __init__(self, app: Any, *, limit: int, timeout: float, readers: int, large: Sequence[LargeBody] = ()) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout
        self._readers = threading.BoundedSemaphore(max(1, readers))
        self._large = [(route, threading.BoundedSemaphore(max(1, route.at_once))) for route in large]

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        try:
            answer = self._guarded(environ, start_response)
        finally:
            sock = environ.get("gunicorn.socket")
            if environ.get("finops.refused") and sock is not None:  # no keep-alive drain of the rest
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RD)
        if environ.get("finops.refused") and sock is not None:
            return _Closing(answer, sock)
        return answer

    def _guarded(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        declared = environ.get("CONTENT_LENGTH") or ""
        if not chunked and declared in ("", "0"):
            return self.app(environ, start_response)
        large = next(
            (
                (route, slots)
                for route, slots in self._large
                if environ.get("REQUEST_METHOD") == route.method and route.path.fullmatch(environ.get("PATH_INFO", ""))
            ),
            None,
        )
        refused = large[0].refusal(environ) if large else None
        if refused is not None:
            return _refuse(environ, start_response, *refused)
        limit, timeout = (large[0].limit, max(self.timeout, large[0].timeout)) if large else (self.limit, self.timeout)
        if declared.isdigit() and int(declared) > limit:
            return _refuse(environ, start_response, 413, f"body is larger than {limit} bytes")
        if large is not None and not large[1].acquire(blocking=False):
            return _refuse(environ, start_response, 503, "too many large bodies being received; retry", retry_after=5)
        try:
            if not self._readers.acquire(blocking=False):
                return _refuse(
                    environ, start_response, 503, "too many request bodies being received; retry", retry_after=1
                )
            try:
                body = self._read(environ, limit, timeout)
            except PayloadTooLarge as exc:
                return _refuse(environ, start_response, 413, exc.message)
            except _BodyTimeout:
                return _refuse(environ, start_response, 408, f"body not received within {timeout:g} s")
            except Exception as exc:  # gunicorn's chunk parser errors, a client gone mid-body
                return _refuse(environ, start_response, 400, f"body could not be read: {type(exc).__name__}")
            finally:
                self._readers.release()
        finally:
            if large is not None:
                large[1].release()
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        environ["wsgi.input_terminated"] = False
        return self.app(environ, start_response)

    def _read(self, environ: dict[str, Any], limit: int, timeout: float) -> bytes:
        sock: socket.socket | None = environ.get("gunicorn.socket")
        expired = threading.Event()

        def cut() -> None:  # wakes the blocked read: it sees the end of the stream
            expired.set()
            with contextlib.suppress(OSError, AttributeError):
                sock.shutdown(socket.SHUT_RD)  # type: ignore[union-attr]

        deadline = _deadlines.add(time.monotonic() + timeout, cut) if sock is not None else None
        try:
            body = read_at_most(environ["wsgi.input"], limit + 1)
        except Exception:
            if expired.is_set():
                raise _BodyTimeout() from None
            raise
        finally:
            if deadline is not None:
                _deadlines.cancel(deadline)
        if expired.is_set():
            raise _BodyTimeout()
        if len(body) > limit:
            raise PayloadTooLarge(f"body is larger than {limit} bytes")
        declared = environ.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and len(body) < int(declared):
            raise InvalidInput("body shorter than its Content-Length")  # the client went away
        return body


class _Closing:
    """A refusal's answer, after which the connection is closed: once gunicorn has sent it, WSGI's
    ``close`` shuts the socket down. gunicorn drops an application's ``Connection: close`` (a
    hop-by-hop header) and would keep the connection alive, its read side already shut: the
    client's next request on it (a keep-alive client's next webhook) would find no answer, or a
    0-byte body and a 400. Closed, the client opens a new connection."""

    def __init__(self, body: list[bytes], sock: socket.socket) -> None:
        self.body, self.sock = body, sock

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


class _BodyTimeout(Exception):
    """The body did not arrive in time."""


class _Deadlines:
    """One thread per process calls each registered ``cut`` when its deadline passes, unless it
    was cancelled first: a ``threading.Timer`` per request would start a thread per request
    (about 0.12 ms of CPU on the webhook's 202 path). Cancelled entries are dropped lazily."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, list[Callable[[], None] | None]]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._pid = 0  # the process whose thread watches (a forked worker starts its own)

    def add(self, deadline: float, cut: Callable[[], None]) -> list[Callable[[], None] | None]:
        entry: list[Callable[[], None] | None] = [cut]
        with self._wake:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._heap.clear()
                threading.Thread(target=self._watch, name="body-deadlines", daemon=True).start()
            heapq.heappush(self._heap, (deadline, next(self._order), entry))
            if self._heap[0][2] is entry:
                self._wake.notify()
        return entry

    @staticmethod
    def cancel(entry: list[Callable[[], None] | None]) -> None:
        entry[0] = None

    def _watch(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][2][0] is None:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._wake.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                cut = heapq.heappop(self._heap)[2][0]
            if cut is not None:
                try:
                    cut()
                except Exception:  # the watcher must outlive any one cut
                    log.exception("cutting an overdue request body failed")


_deadlines = _Deadlines()


def _refuse(
    environ: dict[str, Any], start_response: Callable[..., Any], status: int, message: str, retry_after: int = 0
) -> list[bytes]:
    environ["finops.refused"] = True
    reason = {
        400: "Bad Request",
        401: "Unauthorized",
        404: "Not Found",
        408: "Request Timeout",
        413: "Content Too Large",
        503: "Service Unavailable",
    }
    payload = json.dumps({"outcome": "failed", "error": message}).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload))), ("Connection", "close")]
    if retry_after:
        headers.append(("Retry-After", str(retry_after)))
    log.warning("request refused before the function ran", extra={"fields": {"http_status": status, "error": message}})
    start_response(f"{status} {reason[status]}", headers)
    return [payload]


def guard_bodies(app: flask.Flask, settings: ServingSettings, target: str | None = None) -> None:
    """Put ``BodyGuard`` in front of ``app`` (functions-framework's Flask app serving ``target``)."""
    readers = settings.THREADS - min(settings.HEALTH_RESERVED_THREADS, settings.THREADS // 2)
    app.wsgi_app = BodyGuard(  # type: ignore[method-assign]
        app.wsgi_app,
        limit=MAX_BODY_BYTES,
        timeout=settings.BODY_READ_TIMEOUT_SECONDS,
        readers=readers,
        large=LARGE_BODIES.get(target or "", ()),
    )
