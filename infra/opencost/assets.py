"""OpenCost's assets (``/assets``): what each node, disk and load balancer cost in a window.

An asset carries both its ``providerID`` (what the cloud bill's lines name) and its cost, so the
hour's assets are what the bill is matched against.

The answer is ``{"code": 200, "data": [{key: asset}]}`` (``core/pkg/opencost/asset_json.go``),
parsed like ``models``: lenient ``TypedDict``s, numbers as ``Decimal``, never a float. Node, Disk
and LoadBalancer assets become small frozen dataclasses; other types (Network, ClusterManagement,
Cloud, Shared) are skipped. An asset without ``properties.name`` is refused
(``OpenCostUnavailable`` naming its key): nothing could match it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from finops.errors import OpenCostUnavailable
from infra.opencost.models import _LENIENT, Number, Time

ZERO = Decimal(0)


class AssetProperties(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    category: str | None
    provider: str | None
    cluster: str | None
    name: str | None
    providerID: str | None


class RawAsset(TypedDict, total=False):
    """The fields of Node, Disk and LoadBalancer assets the collector reads."""

    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    type: str | None
    properties: AssetProperties | None
    start: Time
    end: Time
    minutes: Number
    cpuCores: Number
    ramBytes: Number
    gpuCount: Number
    cpuCost: Number
    ramCost: Number
    gpuCost: Number
    discount: Number
    adjustment: Number
    totalCost: Number
    bytes: Number
    byteHours: Number


class AssetResponse(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    code: int
    status: str | None
    message: str | None
    data: list[dict[str, RawAsset] | None] | None


ASSET_RESPONSE = TypeAdapter(AssetResponse)


@dataclass(frozen=True)
class NodeAsset:
    """A node: capacity, per-resource cost over the window, ``adjustment`` (reconciliation with
    the bill) and ``total_cost`` (OpenCost's: (cpu + ram) x (1 - discount) + gpu + adjustment)."""

    key: str
    cluster: str
    name: str
    provider_id: str
    minutes: Decimal
    cpu_cores: Decimal
    ram_bytes: Decimal
    gpu_count: Decimal
    cpu_cost: Decimal
    ram_cost: Decimal
    gpu_cost: Decimal
    discount: Decimal
    adjustment: Decimal
    total_cost: Decimal


@dataclass(frozen=True)
class DiskAsset:
    key: str
    cluster: str
    name: str
    provider_id: str
    bytes: Decimal
    byte_hours: Decimal
    adjustment: Decimal
    total_cost: Decimal


@dataclass(frozen=True)
class LoadBalancerAsset:
    key: str
    cluster: str
    name: str
    provider_id: str
    adjustment: Decimal
    total_cost: Decimal


@dataclass(frozen=True)
class Assets:
    """One window's assets, each kind sorted by key."""

    nodes: tuple[NodeAsset, ...] = ()
    disks: tuple[DiskAsset, ...] = ()
    load_balancers: tuple[LoadBalancerAsset, ...] = ()
    # Tonnes CO2e per asset key over the same window (``/assets/carbon``, ``infra.opencost.carbon``);
    # None: not asked for, or OpenCost's carbon estimates are not enabled.
    carbon: Mapping[str, Decimal] | None = None

    def __len__(self) -> int:
        return len(self.nodes) + len(self.disks) + len(self.load_balancers)


def parse_assets(data: list[dict[str, RawAsset] | None], origin: str) -> Assets:
    """The validated ``data`` of an ``/assets`` envelope (one accumulated set) as ``Assets``."""
    if len(data) > 1:
        raise OpenCostUnavailable(f"{origin} with {len(data)} sets for one accumulated window")
    nodes: list[NodeAsset] = []
    disks: list[DiskAsset] = []
    lbs: list[LoadBalancerAsset] = []
    for key, raw in sorted((data[0] or {}).items() if data else ()):
        kind = raw.get("type")
        if kind not in ("Node", "Disk", "LoadBalancer"):
            continue
        props = raw.get("properties") or {}
        name = props.get("name")
        if not name:
            raise OpenCostUnavailable(f"{origin} with {kind} asset {key!r} without properties.name")
        common: dict[str, Any] = {
            "key": key,
            "cluster": props.get("cluster") or "",
            "name": name,
            "provider_id": props.get("providerID") or name,
            "adjustment": _number(raw, "adjustment", key, origin),
            "total_cost": _number(raw, "totalCost", key, origin),
        }
        if kind == "Node":
            nodes.append(
                NodeAsset(
                    **common,
                    minutes=_number(raw, "minutes", key, origin),
                    cpu_cores=_number(raw, "cpuCores", key, origin),
                    ram_bytes=_number(raw, "ramBytes", key, origin),
                    gpu_count=_number(raw, "gpuCount", key, origin),
                    cpu_cost=_number(raw, "cpuCost", key, origin),
                    ram_cost=_number(raw, "ramCost", key, origin),
                    gpu_cost=_number(raw, "gpuCost", key, origin),
                    discount=_number(raw, "discount", key, origin),
                )
            )
        elif kind == "Disk":
            disks.append(
                DiskAsset(
                    **common,
                    bytes=_number(raw, "bytes", key, origin),
                    byte_hours=_number(raw, "byteHours", key, origin),
                )
            )
        else:
            lbs.append(LoadBalancerAsset(**common))
    return Assets(tuple(nodes), tuple(disks), tuple(lbs))


def _number(raw: RawAsset, field: str, key: str, origin: str) -> Decimal:
    """A figure as sent; absent or null (OpenCost's NaN) is 0; a non-finite one is refused."""
    value: Any = raw.get(field)
    if value is None:
        return ZERO
    if not isinstance(value, Decimal) or not value.is_finite():
        raise OpenCostUnavailable(f"{origin} with {key}.{field}: {value}, not a finite number")
    return value
