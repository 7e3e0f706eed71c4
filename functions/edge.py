"""What every function's edge shares: authentication, request parsing, and mapping a run's
outcome to an HTTP response. The process's database and clients: ``infra.clients``.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import io
import itertools
import json
import logging
import math
import re
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlencode

import flask
import functions_framework
from pydantic import BaseModel, ValidationError

from finops.errors import FinOpsError, IncompleteData, InvalidInput, NotFound, TemporaryError, Unauthorized
from functions.limits import one_per_process
from infra import logs
from infra.settings import CommonSettings, ServingSettings, load
from usecases.runs import Run, recorded_run

log = logging.getLogger("finops.edge")

MAX_BODY_BYTES = 64 * 1024
S = TypeVar("S", bound=CommonSettings)
M = TypeVar("M", bound=BaseModel)


def settings_for(function: str, settings_class: type[S]) -> Callable[[], S]:
    """A cached loader: reads and validates the environment once, configures logging."""

    @functools.cache
    def loader() -> S:
        settings = load(settings_class)
        logs.configure(function, settings.LOG_LEVEL)
        return settings

    return loader


def require_bearer(request: flask.Request, token: str) -> None:
    """Constant-time check of ``Authorization: Bearer <token>`` (no token: always refused)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise Unauthorized("missing or wrong bearer token in the Authorization header")


def require_event_token(request: flask.Request, token: str | None) -> None:
    """An event delivery's credential (``EVENT_TOKEN``): the ``token`` query parameter of the URL
    it was delivered to, or ``Authorization: Bearer``; compared in constant time. Without
    ``EVENT_TOKEN`` every delivery is accepted (rate-limited only)."""
    if not token:
        return
    given = request.args.get("token")
    if given is not None and hmac.compare_digest(given.encode(), token.encode()):
        return
    try:
        require_bearer(request, token)
    except Unauthorized:
        raise Unauthorized("missing or wrong event token (the token query parameter of the delivery URL)") from None


def with_event_token(url: str, token: str | None) -> str:
    """``url`` carrying ``EVENT_TOKEN`` as its ``token`` query parameter (for our own deliveries)."""
    if not token:
        return url
    return f"{url}{'&' if '?' in url else '?'}{urlencode({'token': token})}"


MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # linear: no nested repeats
_DEPTH_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _DEPTH_STEP)


def json_depth(raw: bytes) -> int:
    """How deep ``raw``'s brackets nest outside strings. Hand-made because ``json`` has no depth
    limit below the recursion limit (about 1,000 levels, then ``RecursionError``), and ours is 64."""
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(_DEPTH_STEP[b] for b in brackets), default=0)


class PayloadTooLarge(InvalidInput):
    """The request body is too large."""

    http_status = 413


class BodyTimeout(InvalidInput):
    """The request body did not arrive in time."""

    http_status = 408


class BodiesBusy(TemporaryError):
    """Every thread but the reserved ones is receiving a body."""

    retry_after_seconds = 1


@one_per_process
def _body_readers() -> tuple[threading.BoundedSemaphore, float]:
    """This process's body readers (``THREADS`` minus ``HEALTH_RESERVED_THREADS``, at most half)
    and ``BODY_READ_TIMEOUT_SECONDS``."""
    s = load(ServingSettings)
    readers = s.THREADS - min(s.HEALTH_RESERVED_THREADS, s.THREADS // 2)
    return threading.BoundedSemaphore(max(1, readers)), s.BODY_READ_TIMEOUT_SECONDS


def read_body(request: flask.Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body: 413 above ``limit`` bytes, declared or chunked (werkzeug's
    ``max_content_length`` stops the read); 400 when it cannot be read (malformed chunked
    encoding, a client gone mid-body); 408 when not complete ``BODY_READ_TIMEOUT_SECONDS`` after
    the headers (60 s at least above ``MAX_BODY_BYTES``), and 503 at once while all the other
    threads receive one.

    The deadline and the reserved threads are hand-made because gunicorn has neither: its
    threads read a body for as long as the client takes, and ``/healthz`` must find a free one."""
    chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
    if not chunked and not request.content_length:
        return b""
    try:
        return _receive(request, limit)
    except FinOpsError:
        request.environ["finops.body_refused"] = True  # see _leave_the_rest_unread
        raise


def _receive(request: flask.Request, limit: int) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLarge(f"body is larger than {limit} bytes")
    # werkzeug reads a chunked body up to its maximum and stops there without a 413: one byte
    # more is allowed, and counted below.
    request.max_content_length = limit + 1
    readers, timeout = _body_readers()
    if not readers.acquire(blocking=False):
        raise BodiesBusy("too many request bodies being received; retry")
    late: list[bool] = []
    sock: socket.socket | None = request.environ.get("gunicorn.socket")

    def cut() -> None:  # wakes the blocked read: it sees the end of the stream
        late.append(True)
        with contextlib.suppress(OSError, AttributeError):  # AttributeError: no socket
            sock.shutdown(socket.SHUT_RD)  # type: ignore[union-attr]

    deadline = threading.Timer(max(timeout, 60.0) if limit > MAX_BODY_BYTES else timeout, cut)
    try:
        if sock is not None:
            deadline.start()
        raw = request.get_data(cache=False)
    except Exception as exc:  # gunicorn's chunk parser errors, werkzeug's ClientDisconnected
        if not late:
            raise InvalidInput(f"body could not be read: {type(exc).__name__}") from exc
        raw = b""  # cut by the deadline
    finally:
        deadline.cancel()
        readers.release()
    if late:
        raise BodyTimeout(f"body not received within {deadline.interval:g} s")
    if len(raw) > limit:
        raise PayloadTooLarge(f"body is larger than {limit} bytes")
    if request.content_length is not None and len(raw) < request.content_length:
        raise InvalidInput("body could not be read: ClientDisconnected")  # gunicorn returns it short
    return raw


def read_json(request: flask.Request, limit: int = MAX_BODY_BYTES, empty: str | None = None) -> Any:
    """The JSON body (``read_body``): 400 when it is not JSON or nests deeper than
    ``MAX_JSON_DEPTH``. An empty body is ``{}``, or a 400 saying ``empty`` when given."""
    raw = read_body(request, limit)
    if not raw.strip():
        if empty is not None:
            raise InvalidInput(f"body: empty; {empty}")
        return {}
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise InvalidInput(f"body nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(f"body is not valid JSON: {str(exc)[:200]}") from exc


def validation_message(exc: ValidationError) -> str:
    """``field.path: message`` of a pydantic validation error's first problem."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "body"
    return f"{where}: {error['msg']}"


def parse_body(request: flask.Request, model: type[M]) -> M:
    """The JSON body (see ``read_json``) as ``model``; 400 names the bad field."""
    data = read_json(request)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc)) from exc


def respond(status: int, body: dict[str, Any], retry_after: int | None = None) -> flask.Response:
    """A JSON answer; its ``error`` and ``warnings`` (dependency messages) are redacted. A 429 or
    503 says when to retry (``retry_after`` seconds; else 5 for a 429, 60 for a 503)."""
    body = {k: logs.redact_value(v) if k in ("error", "warnings") else v for k, v in body.items()}
    response = flask.Response(json.dumps(body, default=str), status=status, mimetype="application/json")
    if status in (429, 503):
        response.headers["Retry-After"] = str(retry_after or (60 if status == 503 else 5))
    return response


# "OpenCost at http://opencost:9003 failed ...": the dependency is named, its address is not.
_AT_ADDRESS = re.compile(r"\s+at\s+[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_ADDRESS = re.compile(r"\b(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*)://[^\s/\"'<>]+")


def public_message(message: str) -> str:
    """An error as an HTTP body may show it: one line, no credentials, no host, IP or port."""
    return _ADDRESS.sub(r"\g<scheme>://…", _AT_ADDRESS.sub("", logs.one_line(message)))


def error_response(exc: Exception, run_id: str | None = None) -> flask.Response:
    if isinstance(exc, FinOpsError):
        status, message = exc.http_status, public_message(exc.message)
    else:
        status, message = 500, "internal error; see the function's log"
    body: dict[str, Any] = {"outcome": "failed", "error": message}
    if run_id:
        body["run_id"] = run_id
    if isinstance(exc, TemporaryError):
        body["retry"] = True
    if isinstance(exc, IncompleteData) and exc.coverage is not None:  # which hours, as a report shows
        body["coverage"] = exc.coverage
    retry_after = getattr(exc, "retry_after_seconds", None)
    seconds = math.ceil(retry_after) if isinstance(retry_after, int | float) and retry_after > 0 else None
    return respond(status, body, retry_after=seconds)  # every error naming a retry is a 429 or 503


Handler = Callable[[flask.Request, S, Run], flask.Response]


def edge(
    function: str,
    settings: Callable[[], S],
    *,
    recorded: bool = True,
    body_limit: Callable[[flask.Request], int] | None = None,
) -> Callable[[Handler[S]], Callable[[flask.Request], flask.Response]]:
    """A function's HTTP entry point (registered with functions-framework), which does around its
    own logic (``handler(request, settings, run)``): answer ``/healthz`` without touching
    anything, load the settings, run the handler as one recorded run (``recorded_run``;
    ``recorded=False`` for reads such as cost_api, which only map errors), map any error to its
    HTTP answer (``Retry-After`` when the error names one), and then call what the handler left
    in ``run.afterwards`` (a CostJob's execution record). A declared body above
    ``body_limit(request)`` (``MAX_BODY_BYTES`` by default) is a 413 before the handler runs, on
    every route, whether it reads a body or not."""

    def wrap(handler: Handler[S]) -> Callable[[flask.Request], flask.Response]:
        @functools.wraps(handler)
        def entry(request: flask.Request) -> flask.Response:
            if request.path == "/healthz" and request.method in {"GET", "HEAD"}:
                return respond(200, {"status": "ok"})  # readiness: touches no dependency
            limit = body_limit(request) if body_limit is not None else MAX_BODY_BYTES
            if (request.content_length or 0) > limit:
                request.environ["finops.body_refused"] = True
                _leave_the_rest_unread(request)
                return error_response(PayloadTooLarge(f"body is larger than {limit} bytes"))
            s = settings()
            run: Run | None = None
            try:
                if not recorded:
                    return handler(request, s, Run(function=function, cluster=s.CLUSTER_ID))
                with recorded_run(function, s.CLUSTER_ID) as run:
                    response = handler(request, s, run)
            except Exception as exc:  # a recorded run's error is classified and logged by recorded_run
                if not recorded and not isinstance(exc, FinOpsError):
                    log.exception("request crashed")
                response = error_response(exc, run.run_id if run else None)
            _leave_the_rest_unread(request)
            if run is not None:
                for then in run.afterwards:
                    then(run)
            return response

        functions_framework.http(entry)  # registers the target's signature type; entry is served as is
        # werkzeug's own 404, for a path its catch-all rule cannot match (a newline in it): JSON too
        functions_framework.errorhandler(404)(lambda _exc: error_response(NotFound("no such path")))
        return entry

    return wrap


def _leave_the_rest_unread(request: flask.Request) -> None:
    """functions-framework reads the whole body after every answer (its ``read_request`` hook),
    however large its declared length and however slowly it comes: a body the function did not
    read is left to gunicorn instead, which drains at most 5 s of it. A body ``read_body`` refused
    is not drained at all (hand-made: gunicorn has no setting for it): the socket's read side is
    shut, so gunicorn closes the connection once the answer is sent and the thread is free."""
    request.stream = io.BytesIO()
    sock = request.environ.get("gunicorn.socket")
    if request.environ.get("finops.body_refused") and sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RD)
