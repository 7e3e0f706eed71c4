"""We test these aspects of the edge's guards, without a server:

- the event rate limit: a burst, then one delivery per ``1/per_second`` seconds, with the wait
  named (the 429's ``Retry-After``);
- the event token: query parameter or bearer, constant-time, accepted without ``EVENT_TOKEN``,
  appended to our own delivery URLs; an empty expected token accepts nothing;
- tokens from ``SECRETS_DIR``: the file's value once it exists, re-read when it is replaced;
- the body guard: a declared body above the limit is refused before anything is read, a body is
  handed to the function from memory, a short or oversized body is refused, and bodiless
  requests pass straight through;
- the edge decorator: health first, errors mapped (with ``Retry-After`` when the error names one),
  and the run's ``afterwards`` called once answered, also after a failure.
"""

from __future__ import annotations

import io
import json
import os
import socket
from pathlib import Path
from typing import Any

import flask
import pytest
from pydantic import SecretStr

from finops.errors import TemporaryError, Unauthorized
from functions import limits
from functions.body_guard import BodyGuard
from functions.edge import (
    MAX_BODY_BYTES,
    current_secret,
    edge,
    require_bearer,
    require_event_token,
    with_event_token,
)
from functions.limits import RateLimit, TooManyEvents
from infra.settings import CommonSettings, ConfigError, PingSettings, load
from usecases.runs import Run


def test_rate_limit_allows_a_burst_then_refills() -> None:
    now = [0.0]
    limit = RateLimit(per_second=2, burst=3, clock=lambda: now[0])
    for _ in range(3):
        limit.take()
    with pytest.raises(TooManyEvents) as refused:
        limit.take()
    assert refused.value.http_status == 429 and refused.value.retry_after_seconds == pytest.approx(0.5)
    now[0] = 0.5
    limit.take()
    now[0] = 100.0  # refills up to the burst, not beyond
    for _ in range(3):
        limit.take()
    with pytest.raises(TooManyEvents):
        limit.take()


@pytest.mark.parametrize(
    ("workers", "per_second", "burst", "in_flight"),
    [("1", 20.0, 50, 20), ("2", 10.0, 25, 10), ("3", 20 / 3, 17, 7), ("64", 20 / 64, 1, 1)],
)
def test_a_replicas_limits_are_shared_by_its_worker_processes(
    monkeypatch: pytest.MonkeyPatch, workers: str, per_second: float, burst: int, in_flight: int
) -> None:
    monkeypatch.setenv("WORKERS", workers)
    limits.workers.cache_clear()
    try:
        bucket = RateLimit.per_replica(per_second=20, burst=50)
        assert (bucket.per_second, bucket.burst) == (pytest.approx(per_second), burst)
        assert limits.worker_count_share(20) == in_flight
    finally:
        limits.workers.cache_clear()


def test_workers_is_validated_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKERS", "0")
    limits.workers.cache_clear()
    try:
        with pytest.raises(ConfigError, match="WORKERS"):
            limits.workers()
    finally:
        limits.workers.cache_clear()


def _request(url: str, **headers: str) -> flask.Request:
    app = flask.Flask("t")
    with app.test_request_context(url, headers=headers) as ctx:
        return ctx.request


def test_event_token_from_query_or_bearer() -> None:
    token = "s3cret"
    require_event_token(_request("/?token=s3cret"), token)
    require_event_token(_request("/", Authorization="Bearer s3cret"), token)
    require_event_token(_request("/"), None)  # no EVENT_TOKEN: accepted (rate-limited only)
    for request in (_request("/"), _request("/?token=s3cre"), _request("/", Authorization="Bearer nope")):
        with pytest.raises(Unauthorized) as refused:
            require_event_token(request, token)
        assert "s3cret" not in refused.value.message


def test_an_empty_expected_token_accepts_nothing() -> None:
    with pytest.raises(Unauthorized):
        require_bearer(_request("/", Authorization="Bearer"), "")


def test_current_secret_prefers_a_changed_file(tmp_path: Path) -> None:
    env = {"DATABASE_URL": "postgresql://x@127.0.0.1:1/x", "PING_TOKEN": "from-env", "SECRETS_DIR": str(tmp_path)}
    settings = load(PingSettings, env)
    assert current_secret(settings, "PING_TOKEN") == "from-env"  # no file: the cold-start value
    (tmp_path / "PING_TOKEN").write_text("one\n")
    assert current_secret(settings, "PING_TOKEN") == "one"
    (tmp_path / "staged").write_text("two-longer")
    os.replace(tmp_path / "staged", tmp_path / "PING_TOKEN")
    assert current_secret(settings, "PING_TOKEN") == "two-longer"
    assert current_secret(settings, "EVENT_TOKEN") is None  # not a field here, no file


def test_our_deliveries_carry_the_event_token() -> None:
    assert with_event_token("http://on-sync.finops/", None) == "http://on-sync.finops/"
    assert with_event_token("http://on-sync.finops/", "a b&c") == "http://on-sync.finops/?token=a+b%26c"
    assert with_event_token("http://x/?a=1", "t") == "http://x/?a=1&token=t"


def _call(guard: BodyGuard, body: bytes | None, **environ: Any) -> tuple[str, dict[str, str], bytes]:
    env: dict[str, Any] = {"REQUEST_METHOD": "POST", "PATH_INFO": "/", "wsgi.input": io.BytesIO(body or b"")}
    if body is not None:
        env["CONTENT_LENGTH"] = str(len(body))
    env.update(environ)
    seen: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        seen.update(status=status, headers=dict(headers))

    payload = b"".join(guard(env, start_response))
    return seen["status"], seen["headers"], payload


def _echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"echo:" + body]


def test_body_guard() -> None:
    guard = BodyGuard(_echo, limit=MAX_BODY_BYTES, timeout=5, readers=2)
    assert _call(guard, b'{"a": 1}')[2] == b'echo:{"a": 1}'
    assert _call(guard, None)[2] == b"echo:"  # bodiless: straight through
    status, headers, payload = _call(guard, b"{", CONTENT_LENGTH=str(10 * 1024**3))
    assert status.startswith("413") and headers["Connection"] == "close"
    assert "larger than" in json.loads(payload)["error"]
    assert _call(guard, b"x" * (MAX_BODY_BYTES + 1))[0].startswith("413")
    status, _, payload = _call(guard, b"{", CONTENT_LENGTH="100")  # the client went away mid-body
    assert status.startswith("400") and "body could not be read" in json.loads(payload)["error"]


def test_a_refusal_closes_the_connection_once_its_answer_is_sent() -> None:
    """gunicorn drops the answer's ``Connection: close`` (hop-by-hop) and keeps the connection;
    the refusal's iterable shuts the socket down when the server closes it after sending."""
    guard = BodyGuard(_echo, limit=MAX_BODY_BYTES, timeout=5, readers=2)
    server, client = socket.socketpair()
    try:
        client.settimeout(5)
        env = {"REQUEST_METHOD": "POST", "PATH_INFO": "/", "wsgi.input": io.BytesIO(b"{")}
        env.update({"CONTENT_LENGTH": str(10 * 1024**3), "gunicorn.socket": server})
        answer = guard(env, lambda status, headers: None)
        server.sendall(b"".join(answer))  # as the server writes it, then calls close()
        answer.close()
        received = b""
        while chunk := client.recv(4096):
            received += chunk
        assert b"larger than" in received  # the whole answer, then the end of the connection
        kept = {"REQUEST_METHOD": "POST", "PATH_INFO": "/", "gunicorn.socket": server}
        kept.update({"CONTENT_LENGTH": "8", "wsgi.input": io.BytesIO(b'{"a": 1}')})
        assert guard(kept, lambda *a: None) == [b'echo:{"a": 1}']  # an accepted body: the function's own answer
    finally:
        server.close()
        client.close()


class _Settings(CommonSettings):
    pass


def test_edge_maps_errors_and_runs_afterwards_once_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    class Busy(TemporaryError):
        retry_after_seconds = 7

    settings = _Settings(DATABASE_URL=SecretStr("postgresql://x@127.0.0.1:1/x"), CLUSTER_ID="c")
    done: list[str] = []

    @edge("t", lambda: settings)
    def handler(request: flask.Request, s: _Settings, run: Run) -> flask.Response:
        run.afterwards.append(lambda r: done.append(r.outcome))
        raise Busy("busy")

    app = flask.Flask("t")
    with app.test_request_context("/healthz"):
        assert handler(flask.request).status_code == 200 and done == []
    with app.test_request_context("/", method="POST"):
        response = handler(flask.request)
    assert response.status_code == 503 and response.headers["Retry-After"] == "7"
    assert done == ["failed"]
