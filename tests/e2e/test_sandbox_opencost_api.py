"""The OpenCost sandbox over real HTTP: cost model, windows, aggregation, idle, faults.

Every test talks to ``serve(...)`` on an ephemeral port with httpx, exactly as the product will
talk to a real OpenCost. Expected figures are worked out by hand in the comments.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox.opencost import OpenCostServer, load_scenario, parse_scenario, serve, synthetic

GIB = 1024**3
DEMO = Path(__file__).resolve().parents[2] / "sandbox" / "demo" / "scenario.yaml"
NOW = datetime(2026, 3, 10, 14, 25, 30, tzinfo=UTC)
HOUR_0 = "2026-03-10T00:00:00Z,2026-03-10T01:00:00Z"


def clock() -> datetime:
    return NOW


def tiny(gpus: int = 0) -> dict[str, Any]:
    return {
        "cluster": "tiny",
        "nodes": [
            {"name": "n1", "cpuCores": 4, "ramGiB": 16, "gpus": gpus, "cpuHourly": "0.03", "ramGiBHourly": "0.004"}
        ],
        "namespaces": [{"name": "shop", "labels": {"team": "checkout"}}],
        "workloads": [
            {
                "namespace": "shop",
                "kind": "Deployment",
                "name": "web",
                "containers": [{"name": "app", "request": {"cpu": 1, "ramGiB": 2}, "usage": {"cpu": 0.5, "ramGiB": 3}}],
            }
        ],
    }


MULTI: dict[str, Any] = {
    "cluster": "multi",
    "nodes": [
        {"name": "n1", "cpuCores": 4, "ramGiB": 16},
        {"name": "n2", "cpuCores": 4, "ramGiB": 16, "gpus": 1, "gpuHourly": "0.9"},
    ],
    "namespaces": [
        {"name": "shop", "labels": {"team": "checkout", "cost-center": "cc-1234"}},
        {"name": "search", "labels": {"team": "discovery", "cost-center": "cc-2"}},
        {"name": "legacy"},
    ],
    "workloads": [
        {
            "namespace": "shop",
            "kind": "Deployment",
            "name": "web",
            "replicas": 2,
            "containers": [
                {"name": "app", "request": {"cpu": 0.5, "ramGiB": 1}, "usage": {"cpu": [0.2, 0.3, 0.7], "ramGiB": 0.8}},
                {"name": "proxy", "request": {"cpu": 0.1, "ramGiB": 0.25}, "usage": {"cpu": 0.05, "ramGiB": 0.1}},
            ],
            "pvs": [{"name": "pvc-web-data", "sizeGiB": 20}],
            "loadBalancers": [{"name": "web-lb", "hourly": "0.025"}],
            "networkBytesPerHour": {"transfer": 2 * GIB, "receive": GIB},
        },
        {
            "namespace": "shop",
            "kind": "StatefulSet",
            "name": "db",
            "node": "n1",
            "labels": {"team": "dba"},
            "containers": [{"name": "db", "request": {"cpu": 1, "ramGiB": 4}, "usage": {"cpu": 0.6, "ramGiB": 3}}],
        },
        {
            "namespace": "search",
            "kind": "Deployment",
            "name": "api",
            "node": "n2",
            "containers": [
                {"name": "api", "request": {"cpu": 0.5, "ramGiB": 1, "gpu": 1}, "usage": {"cpu": 0.9, "ramGiB": 1.5}}
            ],
        },
        {
            "namespace": "search",
            "kind": "CronJob",
            "name": "reindex",
            "schedule": {"every": "1h", "runFor": "15m"},
            "containers": [{"name": "job", "request": {"cpu": 1, "ramGiB": 2}, "usage": {"cpu": 1.2, "ramGiB": 1}}],
        },
        {
            "namespace": "legacy",
            "kind": "Pod",
            "name": "debug",
            "node": "n1",
            "containers": [{"name": "shell", "request": {"cpu": 0.1, "ramGiB": 0.1}, "usage": {"cpu": 0.01}}],
        },
    ],
    "unmountedPVs": [{"namespace": "shop", "name": "pvc-orphan", "sizeGiB": 5}, {"name": "pv-old", "sizeGiB": 10}],
}


@pytest.fixture(scope="module")
def multi() -> Iterator[OpenCostServer]:
    with serve(parse_scenario(MULTI), clock=clock) as server:
        yield server


@pytest.fixture(scope="module")
def tiny_server() -> Iterator[OpenCostServer]:
    with serve(parse_scenario(tiny()), clock=clock) as server:
        yield server


def get(server: OpenCostServer, path: str = "/allocation", **params: str) -> httpx.Response:
    return httpx.get(server.url + path, params=params, timeout=30)


def sets(server: OpenCostServer, **params: str) -> list[dict[str, Any]]:
    response = get(server, **params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["code"] == 200 and body["status"] == "success"
    data: list[dict[str, Any]] = body["data"]
    return data


def one(server: OpenCostServer, **params: str) -> dict[str, Any]:
    data = sets(server, **params)
    assert len(data) == 1
    return data[0]


def total(allocs: dict[str, Any]) -> float:
    return float(sum(a["totalCost"] for a in allocs.values()))


# -- the cost formula, by hand ------------------------------------------------------------------------


def test_cost_formula_and_idle_by_hand(tiny_server: OpenCostServer) -> None:
    allocs = one(tiny_server, window=HOUR_0, includeIdle="true")
    assert sorted(allocs) == ["__idle__", next(k for k in allocs if k.endswith("/app"))]
    app = next(a for k, a in allocs.items() if k != "__idle__")
    assert app["name"].startswith("tiny/n1/shop/web-") and app["name"].endswith("/app")
    # cpu: max(request 1, usage 0.5) = 1 core for 1 h at 0.03
    assert (app["cpuCoreHours"], app["cpuCores"], app["cpuCost"]) == (1, 1, 0.03)
    assert (app["cpuCoreRequestAverage"], app["cpuCoreUsageAverage"], app["cpuEfficiency"]) == (1, 0.5, 0.5)
    # ram: max(request 2 GiB, usage 3 GiB) = 3 GiB for 1 h at 0.004 per GiB-hour
    assert app["ramByteHours"] == 3 * GIB and app["ramBytes"] == 3 * GIB
    assert app["ramCost"] == 0.012 and app["ramEfficiency"] == 1.5
    assert app["totalCost"] == 0.042 and app["minutes"] == 60
    # totalEfficiency is cost-weighted: (0.5*0.03 + 1.5*0.012) / 0.042
    assert app["totalEfficiency"] == round((0.5 * 0.03 + 1.5 * 0.012) / 0.042, 5)
    assert app["rawAllocationOnly"] == {"cpuCoreUsageMax": 0.5, "ramByteUsageMax": 3 * GIB}
    labels = app["properties"]["labels"]
    assert labels == {"app": "web", "kubernetes_io_metadata_name": "shop", "team": "checkout"}
    # idle = capacity - allocated: cpu 4*0.03 - 0.03, ram 16*0.004 - 0.012
    idle = allocs["__idle__"]
    assert (idle["cpuCost"], idle["ramCost"], idle["gpuCost"], idle["totalCost"]) == (0.09, 0.052, 0, 0.142)
    assert idle["properties"] == {"cluster": "tiny"} and idle["cpuCoreHours"] == 0


def test_cost_adjustments_by_hand() -> None:
    doc = tiny()
    doc["workloads"][0]["costAdjustment"] = {"cpu": -0.5, "ram": 0.25}
    with serve(parse_scenario(doc), clock=clock) as server:
        allocs = one(server, window=HOUR_0, includeIdle="true")
        idle = allocs.pop("__idle__")
        (app,) = allocs.values()
        # cost stays the list price; the adjustment is fraction x cost: cpu -0.5 x 0.03, ram 0.25 x 0.012
        assert (app["cpuCost"], app["cpuCostAdjustment"]) == (0.03, -0.015)
        assert (app["ramCost"], app["ramCostAdjustment"]) == (0.012, 0.003)
        assert app["gpuCostAdjustment"] == app["pvCostAdjustment"] == app["networkCostAdjustment"] == 0
        # OpenCost's TotalCost(): 0.03 - 0.015 + 0.012 + 0.003
        assert app["totalCost"] == 0.03
        # cost-weighted over the adjusted costs: (0.5 x 0.015 + 1.5 x 0.015) / 0.03
        assert app["totalEfficiency"] == 1
        # idle is capacity minus the unadjusted costs, as without adjustments
        assert (idle["cpuCost"], idle["ramCost"], idle["cpuCostAdjustment"]) == (0.09, 0.052, 0)
        # adjustments add up like costs; /allocation/summary folds them into each cost
        shop = one(server, window=HOUR_0, aggregate="namespace", step="30m", accumulate="true")["shop"]
        assert (shop["cpuCostAdjustment"], shop["ramCostAdjustment"], shop["totalCost"]) == (-0.015, 0.003, 0.03)
        summary = get(server, "/allocation/summary", window=HOUR_0, aggregate="namespace").json()
        condensed = summary["data"]["sets"][0]["allocations"]["shop"]
        assert (condensed["cpuCost"], condensed["ramCost"], condensed["totalCost"]) == (0.015, 0.015, 0.03)


def test_every_documented_field_is_present(multi: OpenCostServer) -> None:
    fields = (
        "name",
        "properties",
        "window",
        "start",
        "end",
        "minutes",
        "cpuCores",
        "cpuCoreRequestAverage",
        "cpuCoreUsageAverage",
        "cpuCoreHours",
        "cpuCost",
        "cpuCostAdjustment",
        "cpuEfficiency",
        "gpuCount",
        "gpuHours",
        "gpuCost",
        "gpuCostAdjustment",
        "networkTransferBytes",
        "networkReceiveBytes",
        "networkCost",
        "networkCostAdjustment",
        "loadBalancerCost",
        "loadBalancerCostAdjustment",
        "lbAllocations",
        "pvBytes",
        "pvByteHours",
        "pvCost",
        "pvs",
        "pvCostAdjustment",
        "ramBytes",
        "ramByteRequestAverage",
        "ramByteUsageAverage",
        "ramByteHours",
        "ramCost",
        "ramCostAdjustment",
        "ramEfficiency",
        "externalCost",
        "sharedCost",
        "totalCost",
        "totalEfficiency",
        "rawAllocationOnly",
        "proportionalAssetResourceCosts",
        "sharedCostBreakdown",
    )
    for allocs in (one(multi, window=HOUR_0, includeIdle="true"), one(multi, window=HOUR_0, aggregate="namespace")):
        for alloc in allocs.values():
            assert not set(fields) - set(alloc), alloc["name"]


def test_partial_hour_is_minute_weighted() -> None:
    doc = tiny()
    doc["workloads"][0]["start"] = "2026-03-10T10:30:00Z"
    doc["workloads"][0]["containers"][0] = {
        "name": "app",
        "request": {"cpu": 0.5, "ramGiB": 1},
        "usage": {"cpu": [0.2, 0.8], "ramGiB": 0.5},  # hour 10 -> 0.2, hour 11 -> 0.8
    }
    window = "2026-03-10T10:00:00Z,2026-03-10T12:00:00Z"
    with serve(parse_scenario(doc), clock=clock) as server:
        (app,) = one(server, window=window).values()
        # 30 min billed at max(0.5, 0.2) + 60 min billed at max(0.5, 0.8)
        assert app["start"] == "2026-03-10T10:30:00Z" and app["minutes"] == 90
        assert app["cpuCoreHours"] == 0.5 * 0.5 + 0.8 * 1.0 == 1.05
        assert app["cpuCost"] == round(1.05 * 0.03, 5)
        assert app["cpuCores"] == 0.7  # 1.05 core-hours / 1.5 h
        assert app["cpuCoreUsageAverage"] == 0.6  # (0.2*30 + 0.8*60) / 90
        assert app["cpuCoreRequestAverage"] == 0.5
        assert app["ramByteHours"] == 1.5 * GIB
        first, second = sets(server, window=window, step="1h")
        (a,), (b,) = first.values(), second.values()
        assert (a["minutes"], a["cpuCoreHours"], b["minutes"], b["cpuCoreHours"]) == (30, 0.25, 60, 0.8)
        (acc,) = one(server, window=window, step="1h", accumulate="true").values()
        assert acc["cpuCoreUsageAverage"] == 0.6 and acc["cpuCoreHours"] == 1.05 and acc["minutes"] == 90


# -- steps and accumulation --------------------------------------------------------------------------


def test_step_sets_and_accumulate(multi: OpenCostServer) -> None:
    window = "2026-03-09T00:00:00Z,2026-03-09T06:00:00Z"
    hourly = sets(multi, window=window, step="1h", aggregate="namespace")
    assert len(hourly) == 6
    assert [s["shop"]["window"]["start"] for s in hourly] == [f"2026-03-09T0{h}:00:00Z" for h in range(6)]
    whole = one(multi, window=window, aggregate="namespace")
    accumulated = one(multi, window=window, step="1h", aggregate="namespace", accumulate="true")
    assert set(accumulated) == set(whole)
    for key, alloc in whole.items():
        assert accumulated[key]["totalCost"] == pytest.approx(alloc["totalCost"], abs=1e-4)
        assert accumulated[key]["window"] == {"start": "2026-03-09T00:00:00Z", "end": "2026-03-09T06:00:00Z"}
    assert total(whole) == pytest.approx(sum(total(s) for s in hourly), abs=1e-3)
    by_day = sets(multi, window="2026-03-07T00:00:00Z,2026-03-09T00:00:00Z", step="6h", accumulate="day")
    assert len(by_day) == 2


def test_sets_without_data_are_still_returned(multi: OpenCostServer) -> None:
    # NOW is 14:25:30, the sandbox has no data after 14:25 (dataUntilNow), like a real OpenCost
    data = sets(multi, window="2026-03-10T13:00:00Z,2026-03-10T17:00:00Z", step="1h", includeIdle="true")
    assert len(data) == 4 and data[2] == {} and data[3] == {}
    partial = data[1]["__idle__"]
    assert partial["end"] == "2026-03-10T14:25:00Z" and partial["minutes"] == 25
    assert partial["window"]["end"] == "2026-03-10T15:00:00Z"


# -- aggregation ------------------------------------------------------------------------------------


def test_aggregation_keys(multi: OpenCostServer) -> None:
    def keys(**params: str) -> set[str]:
        return set(one(multi, window=HOUR_0, **params))

    assert keys(aggregate="controller") == {
        "deployment:web",
        "statefulset:db",
        "deployment:api",
        "job:reindex",
        "__unallocated__",
    }
    assert keys(aggregate="controllerKind") == {"deployment", "statefulset", "job", "__unallocated__"}
    assert keys(aggregate="namespace") == {"shop", "search", "legacy", "__unmounted__"}
    assert keys(aggregate="namespace,label:team") == {
        "shop/checkout",
        "shop/dba",
        "search/discovery",
        "legacy/__unallocated__",
        "shop/__unallocated__",
        "__unmounted__/__unallocated__",
    }
    assert keys(aggregate="label:cost-center") == {"cc-1234", "cc-2", "__unallocated__"}
    assert keys(aggregate="cluster") == {"multi"}
    assert keys(aggregate="deployment") == {"web", "api", "__unallocated__"}
    per_container = keys()
    assert "multi/n1/legacy/debug/shell" in per_container
    assert "multi//shop/shop-unmounted-pvcs/__unmounted__" in per_container
    assert "multi//__unmounted__/__unmounted__/__unmounted__" in per_container
    assert len([k for k in per_container if "/shop/web-" in k]) == 4  # 2 replicas x 2 containers
    assert any("/search/reindex-" in k for k in per_container)  # the CronJob's run in this hour


def test_aggregated_properties_and_sums(multi: OpenCostServer) -> None:
    containers = one(multi, window=HOUR_0, filter='namespace:"shop"')
    shop = one(multi, window=HOUR_0, aggregate="namespace")["shop"]
    for field in ("cpuCost", "ramCost", "pvCost", "loadBalancerCost", "networkCost", "totalCost", "cpuCoreHours"):
        assert shop[field] == pytest.approx(sum(a[field] for a in containers.values()), abs=1e-4), field
    # same span for every member: averages add up (OpenCost's Allocation.add)
    requests = sum(a["cpuCoreRequestAverage"] for a in containers.values())
    assert shop["cpuCoreRequestAverage"] == pytest.approx(requests, abs=1e-4)
    props = shop["properties"]
    assert props["namespace"] == "shop" and props["cluster"] == "multi"
    assert props["namespaceLabels"]["cost_center"] == "cc-1234"
    assert "labels" not in props and "pod" not in props and "controller" not in props
    assert shop["pvs"]["cluster=multi:name=pvc-web-data"]["cost"] > 0
    assert shop["pvs"]["cluster=multi:name=pvc-orphan"]["providerID"] == "pvc-orphan"
    assert shop["lbAllocations"]["multi/shop/web-lb"]["cost"] == 0.025 and shop["rawAllocationOnly"] is None
    kept = one(multi, window=HOUR_0, aggregate="controller", includeAggregatedMetadata="true")["deployment:web"]
    assert kept["properties"]["labels"]["team"] == "checkout"


def test_pod_labels_win_over_namespace_labels(multi: OpenCostServer) -> None:
    db = one(multi, window=HOUR_0, aggregate="controller")["statefulset:db"]
    assert db["properties"]["labels"]["team"] == "dba"
    assert db["properties"]["namespaceLabels"]["team"] == "checkout"


# -- filter ------------------------------------------------------------------------------------------


def test_filter_by_namespace(multi: OpenCostServer) -> None:
    shop = one(multi, window=HOUR_0, aggregate="namespace", filter='namespace:"shop"')
    assert set(shop) == {"shop"}
    both = one(multi, window=HOUR_0, aggregate="namespace", filter='namespace:"shop","legacy"')
    assert set(both) == {"shop", "legacy"}
    others = one(multi, window=HOUR_0, aggregate="namespace", filter='namespace!:"shop"')
    assert "shop" not in others and {"search", "legacy"} <= set(others)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ('services:"a"', "'services'"),
        ('bogus:"a"', "'bogus'"),
        ("namespace:shop", "double-quoted"),
        ('namespace"a"', ""),
    ],
)
def test_bad_filters_are_rejected(multi: OpenCostServer, value: str, needle: str) -> None:
    response = get(multi, window=HOUR_0, filter=value)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 400 and body["message"].startswith("Error: ") and needle in body["message"]


# -- idle --------------------------------------------------------------------------------------------


def test_share_idle_conserves_the_total(multi: OpenCostServer) -> None:
    window = "2026-03-09T00:00:00Z,2026-03-10T00:00:00Z"
    with_idle = one(multi, window=window, aggregate="namespace", includeIdle="true")
    shared = one(multi, window=window, aggregate="namespace", includeIdle="true", shareIdle="true")
    assert "__idle__" in with_idle and "__idle__" not in shared
    assert total(shared) == pytest.approx(total(with_idle), abs=1e-3)
    idle_cpu, shop_cpu = with_idle["__idle__"]["cpuCost"], with_idle["shop"]["cpuCost"]
    cluster_cpu = sum(a["cpuCost"] for k, a in with_idle.items() if k != "__idle__")
    assert shared["shop"]["cpuCost"] == pytest.approx(shop_cpu + idle_cpu * shop_cpu / cluster_cpu, abs=1e-4)
    assert shared["shop"]["pvCost"] == with_idle["shop"]["pvCost"]  # only cpu/gpu/ram carry idle
    alone = one(
        multi, window=window, aggregate="namespace", includeIdle="true", shareIdle="true", filter='namespace:"shop"'
    )
    assert alone["shop"]["totalCost"] == pytest.approx(shared["shop"]["totalCost"], abs=1e-4)
    assert one(multi, window=window, aggregate="namespace", shareIdle="true") == one(
        multi, window=window, aggregate="namespace"
    )  # shareIdle needs includeIdle=true


def test_unshareable_gpu_idle_stays_in_idle() -> None:
    with serve(parse_scenario(tiny(gpus=1)), clock=clock) as server:
        allocs = one(server, window=HOUR_0, includeIdle="true", shareIdle="true")
        idle = allocs.pop("__idle__")
        (app,) = allocs.values()
        assert (idle["cpuCost"], idle["ramCost"], idle["gpuCost"]) == (0, 0, 0.95)
        assert (app["cpuCost"], app["ramCost"]) == (0.12, 0.064)  # the whole node's cpu and ram


def test_filter_keeps_only_the_filtered_share_of_idle(multi: OpenCostServer) -> None:
    everything = one(multi, window=HOUR_0, aggregate="namespace", includeIdle="true")
    shop = one(multi, window=HOUR_0, aggregate="namespace", includeIdle="true", filter='namespace:"shop"')
    assert set(shop) == {"shop", "__idle__"}
    for resource in ("cpuCost", "ramCost"):
        cluster = sum(a[resource] for k, a in everything.items() if k != "__idle__")
        expected = everything["__idle__"][resource] * everything["shop"][resource] / cluster
        assert shop["__idle__"][resource] == pytest.approx(expected, abs=1e-4)


# -- windows and errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "start", "end"),
    [
        ("24h", "2026-03-09T15:00:00Z", "2026-03-10T15:00:00Z"),
        ("30m", "2026-03-10T13:56:00Z", "2026-03-10T14:26:00Z"),
        ("7d", "2026-03-04T00:00:00Z", "2026-03-11T00:00:00Z"),
        ("1w", "2026-03-04T00:00:00Z", "2026-03-11T00:00:00Z"),
        ("today", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z"),
        ("yesterday", "2026-03-09T00:00:00Z", "2026-03-10T00:00:00Z"),
        ("1773100800,1773104400", "2026-03-10T00:00:00Z", "2026-03-10T01:00:00Z"),
        ("2026-03-01T00:00:00Z,2026-03-02T00:00:00Z", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"),
        ("2026-03-01T01:00:00+01:00,2026-03-02T00:00:00Z", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"),
    ],
)
def test_window_formats(multi: OpenCostServer, window: str, start: str, end: str) -> None:
    idle = one(multi, window=window, includeIdle="true", aggregate="cluster")["__idle__"]
    assert idle["window"] == {"start": start, "end": end}
    assert idle["end"] <= "2026-03-10T14:25:00Z"  # never data from the future


@pytest.mark.parametrize(
    "params",
    [
        {"window": "bogus"},
        {"window": "24x"},
        {"window": "2026-03-02T00:00:00Z"},
        {"window": "2026-03-02T00:00:00Z,2026-03-01T00:00:00Z"},
        {},
        {"window": "24h", "step": "soon"},
        {"window": "7d", "step": "1m"},  # more sets than the sandbox computes
        {"window": "24h", "aggregate": "bogus"},
        {"window": "24h", "accumulate": "fortnight"},
    ],
)
def test_invalid_parameters_answer_400(multi: OpenCostServer, params: dict[str, str]) -> None:
    response = get(multi, **params)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"code", "message"} and body["code"] == 400 and body["message"].startswith("Error: ")


def test_compute_route_health_and_unknown_parameters(multi: OpenCostServer) -> None:
    plain = get(multi, window=HOUR_0, aggregate="namespace")
    compute = get(multi, "/allocation/compute", window=HOUR_0, aggregate="namespace", unknownParam="x")
    assert plain.content == compute.content
    health = httpx.get(multi.url + "/healthz")
    assert health.status_code == 200
    assert httpx.get(multi.url + "/nope").status_code == 404


def test_relative_times_follow_the_clock() -> None:
    with serve(load_scenario(DEMO), clock=clock) as server:
        allocs = one(server, window="48h", aggregate="controller", accumulate="true")
        # start "-6h": now (14:25:30) truncated to the hour, minus 6 hours
        assert allocs["deployment:gateway-canary"]["start"] == "2026-03-10T08:00:00Z"
        assert allocs["deployment:payments-gateway"]["start"] == "2026-03-08T15:00:00Z"
        assert allocs["deployment:payments-gateway"]["end"] == "2026-03-10T14:25:00Z"


# -- determinism, caching and faults -----------------------------------------------------------------


def test_responses_are_deterministic_and_cached(multi: OpenCostServer) -> None:
    params = {"window": "2026-03-09T00:00:00Z,2026-03-10T00:00:00Z", "step": "6h", "includeIdle": "true"}
    first = get(multi, **params)
    computed = multi.app.computations
    again = get(multi, **params)
    assert again.content == first.content and multi.app.computations == computed  # served from the cache
    with serve(parse_scenario(MULTI), clock=clock) as fresh:
        assert get(fresh, **params).content == first.content  # recomputed from scratch: same bytes
    etag = first.headers["ETag"]
    cached = httpx.get(multi.url + "/allocation", params=params, headers={"If-None-Match": etag})
    assert cached.status_code == 304


def test_fault_injection_and_request_log() -> None:
    with serve(parse_scenario(tiny()), clock=clock) as server:
        server.fail_next(status=503, times=2)
        assert [get(server, window=HOUR_0).status_code for _ in range(3)] == [503, 503, 200]
        assert get(server, window=HOUR_0).status_code == 200
        server.fail_next()
        failed = get(server, window=HOUR_0)
        assert failed.status_code == 500 and failed.json()["code"] == 500
        assert httpx.get(server.url + "/healthz").status_code == 200  # faults target /allocation by default
        server.malformed_next(b"{not json")
        broken = get(server, window=HOUR_0)
        assert broken.status_code == 200 and broken.content == b"{not json"
        with pytest.raises(json.JSONDecodeError):
            broken.json()
        server.delay_next(0.3)
        started = time.perf_counter()
        assert get(server, window=HOUR_0).status_code == 200
        assert time.perf_counter() - started >= 0.3
        assert len(server.requests) == 7 and server.requests[0] == {"window": HOUR_0}


def test_synthetic_20k_container_hour() -> None:
    scenario = synthetic(20_000)
    with serve(scenario) as server:
        started = time.perf_counter()
        response = get(server, window="2026-01-01T00:00:00Z,2026-01-01T01:00:00Z")
        elapsed = time.perf_counter() - started
        data = response.json()["data"]
        print(
            f"\nsynthetic 20k containers, one hour, container level: {elapsed:.3f} s, {len(response.content):,} bytes"
        )
        assert response.status_code == 200 and len(data[0]) == 20_000
        repeat = get(server, window="2026-01-01T00:00:00Z,2026-01-01T01:00:00Z")
        assert repeat.content == response.content and server.app.computations == 1
