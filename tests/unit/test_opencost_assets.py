"""``OpenCostClient.assets`` against hand-written ``/assets`` answers.

We test these aspects:
- nodes, disks and load balancers parse into frozen dataclasses with every figure an exact
  ``Decimal`` from its JSON text (0.1 + 0.2 is 0.3), other asset types are skipped, keys sorted;
- a missing or null figure is 0, a missing providerID is the asset's name;
- what the client asks: the hour as ``window``, accumulated, the three types in ``filterTypes``;
- a 404 is ``EndpointMissing`` (not retried); a 503 is retried, then ``OpenCostUnavailable``;
- an asset without a name, a non-finite figure, or two sets are refused, naming the asset and field.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from finops.errors import OpenCostUnavailable
from infra.opencost import EndpointMissing, OpenCostClient

START = datetime(2026, 11, 20, 10, tzinfo=UTC)
END = datetime(2026, 11, 20, 11, tzinfo=UTC)

NODE = {
    "type": "Node",
    "properties": {"category": "Compute", "cluster": "c1", "name": "node-a", "providerID": "aws:///a/i-1"},
    "minutes": 60,
    "cpuCores": 8,
    "ramBytes": 34359738368,
    "gpuCount": 0,
    "cpuCost": 0.1,
    "ramCost": 0.2,
    "gpuCost": 0,
    "discount": 0,
    "adjustment": -0.00001,
    "totalCost": 0.29999,
}


def client_for(handler: Any, **kw: Any) -> OpenCostClient:
    return OpenCostClient("http://opencost", transport=httpx.MockTransport(handler), backoff=0, **kw)


def answering(data: Any, status: int = 200) -> Any:
    content = json.dumps({"code": status, "status": "success", "data": data}).encode()
    return lambda request: httpx.Response(status, content=content)


def test_assets_parse_exactly_into_dataclasses() -> None:
    data = [
        {
            "c1/Node/i-1": NODE,
            "c1/Disk/vol-1": {"type": "Disk", "properties": {"name": "pvc-1", "providerID": "vol-1"}, "bytes": 1e3,
                              "byteHours": 1000, "adjustment": None, "totalCost": 0.012},
            "c1/LoadBalancer/ip": {"type": "LoadBalancer", "properties": {"name": "ns/lb"}, "totalCost": 0.025},
            "c1/Network": {"type": "Network", "properties": {"name": "net"}, "totalCost": 1},
        }
    ]  # fmt: skip
    assets = client_for(answering(data)).assets(START, END)
    assert len(assets) == 3
    [node] = assets.nodes
    assert node.cpu_cost + node.ram_cost == Decimal("0.3")  # as written, never a float
    assert (node.key, node.name, node.provider_id, node.cluster) == ("c1/Node/i-1", "node-a", "aws:///a/i-1", "c1")
    assert node.adjustment == Decimal("-0.00001") and node.total_cost == Decimal("0.29999")
    assert node.cpu_cores == 8 and node.ram_bytes == 32 * 2**30 and node.minutes == 60
    [disk] = assets.disks
    assert disk.adjustment == 0 and disk.bytes == 1000 and disk.total_cost == Decimal("0.012")
    [lb] = assets.load_balancers
    assert lb.provider_id == "ns/lb" and lb.total_cost == Decimal("0.025")
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.total_cost = Decimal(0)  # type: ignore[misc]


def test_the_request_asks_for_the_hour_accumulated() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"code": 200, "data": [{}]})

    assert len(client_for(handler).assets(START, END)) == 0
    [request] = seen
    assert request.url.path == "/assets"
    assert dict(request.url.params) == {
        "window": "2026-11-20T10:00:00Z,2026-11-20T11:00:00Z",
        "accumulate": "true",
        "filterTypes": "Node,Disk,LoadBalancer",
    }


def test_a_404_is_endpoint_missing_and_not_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(404, text="404 page not found")

    with pytest.raises(EndpointMissing, match="does not serve /assets"):
        client_for(handler, retries=3).assets(START, END)
    assert len(calls) == 1


def test_a_503_is_retried_then_unavailable() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503, text="busy")

    with pytest.raises(OpenCostUnavailable) as caught:
        client_for(handler, retries=2).assets(START, END)
    assert not isinstance(caught.value, EndpointMissing) and len(calls) == 3


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"k": {**NODE, "properties": {"providerID": "i-1"}}}], "Node asset 'k' without properties.name"),
        ([{"k": {**NODE, "cpuCost": "NaN"}}], r"data\.0\.k\.cpuCost: Input should be a finite number"),
        ([{}, {}], "2 sets"),
    ],
    ids=["no-name", "nan", "two-sets"],
)
def test_bad_answers_are_refused_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(OpenCostUnavailable, match=message):
        client_for(answering(data)).assets(START, END)
