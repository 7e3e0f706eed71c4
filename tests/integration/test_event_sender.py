"""We test how ``infra.events`` posts a CloudEvent to a sink over real HTTP (a stdlib server):

- binary mode: the ``ce-*`` headers and the JSON data as the body, to the URL's path and query;
- successive events share one kept-alive connection;
- concurrent senders (request threads) each get their own event's answer;
- a kept-alive connection the sink closed while idle is retried once on a fresh one;
- 429/503 are ``SinkBusy`` with the sink's ``Retry-After``, other failures ``SinkUnavailable``
  naming the sink but never its credentials or query (an event token); an answer that is not
  HTTP is ``SinkUnavailable``;
- a header value or path with a line break is refused before anything is sent (no header
  injection);
- a detached delivery waits for its delay, and for a busy sink's ``Retry-After`` (capped, at most
  ``MAX_DELIVERIES`` attempts), on the clock it is given; an accepted sync event goes to the sink
  at once saying when it settles, or, without a sink, to the function itself once settled.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from infra import events
from sandbox.clock import FakeClock
from tests.net import refused_port
from usecases.appcost.syncs import Delivery, NotSettled, dispatch, ensure_settled


@dataclass
class Sink:
    url: str
    answer: int = 202
    retry_after: str | None = None
    close_after_answer: bool = False  # close the connection without saying so (an idle timeout)
    raw_answer: bytes | None = None  # written as the whole answer instead, then the connection closes
    answers: dict[int, int] = field(default_factory=dict)  # syncEventId: status, instead of ``answer``
    received: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def sink() -> Iterator[Sink]:
    state = Sink(url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.received.append(
                {
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": json.loads(body),
                    "peer": self.client_address,
                }
            )
            if state.raw_answer is not None:
                self.wfile.write(state.raw_answer)
                self.close_connection = True
                return
            self.send_response(state.answers.get(json.loads(body).get("syncEventId"), state.answer))
            if state.retry_after:
                self.send_header("Retry-After", state.retry_after)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.close_connection = state.close_after_answer

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        events.close_connections()
        server.shutdown()
        server.server_close()


def send(url: str, n: int = 1) -> None:
    events.send(url, events.SYNC_ACCEPTED, f"sync-{n}", "/finops/test/on_sync", {"syncEventId": n})


def test_an_event_is_posted_in_binary_mode_to_the_sinks_path(sink: Sink) -> None:
    send(f"{sink.url}/broker/default?token=abc", 7)
    (got,) = sink.received
    assert got["path"] == "/broker/default?token=abc"
    assert got["body"] == {"syncEventId": 7}
    headers = {k.lower(): v for k, v in got["headers"].items()}
    assert headers["ce-specversion"] == "1.0"
    assert headers["ce-type"] == events.SYNC_ACCEPTED
    assert headers["ce-id"] == "sync-7"
    assert headers["ce-source"] == "/finops/test/on_sync"
    assert headers["content-type"] == "application/json"


def test_successive_events_share_one_kept_alive_connection(sink: Sink) -> None:
    for n in range(3):
        send(sink.url, n)
    assert [r["body"]["syncEventId"] for r in sink.received] == [0, 1, 2]
    assert len({r["peer"] for r in sink.received}) == 1


def test_concurrent_senders_each_get_their_own_events_answer(sink: Sink) -> None:
    sink.answers = {n: 503 for n in range(0, 160, 7)}
    outcomes: dict[int, str] = {}

    def sender(first: int) -> None:
        for n in range(first, first + 10):
            try:
                send(sink.url, n)
                outcomes[n] = "accepted"
            except events.SinkBusy as exc:
                outcomes[n] = f"busy: {exc}"

    threads = [threading.Thread(target=sender, args=(first,)) for first in range(0, 160, 10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == {
        n: "accepted" if n % 7 else f"busy: event sink {sink.url} answered 503 (retry after 5 s)" for n in range(160)
    }
    assert sorted(r["body"]["syncEventId"] for r in sink.received) == list(range(160))


def test_a_connection_the_sink_closed_while_idle_is_retried_on_a_fresh_one(sink: Sink) -> None:
    sink.close_after_answer = True
    send(sink.url, 1)
    send(sink.url, 2)  # its kept-alive connection is closed: sent again on a new one
    assert [r["body"]["syncEventId"] for r in sink.received] == [1, 2]
    assert len({r["peer"] for r in sink.received}) == 2


@pytest.mark.parametrize(("status", "busy"), [(503, True), (429, True), (500, False)], ids=["503", "429", "500"])
def test_a_refusal_names_the_sink_and_when_to_retry(sink: Sink, status: int, busy: bool) -> None:
    sink.answer, sink.retry_after = status, "7"
    with pytest.raises(events.SinkUnavailable, match=f"answered {status}") as raised:
        send(sink.url)
    assert isinstance(raised.value, events.SinkBusy) is busy
    if busy:
        assert isinstance(raised.value, events.SinkBusy) and raised.value.retry_after == 7.0


def test_a_refusal_never_shows_the_sinks_credentials_or_token(sink: Sink) -> None:
    sink.answer = 500
    port = sink.url.rsplit(":", 1)[1]
    with pytest.raises(events.SinkUnavailable) as raised:
        send(f"http://user:s3cret@127.0.0.1:{port}/broker?token=t0ken")
    assert str(raised.value) == f"event sink http://127.0.0.1:{port}/broker answered 500"


def test_an_unreachable_sink_is_unavailable_naming_it() -> None:
    with refused_port() as port:
        url = f"http://127.0.0.1:{port}"
        with pytest.raises(events.SinkUnavailable, match=f"event sink {url} unreachable: ConnectionRefusedError"):
            send(url)


def test_an_answer_that_is_not_http_is_unavailable(sink: Sink) -> None:
    sink.raw_answer = b"SSH-2.0-OpenSSH_9.2\r\n"
    with pytest.raises(events.SinkUnavailable, match="unreachable: RemoteProtocolError"):
        send(sink.url)


@pytest.mark.parametrize("source", ["/finops/a\r\nX-Injected: 1/on_sync", "/finops/a\n/on_sync", "/finops/é"])
def test_a_header_with_a_line_break_is_refused_before_sending(sink: Sink, source: str) -> None:
    with pytest.raises(events.SinkUnavailable, match="control character"):
        events.send(sink.url, events.SYNC_ACCEPTED, "sync-1", source, {"syncEventId": 1})
    with pytest.raises(events.SinkUnavailable, match="control character"):
        send(f"{sink.url}/a b")
    assert sink.received == []


# A detached delivery on a clock the test moves (sandbox.clock.FakeClock): nothing waits on the
# wall clock for the settle time or a sink's Retry-After.


def test_a_detached_delivery_is_posted_once_its_delay_has_passed(sink: Sink) -> None:
    clock = FakeClock()
    events.send_detached(sink.url, events.SYNC_ACCEPTED, "sync-3", "/t", {"syncEventId": 3}, delay=6, clock=clock)
    clock.advance(5.9)
    assert sink.received == []
    clock.advance(0.1)
    assert [got["body"] for got in sink.received] == [{"syncEventId": 3}]


def test_a_busy_sink_gets_the_event_again_after_its_retry_after_up_to_the_limit(sink: Sink) -> None:
    sink.answer, sink.retry_after = 503, "30"
    clock = FakeClock()
    events.send_detached(sink.url, events.SYNC_ACCEPTED, "sync-4", "/t", {"syncEventId": 4}, clock=clock)
    clock.advance(0)
    assert len(sink.received) == 1
    clock.advance(29)
    assert len(sink.received) == 1  # not before the sink's Retry-After
    clock.advance(1)
    assert len(sink.received) == 2
    clock.advance(30 * events.MAX_DELIVERIES)
    assert len(sink.received) == events.MAX_DELIVERIES and clock.pending == 0  # then given up, logged
    assert [delay for _, delay in clock.scheduled] == [0, *[30.0] * (events.MAX_DELIVERIES - 1)]


def test_a_sinks_retry_after_is_capped(sink: Sink) -> None:
    sink.answer, sink.retry_after = 429, "86400"
    clock = FakeClock()
    events.send_detached(sink.url, events.SYNC_ACCEPTED, "sync-5", "/t", {"syncEventId": 5}, clock=clock)
    clock.advance(0)
    assert clock.scheduled[-1][1] == events.MAX_RETRY_AFTER


def test_an_accepted_event_without_a_sink_is_delivered_to_itself_once_settled(sink: Sink) -> None:
    clock = FakeClock()
    delivery = Delivery("/finops/test/on_sync", settle_seconds=6, sink=None, self_url=f"{sink.url}/?token=t")
    dispatch(delivery, 9, clock)
    clock.advance(5)
    assert sink.received == []
    clock.advance(1)
    (got,) = sink.received
    assert got["path"] == "/?token=t"
    assert got["body"] == {"syncEventId": 9, "notBefore": (clock.now()).isoformat()}  # sent when it settled


def test_an_accepted_event_goes_to_the_sink_at_once_saying_when_it_settles(sink: Sink) -> None:
    clock = FakeClock()
    dispatch(Delivery("/finops/test/on_sync", settle_seconds=6, sink=f"{sink.url}/broker"), 9, clock)
    (got,) = sink.received
    assert got["body"] == {"syncEventId": 9, "notBefore": (clock.now() + timedelta(seconds=6)).isoformat()}


def test_a_delivery_before_its_not_before_is_not_settled() -> None:
    clock = FakeClock()
    with pytest.raises(NotSettled) as raised:
        ensure_settled(9, clock.now() + timedelta(seconds=6), clock)
    assert raised.value.retry_after == 6
    clock.advance(6)
    ensure_settled(9, clock.now(), clock)
    ensure_settled(9, None, clock)
