"""An OpenCost that trickles its answer, over real HTTP, against the sandbox and a real run.

We test these aspects:
- the sandbox's ``trickle_next`` fault sends the real answer, byte by byte, announced whole by
  ``Content-Length`` (so a client cannot tell it from a slow but healthy OpenCost);
- ``collect_allocations`` (``OPENCOST_TIMEOUT_SECONDS=1``, one retry) fails within a bounded time
  with a 503 naming the overall deadline, writes nothing, and the CronJob's retry completes.
"""

from __future__ import annotations

import time

import httpx

from infra.postgres import Database
from sandbox import opencost as sandbox_opencost
from tests.e2e.conftest import Pinger
from usecases.verify import verify

SCHEDULED = "2026-11-20T10:07:00Z"
QUERY = {"window": "2026-11-20T09:00:00Z,2026-11-20T10:00:00Z", "aggregate": "namespace"}


def test_trickle_fault_sends_the_real_answer_slowly(opencost: sandbox_opencost.OpenCostServer) -> None:
    expected = httpx.get(f"{opencost.url}/allocation", params=QUERY, timeout=10).content
    opencost.trickle_next(bytes_per_chunk=max(1, len(expected) // 4), interval=0.1)
    began = time.monotonic()
    response = httpx.get(f"{opencost.url}/allocation", params=QUERY, timeout=10)
    assert response.status_code == 200 and response.content == expected
    assert response.headers["Content-Length"] == str(len(expected))
    assert time.monotonic() - began >= 0.3  # four or five writes, 0.1 s apart
    assert httpx.get(f"{opencost.url}/allocation", params=QUERY, timeout=10).content == expected  # fault spent


def test_a_trickling_opencost_fails_the_run_at_the_deadline(
    ping: Pinger, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    opencost.trickle_next(bytes_per_chunk=1, interval=0.05, times=2)  # the attempt and its one retry
    began = time.monotonic()
    response = ping({"scheduledTime": SCHEDULED})
    elapsed = time.monotonic() - began
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "60"
    error = response.json()["error"]
    assert "OpenCost" in error and "overall deadline of 1 s exceeded" in error and "after 2 attempts" in error
    # Two attempts of at most about 1 s each plus a 0.5 s backoff; the body alone would take minutes.
    assert elapsed < 8, elapsed
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM provider_allocations").fetchone() == {"n": 0}
        assert conn.execute("SELECT count(*) AS n FROM allocation_hours").fetchone() == {"n": 0}

    assert ping({"scheduledTime": SCHEDULED}).json()["hours_written"] == 4
    assert verify(db) == []
