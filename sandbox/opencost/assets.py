"""``/assets`` (also ``/model/assets``): what each node, disk and load balancer cost in a window.

Why the assets are derived from the same raw allocations as ``/allocation``: the collector matches
the cloud bill's lines to assets by ``providerID`` and reads each node's idle as the node's cost
minus what its allocations were charged, so the two answers must agree to the rounding of their
JSON (5 decimals per figure). For a window clipped to the data range ``[lo, hi)``:

* a Node asset's ``cpuCost``/``ramCost``/``gpuCost`` are its capacity's cost (cores x hours x
  price, likewise GiB and GPUs): exactly what ``/allocation``'s idle is measured against, so per
  resource the node's cost = Σ its allocations' unadjusted cost + its share of ``__idle__``, and
  the nodes' shares add up to the cluster's idle. Its ``adjustment`` is the Σ of its allocations'
  cpu/gpu/ram ``*CostAdjustment`` (a workload's ``costAdjustment``: the bill differing from list
  prices); ``totalCost`` = cpu + ram (times 1 - ``discount``, always 0 here) + gpu + adjustment,
  OpenCost's ``Node.TotalCost``;
* a Disk asset per volume the allocations' ``pvs`` report (``properties.providerID`` is that
  entry's ``providerID``; ``name`` the volume), unmounted ones included: ``byteHours`` and the cost
  are the Σ over the allocations, ``bytes`` = byteHours / hours;
* a LoadBalancer asset per Service of type LoadBalancer: ``name`` ``<namespace>/<service>``,
  ``providerID`` its IP (as OpenCost reports a cloud load balancer), cost the Σ of the
  allocations' ``lbAllocations`` shares.

Parameters: ``window`` (required, the forms ``/allocation`` accepts); ``filterTypes`` (a comma list
of ``Node``, ``Disk``, ``LoadBalancer``, case-insensitive; another type is a 400). Every other
parameter (``aggregate``, ``accumulate``, ``filter``, ``step``...) is accepted and ignored: the
answer is always one set accumulated over the window, keyed per asset, as the collector asks.
Field names and order follow OpenCost's ``asset_json.go`` (``Node``/``Disk``/``LoadBalancer``
``MarshalJSON``); the ``cost`` field the collector does not read is omitted, as OpenCost does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sandbox.opencost.allocation import GIB, Alloc
from sandbox.opencost.model import Cluster
from sandbox.opencost.rendering import num
from sandbox.opencost.windows import HOUR, QueryError, floor, parse_window, rfc3339

ASSET_PATHS = ("/assets", "/model/assets")
TYPES = {"node": "Node", "disk": "Disk", "loadbalancer": "LoadBalancer"}


def parse_types(text: str | None) -> frozenset[str]:
    """``filterTypes``: the asset types answered (all three when absent)."""
    if not text:
        return frozenset(TYPES.values())
    chosen = set()
    for part in text.split(","):
        name = TYPES.get(part.strip().lower())
        if name is None:
            raise QueryError(f"filterTypes: unknown asset type {part.strip()!r} (Node, Disk, LoadBalancer)")
        chosen.add(name)
    return frozenset(chosen)


def assets(cluster: Cluster, args: Mapping[str, str], now: int) -> dict[str, dict[str, Any]]:
    """The assets of ``window`` (raises ``QueryError``), keyed like OpenCost's asset keys."""
    start, end = parse_window(args.get("window"), now)
    types = parse_types(args.get("filterTypes"))
    data_lo, data_hi = cluster.data_range(now)
    lo, hi = max(start, data_lo), min(end, data_hi)
    if lo >= hi:
        return {}
    allocs = cluster.compute((start, end), lo, hi, floor(now, HOUR))
    hours = (hi - lo) / HOUR
    common = {"window": {"start": rfc3339(start), "end": rfc3339(end)}, "start": rfc3339(lo), "end": rfc3339(hi)}
    out: dict[str, dict[str, Any]] = {}
    if "Node" in types:
        for node in cluster.nodes:
            mine = [a for a in allocs if a.props.node == node.name]
            out[f"{cluster.name}/Node/{node.provider_id}"] = _node(cluster.name, node, mine, hours, lo, hi, common)
    if "Disk" in types:
        for provider, disk in _disks(allocs).items():
            out[f"{cluster.name}/Disk/{provider}"] = _disk(cluster.name, provider, disk, hours, lo, hi, common)
    if "LoadBalancer" in types:
        for name, lb in _load_balancers(allocs).items():
            out[f"{cluster.name}/LoadBalancer/{lb['ip']}"] = _load_balancer(cluster.name, name, lb, lo, hi, common)
    return out


def render_assets(assets_by_key: Mapping[str, Mapping[str, Any]]) -> bytes:
    """OpenCost's success envelope, one set, keys sorted; numbers rounded as ``/allocation``'s."""
    body = {"code": 200, "status": "success", "data": [dict(sorted(assets_by_key.items()))]}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _node(cluster: str, node: Any, allocs: list[Alloc], hours: float, lo: int, hi: int, common: Any) -> dict[str, Any]:
    cpu = node.cpu_cores * node.cpu_price * hours
    ram = node.ram_gib * node.ram_price * hours
    gpu = node.gpus * node.gpu_price * hours
    adjustment = sum(a.cpu_adj + a.gpu_adj + a.ram_adj for a in allocs)
    return {
        "type": "Node",
        "properties": {"category": "Compute", "cluster": cluster, "name": node.name, "providerID": node.provider_id},
        "labels": {},
        **common,
        "minutes": num((hi - lo) / 60),
        "nodeType": "",
        "cpuCores": num(node.cpu_cores),
        "ramBytes": num(node.ram_gib * GIB),
        "cpuCoreHours": num(node.cpu_cores * hours),
        "ramByteHours": num(node.ram_gib * GIB * hours),
        "GPUHours": num(node.gpus * hours),
        "preemptible": 0,
        "discount": 0,
        "cpuCost": num(cpu),
        "gpuCost": num(gpu),
        "gpuCount": num(node.gpus),
        "ramCost": num(ram),
        "adjustment": num(adjustment),
        "totalCost": num(cpu + ram + gpu + adjustment),
    }


def _disks(allocs: list[Alloc]) -> dict[str, list[Any]]:
    """providerID -> [name, byteHours, cost, adjustment] over every allocation's ``pvs``."""
    disks: dict[str, list[Any]] = {}
    for a in allocs:
        if not a.pvs:
            continue
        pv_cost = a.pv_cost
        for key, (byte_hours, cost, provider) in a.pvs.items():
            disk = disks.setdefault(provider, [key.rpartition("name=")[2] or provider, 0.0, 0.0, 0.0])
            disk[1] += byte_hours
            disk[2] += cost
            disk[3] += a.pv_adj * cost / pv_cost if pv_cost else 0.0
    return disks


def _disk(cluster: str, provider: str, disk: list[Any], hours: float, lo: int, hi: int, common: Any) -> dict[str, Any]:
    name, byte_hours, cost, adjustment = disk
    return {
        "type": "Disk",
        "properties": {"category": "Storage", "cluster": cluster, "name": name, "providerID": provider},
        "labels": {},
        **common,
        "minutes": num((hi - lo) / 60),
        "byteHours": num(byte_hours),
        "bytes": num(byte_hours / hours if hours else 0.0),
        "byteHoursUsed": None,
        "byteUsageMax": None,
        "breakdown": {"idle": 0, "other": 0, "system": 0, "user": 0},
        "adjustment": num(adjustment),
        "totalCost": num(cost + adjustment),
        "storageClass": "",
        "volumeName": name,
        "claimName": "",
        "claimNamespace": "",
    }


def _load_balancers(allocs: list[Alloc]) -> dict[str, dict[str, Any]]:
    """``<namespace>/<service>`` -> ip, cost, adjustment, hours over every allocation's ``lbs``."""
    lbs: dict[str, dict[str, Any]] = {}
    for a in allocs:
        if not a.lbs:
            continue
        for service, cost, private, ip, lb_hours in a.lbs.values():
            lb = lbs.setdefault(service, {"ip": ip, "private": private, "cost": 0.0, "adjustment": 0.0, "hours": 0.0})
            lb["cost"] += cost
            lb["adjustment"] += a.lb_adj * cost / a.lb_cost if a.lb_cost else 0.0
            lb["hours"] = max(lb["hours"], lb_hours)
    return lbs


def _load_balancer(cluster: str, name: str, lb: dict[str, Any], lo: int, hi: int, common: Any) -> dict[str, Any]:
    return {
        "type": "LoadBalancer",
        "properties": {"category": "Network", "cluster": cluster, "name": name, "providerID": lb["ip"]},
        "labels": {},
        **common,
        "minutes": num((hi - lo) / 60),
        "adjustment": num(lb["adjustment"]),
        "totalCost": num(lb["cost"] + lb["adjustment"]),
        "private": lb["private"],
        "ip": lb["ip"],
    }
