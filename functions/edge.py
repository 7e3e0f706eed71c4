"""What every function's edge shares: authentication, request parsing, the process-wide
database, and mapping a run's outcome to an HTTP response.
"""

from __future__ import annotations

import functools
import hmac
import itertools
import json
import logging
import os
import re
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, TypeVar

import flask
from pydantic import BaseModel, ValidationError

from finops.errors import FinOpsError, InvalidInput, TemporaryError, Unauthorized
from infra import logs
from infra.postgres import Database, apply_migrations, connect
from infra.settings import CommonSettings, KubeSettings, OpenCostSettings, load

if TYPE_CHECKING:  # imported where first used: a webhook's cold start needs neither
    from infra.kube import KubeClient
    from infra.opencost import OpenCostClient

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


_migrated: set[str] = set()  # DSNs migrated by this process or the master it was forked from


@functools.cache
def database(dsn: str, pool: str, max_size: int, timeout: float, migrate: bool) -> Database:
    """One pool per process (per DSN); migrations applied on first use, under an advisory lock."""
    db = connect(dsn, pool=pool, max_size=max_size, timeout=timeout)
    if migrate and dsn not in _migrated:
        try:
            apply_migrations(db)
        except FinOpsError:
            database.cache_clear()  # try again on the next request rather than run unmigrated
            db.close()
            raise
        _migrated.add(dsn)
    return db


@functools.cache
def _opencost(url: str, timeout: float, retries: int) -> OpenCostClient:
    from infra.opencost import OpenCostClient

    return OpenCostClient(url, timeout=timeout, retries=retries)


def opencost_from(settings: OpenCostSettings, timeout: float | None = None) -> OpenCostClient:
    """The process's OpenCost client (one per distinct timeout, e.g. a CostJob's)."""
    return _opencost(settings.OPENCOST_URL, timeout or settings.OPENCOST_TIMEOUT_SECONDS, settings.OPENCOST_RETRIES)


@functools.cache
def _kube(url: str | None, timeout: float) -> KubeClient:
    from infra.kube import KubeClient

    if url:
        return KubeClient.from_url(url, timeout_seconds=timeout)
    return KubeClient.from_environment(timeout_seconds=timeout)


def kube_from(settings: KubeSettings, timeout: float | None = None) -> KubeClient:
    """The process's Kubernetes client: ``KUBE_API_URL``, else in-cluster, else ``KUBECONFIG``."""
    return _kube(settings.KUBE_API_URL, timeout or settings.KUBE_TIMEOUT_SECONDS)


def _forget_clients() -> None:
    """functions-framework builds the app (and so runs the cold start) in gunicorn's master, then
    forks the worker. A pool's connector threads do not survive a fork, so the worker forgets
    whatever was made before it and opens its own on first use (migrations: a no-op check)."""
    for cached in (database, _opencost, _kube):
        cached.cache_clear()


os.register_at_fork(after_in_child=_forget_clients)


def database_from(settings: CommonSettings) -> Database:
    return database(
        settings.DATABASE_URL.get_secret_value(),
        settings.DATABASE_POOL,
        settings.DATABASE_POOL_MAX,
        settings.DATABASE_CONNECT_TIMEOUT_SECONDS,
        settings.MIGRATE_ON_START,
    )


def require_bearer(request: flask.Request, token: str) -> None:
    """Constant-time check of ``Authorization: Bearer <token>``."""
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise Unauthorized("missing or wrong bearer token in the Authorization header")


MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # linear: no nested repeats
_DEPTH_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _DEPTH_STEP)


def json_depth(raw: bytes) -> int:
    """How deep ``raw``'s brackets nest outside strings: checked before parsing, because the
    parser and every later walk over the value recurse once per level."""
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(_DEPTH_STEP[b] for b in brackets), default=0)


def _read_at_most(stream: IO[bytes], limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := stream.read(limit - size)):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_json(request: flask.Request) -> Any:
    """The JSON body (an empty body is ``{}``): 413 above ``MAX_BODY_BYTES``, 400 when it cannot
    be read (malformed chunked encoding, a client gone mid-body), is not JSON, or nests deeper
    than ``MAX_JSON_DEPTH``. Never more than ``MAX_BODY_BYTES + 1`` bytes are read."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"body is larger than {MAX_BODY_BYTES} bytes")
    try:
        raw = _read_at_most(request.stream, MAX_BODY_BYTES + 1)
    except Exception as exc:  # gunicorn's chunk parser errors, werkzeug's ClientDisconnected
        raise InvalidInput(f"body could not be read: {type(exc).__name__}") from exc
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"body is larger than {MAX_BODY_BYTES} bytes")
    if not raw.strip():
        return {}
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise InvalidInput(f"body nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(f"body is not valid JSON: {str(exc)[:200]}") from exc


def validation_message(exc: ValidationError) -> str:
    """``field.path: message`` of a validation error's first problem."""
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
    except RecursionError as exc:  # a backstop: the depth check above should make this unreachable
        raise InvalidInput(f"body nests deeper than {MAX_JSON_DEPTH} levels") from exc


class PayloadTooLarge(InvalidInput):
    """The request body is too large."""

    http_status = 413


def respond(status: int, body: dict[str, Any]) -> flask.Response:
    """A JSON answer; its ``error`` and ``warnings`` (dependency messages) are redacted."""
    body = {k: logs.redact_value(v) if k in ("error", "warnings") else v for k, v in body.items()}
    response = flask.Response(json.dumps(body, default=str), status=status, mimetype="application/json")
    if status in (429, 503):
        response.headers["Retry-After"] = "60" if status == 503 else "5"
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
    return respond(status, body)


def health(request: flask.Request) -> flask.Response | None:
    """``GET /healthz``: a cheap readiness answer that touches no dependency."""
    if request.path == "/healthz" and request.method in {"GET", "HEAD"}:
        return respond(200, {"status": "ok"})
    return None
