"""We test how ``infra.events`` posts a CloudEvent to a sink over real HTTP (a stdlib server):

- binary mode: the ``ce-*`` headers and the JSON data as the body, to the URL's path and query;
- successive events share one kept-alive connection;
- concurrent senders (request threads) each get their own event's answer;
- a kept-alive connection the sink closed while idle is retried once on a fresh one;
- 429/503 are ``SinkBusy`` with the sink's ``Retry-After``, other failures ``SinkUnavailable``
  naming the sink but never its credentials or query (an event token); an answer that is not
  HTTP is ``SinkUnavailable``;
- a header value or path with a line break is refused before anything is sent (no header
  injection).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from infra import events
from tests.net import refused_port


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
