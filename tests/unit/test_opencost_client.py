"""The OpenCost client against answers of different OpenCost versions, and its overall deadline.

We test these aspects:
- ``/allocation/summary`` records naming their efficiency ``efficiency`` (older OpenCost) read as
  ``totalEfficiency``; ``totalEfficiency`` wins when both are present;
- an empty range whose window is ``{"start": "null", "end": "null"}`` (strings) parses, as no data;
  ``"null"`` strings in an allocation's times parse as ``None``;
- an answer trickled byte by byte fails the request at the overall deadline, not per read, as
  ``OpenCostUnavailable`` naming the deadline; a fast answer is unaffected;
- no retry starts after the caller's time budget (``retry_until``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from finops.errors import OpenCostUnavailable
from infra.opencost import OpenCostClient

START = datetime(2026, 11, 20, 10, tzinfo=UTC)
END = datetime(2026, 11, 20, 11, tzinfo=UTC)
WINDOW = {"start": "2026-11-20T10:00:00Z", "end": "2026-11-20T11:00:00Z"}


def client_answering(body: Any, **kw: Any) -> OpenCostClient:
    content = json.dumps(body).encode()
    return OpenCostClient(
        "http://opencost", transport=httpx.MockTransport(lambda request: httpx.Response(200, content=content)), **kw
    )


def summary(allocations: dict[str, Any] | None, window: dict[str, Any]) -> dict[str, Any]:
    sets = [{"allocations": allocations, "window": window}]
    return {"code": 200, "status": "success", "data": {"step": 3600, "sets": sets, "window": window}}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"name": "a", "totalCost": 1, "totalEfficiency": 0.25}, Decimal("0.25")),
        ({"name": "a", "totalCost": 1, "efficiency": 0.5}, Decimal("0.5")),
        ({"name": "a", "totalCost": 1, "efficiency": 0.5, "totalEfficiency": 0.25}, Decimal("0.25")),
        ({"name": "a", "totalCost": 1}, None),
    ],
    ids=["totalEfficiency", "efficiency", "both", "neither"],
)
def test_summary_efficiency_field_variants(record: dict[str, Any], expected: Decimal | None) -> None:
    client = client_answering(summary({"a": record}, WINDOW))
    (step_set,) = client.allocation_summary(START, END, aggregate="namespace")
    assert step_set["a"].get("totalEfficiency") == expected
    assert "efficiency" not in step_set["a"]  # moved: callers read one name


@pytest.mark.parametrize(
    "window",
    [{"start": "null", "end": "null"}, {"start": None, "end": None}, {"start": "null", "end": WINDOW["end"]}],
    ids=["null-strings", "json-null", "null-start-only"],
)
def test_summary_null_window_is_no_data(window: dict[str, Any]) -> None:
    client = client_answering(summary(None, window))
    assert client.allocation_summary(START, END, aggregate="namespace") == [{}]
    # Even records under a null window are no data: the range is empty.
    client = client_answering(summary({"a": {"name": "a", "totalCost": 1}}, window))
    assert client.allocation_summary(START, END, aggregate="namespace") == [{}]


def test_null_string_times_in_allocations_parse_as_none() -> None:
    record = {"name": "a", "start": "null", "end": "null", "window": {"start": "null", "end": "null"}, "totalCost": 2}
    client = client_answering({"code": 200, "data": [{"a": record}]})
    (step_set,) = client.allocation(START, END, aggregate="namespace")
    allocation = step_set["a"]
    assert allocation["start"] is None and allocation["end"] is None
    assert allocation["window"] == {"start": None, "end": None}
    assert allocation["totalCost"] == Decimal(2)


def trickle(body: bytes, interval: float) -> Iterator[bytes]:
    for byte in body:
        time.sleep(interval)
        yield bytes([byte])


def test_trickled_answer_fails_at_the_overall_deadline() -> None:
    body = json.dumps({"code": 200, "data": [{}]}).encode() * 10
    attempts = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(request.url.path)
        return httpx.Response(200, content=trickle(body, 0.02), headers={"Content-Length": str(len(body))})

    client = OpenCostClient(
        "http://opencost", timeout=0.3, retries=1, backoff=0.01, transport=httpx.MockTransport(handler)
    )
    began = time.monotonic()
    with pytest.raises(OpenCostUnavailable) as caught:
        client.allocation(START, END, aggregate="namespace")
    elapsed = time.monotonic() - began
    assert caught.value.http_status == 503
    assert "overall deadline of 0.3 s exceeded" in str(caught.value) and "after 2 attempts" in str(caught.value)
    assert len(attempts) == 2 and elapsed < 2.0  # each attempt stops at its deadline, not at the body's end


def test_fast_answer_is_within_the_deadline() -> None:
    client = client_answering({"code": 200, "data": [{"a": {"name": "a", "totalCost": 1}}]}, timeout=0.3)
    assert client.allocation(START, END, aggregate="namespace")[0]["a"]["totalCost"] == Decimal(1)


def test_no_retry_starts_after_the_callers_time_budget() -> None:
    attempts: list[int] = []

    def failing(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        return httpx.Response(503, content=b"busy")

    client = OpenCostClient("http://opencost", retries=3, backoff=0.001, transport=httpx.MockTransport(failing))
    with pytest.raises(OpenCostUnavailable) as caught:
        client.allocation(START, END, aggregate="namespace", retry_until=time.monotonic())  # budget spent
    assert len(attempts) == 1 and "no retry within the invocation's time budget" in str(caught.value)
    with pytest.raises(OpenCostUnavailable):  # without a budget: every retry
        client.allocation(START, END, aggregate="namespace")
    assert len(attempts) == 1 + 4
