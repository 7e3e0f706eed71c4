"""We test these aspects of the edge's guards, without a server:

- the event rate limit: a burst, then one delivery per ``1/per_second`` seconds, with the wait
  named (the 429's ``Retry-After``);
- the event token: query parameter or bearer, constant-time, accepted without ``EVENT_TOKEN``,
  appended to our own delivery URLs; an empty expected token accepts nothing;
- tokens from ``SECRETS_DIR``: the file's value once it exists, re-read when it is replaced;
- reading a body: a declared body above the limit is refused before anything is read, a short or
  oversized (also chunked) body is refused, a body is refused at once while every thread but the
  reserved ones receives one, and bodiless requests read nothing;
- the edge decorator: health first, errors mapped (with ``Retry-After`` when the error names one),
  and the run's ``afterwards`` called once answered, also after a failure.
"""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import Any

import flask
import pytest
from pydantic import SecretStr
from werkzeug.test import EnvironBuilder

from finops.errors import InvalidInput, TemporaryError, Unauthorized
from functions import edge as edge_module
from functions import limits
from functions.edge import (
    MAX_BODY_BYTES,
    BodiesBusy,
    PayloadTooLarge,
    edge,
    read_body,
    require_bearer,
    require_event_token,
    with_event_token,
)
from functions.limits import RateLimit, TooManyEvents
from infra.settings import CommonSettings, ConfigError, PingSettings, current_secret, load
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


class _Unread(io.BytesIO):
    """A body stream that records whether anything was read from it."""

    touched = False

    def read(self, size: int | None = -1) -> bytes:
        self.touched = True
        return super().read(size)


def _body_request(body: bytes, **environ: Any) -> flask.Request:
    env = EnvironBuilder(method="POST", data=body).get_environ()
    env.update(environ)
    return flask.Request(env)


def test_reading_a_body() -> None:
    assert read_body(_body_request(b'{"a": 1}')) == b'{"a": 1}'
    assert read_body(_body_request(b"")) == b""  # bodiless: nothing read
    unread = _Unread(b"{")
    with pytest.raises(PayloadTooLarge, match="larger than"):
        read_body(_body_request(b"", CONTENT_LENGTH=str(10 * 1024**3), **{"wsgi.input": unread}))
    assert not unread.touched
    with pytest.raises(PayloadTooLarge):
        read_body(_body_request(b"x" * (MAX_BODY_BYTES + 1)))
    chunked = {"CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input_terminated": True}
    with pytest.raises(PayloadTooLarge):  # no length declared: cut at the limit while read
        read_body(_body_request(b"x" * (MAX_BODY_BYTES + 1), **chunked))
    assert read_body(_body_request(b"x" * MAX_BODY_BYTES, **chunked)) == b"x" * MAX_BODY_BYTES
    with pytest.raises(InvalidInput, match="body could not be read"):  # the client went away mid-body
        read_body(_body_request(b"{", CONTENT_LENGTH="100"))
    with pytest.raises(InvalidInput, match="body could not be read"):  # gunicorn's stream: short, no error
        read_body(_body_request(b"{", CONTENT_LENGTH="100", **{"wsgi.input_terminated": True}))


def test_a_body_beyond_the_readers_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    readers = threading.BoundedSemaphore(1)
    monkeypatch.setattr(edge_module, "_body_readers", lambda: (readers, 5.0))
    readers.acquire()  # another thread is receiving a body
    with pytest.raises(BodiesBusy) as refused:
        read_body(_body_request(b"{}"))
    assert refused.value.http_status == 503 and refused.value.retry_after_seconds == 1
    assert read_body(_body_request(b"")) == b""  # a bodiless request needs no reader
    readers.release()
    assert read_body(_body_request(b"{}")) == b"{}"


def test_a_limiter_is_built_once_however_many_threads_ask_first() -> None:
    # A fresh worker's first requests all ask for the body readers at once: each thread that built
    # its own semaphore would let one more body in (seen as 7 readers of 6 under load).
    built: list[threading.BoundedSemaphore] = []
    gate = threading.Barrier(8)

    @limits.one_per_process
    def readers() -> threading.BoundedSemaphore:
        built.append(threading.BoundedSemaphore(6))
        threading.Event().wait(0.05)  # reading the settings: long enough for the others to arrive
        return built[-1]

    got: list[threading.BoundedSemaphore] = []

    def first_request() -> None:
        gate.wait()
        got.append(readers())

    threads = [threading.Thread(target=first_request) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and all(semaphore is built[0] for semaphore in got)


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
