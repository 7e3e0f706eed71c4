"""``/allocation/summary`` of the OpenCost sandbox over real HTTP (reference §1.7).

The summary must be the same numbers as ``/allocation`` for the same query, in OpenCost's
``SummaryAllocationSetRangeResponse`` shape, so these tests compare the two endpoints field by
field rather than re-deriving costs (the cost model has its own tests). Each summary cost is the
``/allocation`` cost plus its adjustment, as OpenCost's ``NewSummaryAllocation`` folds them in.

The legacy dialect (``serve(..., legacy_summary=True)``: ``efficiency`` for ``totalEfficiency``,
``"null"`` strings in an empty range's window) is read by our client (``infra.opencost``) as the
current one: the same efficiencies, and an empty range as no data.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from infra.opencost import OpenCostClient
from sandbox.opencost import OpenCostServer, parse_scenario, serve

NOW = datetime(2026, 3, 10, 14, 25, 30, tzinfo=UTC)
HOUR_0 = "2026-03-10T00:00:00Z,2026-03-10T01:00:00Z"
SIX_HOURS = "2026-03-10T00:00:00Z,2026-03-10T06:00:00Z"
FIELDS = [
    "name",
    "start",
    "end",
    "cpuCoreRequestAverage",
    "cpuCoreUsageAverage",
    "cpuCost",
    "cpuCostIdle",
    "gpuRequestAverage",
    "gpuUsageAverage",
    "gpuCost",
    "gpuCostIdle",
    "networkCost",
    "loadBalancerCost",
    "pvCost",
    "ramByteRequestAverage",
    "ramByteUsageAverage",
    "ramCost",
    "ramCostIdle",
    "sharedCost",
    "externalCost",
    "totalEfficiency",
    "totalCost",
]
SHARED = [f for f in FIELDS if not f.startswith("gpu") or f in ("gpuCost", "gpuCostIdle")]  # same in /allocation
ADJUSTED = {
    "cpuCost": "cpuCostAdjustment",
    "gpuCost": "gpuCostAdjustment",
    "ramCost": "ramCostAdjustment",
    "pvCost": "pvCostAdjustment",
    "networkCost": "networkCostAdjustment",
    "loadBalancerCost": "loadBalancerCostAdjustment",
}

SCENARIO: dict[str, Any] = {
    "cluster": "summary",
    "nodes": [
        {"name": "n1", "cpuCores": 4, "ramGiB": 16},
        {"name": "gpu", "cpuCores": 8, "ramGiB": 32, "gpus": 2, "gpuHourly": "0.9"},
    ],
    "namespaces": [{"name": "shop", "labels": {"team": "checkout"}}, {"name": "ml"}],
    "workloads": [
        {
            "namespace": "shop",
            "kind": "Deployment",
            "name": "web",
            "replicas": 2,
            "node": "n1",
            "containers": [{"name": "app", "request": {"cpu": 0.5, "ramGiB": 1}, "usage": {"cpu": 0.25, "ramGiB": 2}}],
            "pvs": [{"name": "pvc-web", "sizeGiB": 10}],
            "loadBalancers": [{"name": "web-lb"}],
            "networkBytesPerHour": {"transfer": 1073741824},
            "costAdjustment": {"cpu": -0.2, "ram": 0.1, "pv": 0.5, "network": -0.25, "loadBalancer": 0.4},
        },
        {
            "namespace": "ml",
            "kind": "Deployment",
            "name": "train",
            "node": "gpu",
            "start": "-3h",
            "containers": [
                {"name": "t", "request": {"cpu": 2, "ramGiB": 8, "gpu": 1}, "usage": {"cpu": 1, "ramGiB": 4}}
            ],
            "costAdjustment": {"gpu": -0.1},
        },
    ],
}


@pytest.fixture(scope="module")
def server() -> Iterator[OpenCostServer]:
    with serve(parse_scenario(SCENARIO), clock=lambda: NOW) as running:
        yield running


def get(server: OpenCostServer, path: str = "/allocation/summary", **params: str) -> httpx.Response:
    return httpx.get(server.url + path, params=params, timeout=10)


def summary(server: OpenCostServer, **params: str) -> dict[str, Any]:
    response = get(server, **params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_envelope_and_fields_follow_opencost(server: OpenCostServer) -> None:
    body = summary(server, window=HOUR_0, aggregate="namespace", includeIdle="true")
    assert list(body) == ["code", "status", "data"] and (body["code"], body["status"]) == (200, "success")
    data = body["data"]
    assert list(data) == ["step", "sets", "window"]
    assert data["step"] == 3600 * 10**9  # a Go time.Duration: nanoseconds
    assert data["window"] == {"start": "2026-03-10T00:00:00Z", "end": "2026-03-10T01:00:00Z"}
    [one] = data["sets"]
    assert list(one) == ["allocations", "window"] and one["window"] == data["window"]
    assert list(one["allocations"]) == ["__idle__", "shop"]  # ml starts at 11:00, Go sorts map keys
    shop = one["allocations"]["shop"]
    assert list(shop) == FIELDS and shop["name"] == "shop"
    assert shop["cpuCostIdle"] == shop["ramCostIdle"] == shop["gpuCostIdle"] == 0
    assert shop["sharedCost"] == shop["externalCost"] == 0
    assert shop["gpuUsageAverage"] is None  # no DCGM exporter: not measured, not 0
    assert shop["cpuCoreRequestAverage"] == 1 and shop["cpuCoreUsageAverage"] == 0.5
    assert shop["ramByteRequestAverage"] == 2 * 1024**3 and shop["ramByteUsageAverage"] == 4 * 1024**3
    # with the adjustments: load balancer 0.025 x 1.4, network 0.01 x 0.75
    assert shop["pvCost"] > 0 and shop["loadBalancerCost"] == 0.035 and shop["networkCost"] == 0.0075
    idle = one["allocations"]["__idle__"]
    assert idle["cpuCost"] > 0 and idle["totalEfficiency"] == 0 and idle["cpuCostIdle"] == 0


@pytest.mark.parametrize(
    "params",
    [
        {"window": "24h", "aggregate": "namespace"},
        {"window": "24h", "aggregate": "pod", "filter": 'namespace:"ml"'},
        {"window": SIX_HOURS, "aggregate": "controller", "step": "2h", "includeIdle": "true"},
        {"window": "48h", "aggregate": "namespace", "step": "1d", "accumulate": "true", "includeIdle": "true"},
        {"window": "today"},
    ],
    ids=["namespace", "pod-filtered", "steps-idle", "accumulated", "per-container"],
)
def test_figures_equal_the_allocation_endpoint(server: OpenCostServer, params: dict[str, str]) -> None:
    full = get(server, "/allocation", **params).json()["data"]
    sets = summary(server, **params)["data"]["sets"]
    assert len(sets) == len(full)
    for condensed, allocations in zip(sets, full, strict=True):
        assert list(condensed["allocations"]) == list(allocations)
        for key, item in condensed["allocations"].items():
            mine = allocations[key]
            same = [f for f in SHARED if f not in ADJUSTED]
            assert {f: item[f] for f in same} == {f: mine[f] for f in same}, key
            for cost, adjustment in ADJUSTED.items():  # each rounded to 5 decimals on its own
                assert item[cost] == pytest.approx(mine[cost] + mine[adjustment], abs=2e-5), (key, cost)
            assert item["gpuRequestAverage"] == mine["gpuCount"]  # requested GPUs, averaged over the minutes


def test_gpu_request_average(server: OpenCostServer) -> None:
    ml = summary(server, window="24h", aggregate="namespace")["data"]["sets"][0]["allocations"]["ml"]
    # 0.9 an hour from 11:00 to 14:25, less its 10% adjustment
    assert ml["gpuRequestAverage"] == 1 and ml["gpuCost"] == pytest.approx(0.9 * 0.9 * (14 + 25 / 60 - 11), abs=1e-4)
    assert ml["start"] == "2026-03-10T11:00:00Z" and ml["end"] == "2026-03-10T14:25:00Z"


def test_step_window_and_accumulate(server: OpenCostServer) -> None:
    stepped = summary(server, window=SIX_HOURS, aggregate="namespace", step="2h")["data"]
    assert stepped["step"] == 2 * 3600 * 10**9 and len(stepped["sets"]) == 3
    assert [s["window"]["start"][11:13] for s in stepped["sets"]] == ["00", "02", "04"]
    assert stepped["window"] == {"start": "2026-03-10T00:00:00Z", "end": "2026-03-10T06:00:00Z"}
    merged = summary(server, window=SIX_HOURS, aggregate="namespace", step="2h", accumulate="true")["data"]
    assert merged["step"] == 6 * 3600 * 10**9 and len(merged["sets"]) == 1
    total = sum(s["allocations"]["shop"]["totalCost"] for s in stepped["sets"])
    assert merged["sets"][0]["allocations"]["shop"]["totalCost"] == pytest.approx(total, abs=1e-4)
    future = summary(server, window="2026-03-11T00:00:00Z,2026-03-11T01:00:00Z")["data"]  # no data after now
    assert future["sets"] == [{"allocations": {}, "window": future["window"]}]


def test_filter_is_honoured_and_validated(server: OpenCostServer) -> None:
    sets = summary(server, window="24h", aggregate="namespace", filter='namespace:"shop"')["data"]["sets"]
    assert list(sets[0]["allocations"]) == ["shop"]
    by_label = summary(server, window="24h", aggregate="pod", filter='label[team]:"checkout"')["data"]["sets"]
    assert sorted(by_label[0]["allocations"]) == ["web-97375-0", "web-97375-1"]
    bad = get(server, window="24h", filter='namespace:shop"')
    assert bad.status_code == 400 and bad.json()["message"].startswith("Error: invalid 'filter' parameter")
    assert get(server, aggregate="namespace").status_code == 400  # window is required


def test_compute_alias_and_trailing_slash(server: OpenCostServer) -> None:
    plain = get(server, window=HOUR_0, aggregate="namespace")
    assert get(server, "/allocation/compute/summary", window=HOUR_0, aggregate="namespace").content == plain.content
    assert get(server, "/allocation/summary/", window=HOUR_0, aggregate="namespace").content == plain.content
    assert plain.content != get(server, "/allocation", window=HOUR_0, aggregate="namespace").content
    cached = httpx.get(
        server.url + "/allocation/summary",
        params={"window": HOUR_0, "aggregate": "namespace"},
        headers={"If-None-Match": plain.headers["ETag"]},
    )
    assert cached.status_code == 304


def test_faults_and_request_log_cover_the_summary() -> None:
    with serve(parse_scenario(SCENARIO), clock=lambda: NOW) as fresh:
        fresh.fail_next(status=503)  # default path /allocation covers /allocation/summary
        assert get(fresh, window=HOUR_0).status_code == 503
        fresh.fail_next(status=502, path="/allocation/summary")
        assert get(fresh, "/allocation", window=HOUR_0).status_code == 200
        failed = get(fresh, window=HOUR_0)
        assert failed.status_code == 502 and failed.json() == {"code": 502, "message": "Error: injected failure"}
        fresh.malformed_next(b"<html>", path="/allocation/summary")
        assert get(fresh, window=HOUR_0).content == b"<html>"
        assert get(fresh, window=HOUR_0).status_code == 200
        summary_query = {"window": HOUR_0, "_path": "/allocation/summary"}  # "_path" unless /allocation
        assert fresh.requests == [summary_query, {"window": HOUR_0}] + [summary_query] * 3
        assert [path for path, _ in fresh.calls] == ["/allocation/summary", "/allocation"] + ["/allocation/summary"] * 3
        fresh.reset()
        assert fresh.requests == [] and fresh.calls == []


def test_the_legacy_dialect_reads_as_the_current_one(server: OpenCostServer) -> None:
    start, end = datetime(2026, 3, 10, tzinfo=UTC), datetime(2026, 3, 10, 6, tzinfo=UTC)
    with serve(parse_scenario(SCENARIO), clock=lambda: NOW, legacy_summary=True) as legacy:
        raw = summary(legacy, window=SIX_HOURS, aggregate="namespace")["data"]["sets"][0]["allocations"]["shop"]
        assert "totalEfficiency" not in raw and raw["efficiency"] > 0
        empty = summary(legacy, window="2026-03-11T00:00:00Z,2026-03-11T01:00:00Z", aggregate="namespace")
        assert empty["data"]["sets"][0]["window"] == {"start": "null", "end": "null"}
        old, new = OpenCostClient(legacy.url), OpenCostClient(server.url)
        try:
            read = old.allocation_summary(start, end, aggregate="namespace")
            assert read == new.allocation_summary(start, end, aggregate="namespace")
            assert read[0]["shop"].get("totalEfficiency") == Decimal(str(raw["efficiency"]))
            future = datetime(2026, 3, 11, tzinfo=UTC), datetime(2026, 3, 11, 1, tzinfo=UTC)
            assert old.allocation_summary(*future, aggregate="namespace") == [{}]
        finally:
            old.close()
            new.close()
