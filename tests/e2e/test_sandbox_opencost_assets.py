"""The sandbox's ``/assets`` over real HTTP, checked against its own ``/allocation`` answer.

We test these aspects:

* a Node asset per node with its providerID, capacity and OpenCost's field names;
* per node and resource: the node's cost = Σ its allocations' unadjusted cost + its share of idle,
  and the shares add up to ``__idle__`` (to the JSON's rounding: 5 decimals per figure);
* the node's ``adjustment`` is its allocations' cpu/gpu/ram adjustments, in ``totalCost``;
* Disk assets carry the providerID the allocations' ``pvs`` report, with their cost; load
  balancers their Service's cost; ``filterTypes`` narrows; an unknown type is a 400;
* ``assets=False`` answers 404 (OpenCost without the assets API).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox.opencost import OpenCostServer, load_scenario, parse_scenario, serve
from tests.e2e.test_sandbox_opencost_api import MULTI

DEMO = Path(__file__).resolve().parents[2] / "sandbox" / "demo" / "scenario.yaml"
NOW = datetime(2026, 3, 10, 14, 25, 30, tzinfo=UTC)
HOUR = "2026-03-10T09:00:00Z,2026-03-10T10:00:00Z"
ROUNDING = Decimal("0.000005")  # each figure of the JSON is rounded to 5 decimals


def clock() -> datetime:
    return NOW


@pytest.fixture(scope="module")
def demo() -> Iterator[OpenCostServer]:
    with serve(load_scenario(DEMO), clock=clock) as server:
        yield server


@pytest.fixture(scope="module")
def multi() -> Iterator[OpenCostServer]:
    doc = copy.deepcopy(MULTI)
    doc["nodes"][0]["providerID"] = "aws:///eu-west-1a/i-n1"
    doc["workloads"][2]["costAdjustment"] = {"cpu": -0.5, "gpu": 0.25}
    with serve(parse_scenario(doc), clock=clock) as server:
        yield server


def get(server: OpenCostServer, path: str, **params: str) -> httpx.Response:
    return httpx.get(server.url + path, params=params, timeout=10)


def exact(body: httpx.Response) -> Any:
    return body.json(parse_float=Decimal, parse_int=Decimal)


def allocations(server: OpenCostServer) -> dict[str, Any]:
    params = {"window": HOUR, "aggregate": "pod", "accumulate": "true", "includeIdle": "true"}
    body = exact(get(server, "/allocation", **params))
    [step] = body["data"]
    return step  # type: ignore[no-any-return]


def assets(server: OpenCostServer, path: str = "/assets", **params: str) -> dict[str, Any]:
    answer = get(server, path, window=HOUR, **params)
    assert answer.status_code == 200, answer.text
    body = exact(answer)
    assert body["code"] == 200
    [step] = body["data"]
    return step  # type: ignore[no-any-return]


@pytest.mark.parametrize("server_name", ["demo", "multi"])
def test_each_nodes_cost_is_its_allocations_plus_its_idle(server_name: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(server_name)
    allocs = allocations(server)
    nodes = [a for a in assets(server).values() if a["type"] == "Node"]
    assert nodes
    idle = allocs["__idle__"]
    shares = {"cpu": Decimal(0), "gpu": Decimal(0), "ram": Decimal(0)}
    for node in nodes:
        name = node["properties"]["name"]
        mine = [a for k, a in allocs.items() if k != "__idle__" and a["properties"].get("node") == name]
        slack = ROUNDING * (len(mine) + 1)
        for resource in shares:
            used = sum((a[f"{resource}Cost"] for a in mine), Decimal(0))
            share = node[f"{resource}Cost"] - used
            shares[resource] += share
            assert share >= -slack, (name, resource)  # the sandbox never overcommits a node
        adjustments = sum(
            (a["cpuCostAdjustment"] + a["gpuCostAdjustment"] + a["ramCostAdjustment"] for a in mine), Decimal(0)
        )
        assert abs(node["adjustment"] - adjustments) <= slack, name
        parts = node["cpuCost"] + node["ramCost"] + node["gpuCost"] + node["adjustment"]
        assert abs(node["totalCost"] - parts) <= ROUNDING * 5, name  # five rounded figures
    slack = ROUNDING * (len(allocs) + len(nodes))
    for resource, share in shares.items():
        assert abs(share - idle[f"{resource}Cost"]) <= slack, resource


def test_node_assets_carry_provider_ids_and_opencosts_fields(demo: OpenCostServer, multi: OpenCostServer) -> None:
    by_name = {a["properties"]["name"]: a for a in assets(demo).values() if a["type"] == "Node"}
    node_a = by_name["node-a"]
    assert node_a["properties"] == {
        "category": "Compute",
        "cluster": node_a["properties"]["cluster"],
        "name": "node-a",
        "providerID": "aws:///eu-west-1a/i-0a1b2c3d4e5f60001",
    }
    assert node_a["cpuCores"] == 8 and node_a["ramBytes"] == 32 * 1024**3
    assert node_a["minutes"] == 60 and node_a["discount"] == 0
    assert node_a["start"] == "2026-03-10T09:00:00Z" and node_a["end"] == "2026-03-10T10:00:00Z"
    for field in ("gpuCount", "cpuCost", "ramCost", "gpuCost", "adjustment", "totalCost", "window"):
        assert field in node_a
    providers = {a["properties"]["name"]: a["properties"]["providerID"] for a in assets(multi).values()}
    assert providers["n1"] == "aws:///eu-west-1a/i-n1"
    assert providers["n2"] == "n2"  # no providerID in the scenario: the node's name, as the allocations say


def test_disks_and_load_balancers_match_the_allocations(multi: OpenCostServer) -> None:
    allocs = allocations(multi)
    pv_costs: dict[str, Decimal] = {}
    for a in allocs.values():
        for pv in (a.get("pvs") or {}).values():
            pv_costs[pv["providerID"]] = pv_costs.get(pv["providerID"], Decimal(0)) + pv["cost"]
    found = assets(multi)
    disks = {a["properties"]["providerID"]: a for a in found.values() if a["type"] == "Disk"}
    assert set(disks) == set(pv_costs) == {"pvc-web-data", "pvc-orphan", "pv-old"}
    for provider, cost in pv_costs.items():
        assert abs(disks[provider]["totalCost"] - cost) <= ROUNDING * 4, provider
    assert disks["pv-old"]["bytes"] == 10 * 1024**3 and disks["pv-old"]["byteHours"] == 10 * 1024**3
    [lb] = [a for a in found.values() if a["type"] == "LoadBalancer"]
    assert lb["properties"]["name"] == "shop/web-lb" and lb["properties"]["providerID"] == lb["ip"]
    assert lb["totalCost"] == Decimal("0.025")


def test_filter_types_and_the_model_path(multi: OpenCostServer) -> None:
    nodes = assets(multi, filterTypes="node")
    assert {a["type"] for a in nodes.values()} == {"Node"} and len(nodes) == 2
    both = assets(multi, "/model/assets", filterTypes="Disk,LoadBalancer")
    assert {a["type"] for a in both.values()} == {"Disk", "LoadBalancer"}
    bad = get(multi, "/assets", window=HOUR, filterTypes="Cloud")
    assert bad.status_code == 400 and "filterTypes" in bad.json()["message"]
    assert get(multi, "/assets").status_code == 400  # window is required


def test_a_window_without_data_has_no_assets(multi: OpenCostServer) -> None:
    answer = get(multi, "/assets", window="2026-03-11T09:00:00Z,2026-03-11T10:00:00Z")  # after NOW
    assert exact(answer)["data"] == [{}]


def test_without_the_assets_api_the_answer_is_404() -> None:
    with serve(parse_scenario(MULTI), clock=clock, assets=False) as server:
        assert get(server, "/assets", window=HOUR).status_code == 404
        assert get(server, "/allocation", window=HOUR).status_code == 200
