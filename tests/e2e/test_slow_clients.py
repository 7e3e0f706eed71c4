"""We test these aspects of serving under slow or lying clients, against a real served function
(functions-framework under gunicorn, 8 threads, as a Knative revision runs it):

- a declared 10 GB ``Content-Length`` with one byte sent is answered 413 at once, from the
  headers, without waiting for a body that never comes;
- 12 clients that send headers and then stall mid-body do not starve ``/healthz``: it answers
  while they stall; each stalled upload is answered (503 beyond the body readers, 408 once its
  body deadline passes) and its thread freed;
- a normal request still works afterwards.

Clients that stall inside the *headers* are not covered: gunicorn parses headers before any of
our code runs. In Knative the queue-proxy only forwards a request once its headers are complete
(docs/tutorial/first-cluster.md, "Harden it").
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import HOOK_TOKEN

THREADS = 8


@pytest.fixture(scope="module")
def narrow_on_sync(stack: Stack) -> Iterator[str]:
    with serve_function(
        stack, "on_sync", WEBHOOK_TOKEN=HOOK_TOKEN, THREADS=str(THREADS), BODY_READ_TIMEOUT_SECONDS="3"
    ) as url:
        yield url


def _open(url: str, head: str, body: bytes) -> socket.socket:
    parts = urlsplit(url)
    conn = socket.create_connection((parts.hostname, parts.port), timeout=20)
    conn.sendall(head.encode() + body)
    return conn


def _status(conn: socket.socket) -> int:
    answer = b""
    while b"\r\n" not in answer:
        chunk = conn.recv(4096)
        if not chunk:
            break
        answer += chunk
    return int(answer.split(b" ", 2)[1])


def _upload_head(length: int) -> str:
    return (
        f"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {HOOK_TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )


def test_a_declared_10gb_body_is_refused_at_once(narrow_on_sync: str) -> None:
    with _open(narrow_on_sync, _upload_head(10 * 1024**3), b"{") as conn:
        assert _status(conn) == 413


def test_stalled_uploads_do_not_starve_health(narrow_on_sync: str) -> None:
    stalled = [_open(narrow_on_sync, _upload_head(1000), b'{"app": ') for _ in range(12)]
    try:
        health = httpx.get(narrow_on_sync + "/healthz", timeout=10)
        assert health.status_code == 200, health.text
        statuses = sorted(_status(conn) for conn in stalled)
    finally:
        for conn in stalled:
            conn.close()
    assert set(statuses) <= {408, 503}, statuses
    assert statuses.count(408) <= THREADS - 2, statuses  # two threads are never spent on bodies
    answer = httpx.post(narrow_on_sync, json={}, headers={"Authorization": "Bearer nope"}, timeout=10)
    assert answer.status_code == 401, answer.text
