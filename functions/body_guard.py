"""The body guard in front of every function: a request's body is read before the function runs,
bounded in size and in time, with threads kept for ``/healthz`` (see ``BodyGuard``)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

import flask

from finops.errors import InvalidInput
from functions.edge import MAX_BODY_BYTES, PayloadTooLarge, read_at_most
from infra.settings import ServingSettings

log = logging.getLogger("finops.edge")


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

    Every refusal closes the connection. The function then reads the buffered body from memory.
    """

    def __init__(self, app: Any, *, limit: int, timeout: float, readers: int) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout
        self._readers = threading.BoundedSemaphore(max(1, readers))

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        try:
            return self._guarded(environ, start_response)
        finally:
            sock = environ.get("gunicorn.socket")
            if environ.get("finops.refused") and sock is not None:  # no keep-alive drain of the rest
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RD)

    def _guarded(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        declared = environ.get("CONTENT_LENGTH") or ""
        if not chunked and declared in ("", "0"):
            return self.app(environ, start_response)
        if declared.isdigit() and int(declared) > self.limit:
            return _refuse(environ, start_response, 413, f"body is larger than {self.limit} bytes")
        if not self._readers.acquire(blocking=False):
            return _refuse(environ, start_response, 503, "too many request bodies being received; retry", retry_after=1)
        try:
            body = self._read(environ)
        except PayloadTooLarge as exc:
            return _refuse(environ, start_response, 413, exc.message)
        except _BodyTimeout:
            return _refuse(environ, start_response, 408, f"body not received within {self.timeout:g} s")
        except Exception as exc:  # gunicorn's chunk parser errors, a client gone mid-body
            return _refuse(environ, start_response, 400, f"body could not be read: {type(exc).__name__}")
        finally:
            self._readers.release()
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        environ["wsgi.input_terminated"] = False
        return self.app(environ, start_response)

    def _read(self, environ: dict[str, Any]) -> bytes:
        sock: socket.socket | None = environ.get("gunicorn.socket")
        expired = threading.Event()

        def cut() -> None:  # wakes the blocked read: it sees the end of the stream
            expired.set()
            with contextlib.suppress(OSError, AttributeError):
                sock.shutdown(socket.SHUT_RD)  # type: ignore[union-attr]

        timer = threading.Timer(self.timeout, cut) if sock is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            body = read_at_most(environ["wsgi.input"], self.limit + 1)
        except Exception:
            if expired.is_set():
                raise _BodyTimeout() from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if expired.is_set():
            raise _BodyTimeout()
        if len(body) > self.limit:
            raise PayloadTooLarge(f"body is larger than {self.limit} bytes")
        declared = environ.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and len(body) < int(declared):
            raise InvalidInput("body shorter than its Content-Length")  # the client went away
        return body


class _BodyTimeout(Exception):
    """The body did not arrive in time."""


def _refuse(
    environ: dict[str, Any], start_response: Callable[..., Any], status: int, message: str, retry_after: int = 0
) -> list[bytes]:
    environ["finops.refused"] = True
    reason = {400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large", 503: "Service Unavailable"}
    payload = json.dumps({"outcome": "failed", "error": message}).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload))), ("Connection", "close")]
    if retry_after:
        headers.append(("Retry-After", str(retry_after)))
    log.warning("request refused before the function ran", extra={"fields": {"http_status": status, "error": message}})
    start_response(f"{status} {reason[status]}", headers)
    return [payload]


def guard_bodies(app: flask.Flask, settings: ServingSettings) -> None:
    """Put ``BodyGuard`` in front of ``app`` (functions-framework's Flask app)."""
    readers = settings.THREADS - min(settings.HEALTH_RESERVED_THREADS, settings.THREADS // 2)
    app.wsgi_app = BodyGuard(  # type: ignore[method-assign]
        app.wsgi_app, limit=MAX_BODY_BYTES, timeout=settings.BODY_READ_TIMEOUT_SECONDS, readers=readers
    )
