"""OpenCost's Allocation object, as documented (``core/pkg/opencost/allocation_json.go``).

The shapes are ``TypedDict``s validated by pydantic (cheaper than model instances), every field
type-checked. Parsing is lenient the way OpenCost's output requires: any field may be missing, extra fields are
ignored, and numbers may be ``null`` (OpenCost turns NaN and Inf into null). Numbers become
``Decimal`` as written: pydantic-core reads a JSON number and keeps its shortest decimal form, which
is the text itself for up to 15 significant digits. OpenCost rounds every figure to 5 decimals, so
any cost below 10^10 (ten billion a period) arrives exact; no arithmetic ever runs on a float.

Variants seen across OpenCost versions are accepted here rather than at each caller: a time may be
the string ``"null"`` (an empty range's window is ``{"start": "null", "end": "null"}``), read as
``None``; a summary record may name its efficiency ``efficiency`` instead of ``totalEfficiency``
(the client moves it over, so callers read ``totalEfficiency`` only).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, TypeAdapter
from typing_extensions import TypedDict

_LENIENT = ConfigDict(extra="ignore")
Number = Decimal | None


def _null_string(value: Any) -> Any:
    return None if value == "null" else value


Time = Annotated[datetime | None, BeforeValidator(_null_string)]


class Window(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    start: Time
    end: Time


class AllocationProperties(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    cluster: str | None
    node: str | None
    container: str | None
    controller: str | None
    controllerKind: str | None
    namespace: str | None
    pod: str | None
    services: list[str] | None
    providerID: str | None
    labels: dict[str, str] | None
    annotations: dict[str, str] | None
    namespaceLabels: dict[str, str] | None
    namespaceAnnotations: dict[str, str] | None


class PVAllocation(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    byteHours: Number
    cost: Number
    providerID: str | None


class LBAllocation(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    service: str | None
    cost: Number
    private: bool | None
    ip: str | None
    hours: Number


class GpuAllocation(TypedDict, total=False):
    """What OpenCost knows of an allocation's GPU (DCGM's exporter for the usage)."""

    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    gpuRequestAverage: Number
    gpuUsageAverage: Number
    isGPUShared: bool | None
    gpuDevice: str | None
    gpuModel: str | None
    gpuUUID: str | None
    # Ours, not OpenCost's: the Prometheus source says how the GPU is shared (finops.gpus.Sharing)
    # and which MIG profile a slice is; OpenCost's rows leave them out.
    gpuSharing: str | None
    gpuProfile: str | None


class Allocation(TypedDict, total=False):
    """One allocation of one step set. Costs are in the PriceBook's currency units."""

    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    name: str
    properties: AllocationProperties | None
    window: Window | None
    start: Time
    end: Time
    minutes: Number
    cpuCores: Number
    cpuCoreRequestAverage: Number
    cpuCoreUsageAverage: Number
    cpuCoreHours: Number
    cpuCost: Number
    cpuCostAdjustment: Number
    cpuEfficiency: Number
    gpuCount: Number
    gpuHours: Number
    gpuCost: Number
    gpuCostAdjustment: Number
    gpuAllocation: GpuAllocation | None
    networkTransferBytes: Number
    networkReceiveBytes: Number
    networkCost: Number
    networkCostAdjustment: Number
    loadBalancerCost: Number
    loadBalancerCostAdjustment: Number
    lbAllocations: dict[str, LBAllocation] | None
    pvBytes: Number
    pvByteHours: Number
    pvCost: Number
    pvCostAdjustment: Number
    pvs: dict[str, PVAllocation] | None
    ramBytes: Number
    ramByteRequestAverage: Number
    ramByteUsageAverage: Number
    ramByteHours: Number
    ramCost: Number
    ramCostAdjustment: Number
    ramEfficiency: Number
    externalCost: Number
    sharedCost: Number
    totalCost: Number
    totalEfficiency: Number


class AllocationResponse(TypedDict, total=False):
    """The documented envelope: ``{"code": 200, "status": "success", "data": [{key: Allocation}]}``;
    ``data`` holds one map per step set. Errors carry ``code`` and ``message`` only."""

    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    code: int
    status: str | None
    message: str | None
    warning: str | None
    data: list[dict[str, Allocation] | None] | None


RESPONSE = TypeAdapter(AllocationResponse)


class SummaryAllocation(TypedDict, total=False):
    """A condensed record of ``/allocation/summary`` (no properties or labels)."""

    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    name: str
    start: Time
    end: Time
    cpuCoreRequestAverage: Number
    cpuCoreUsageAverage: Number
    cpuCost: Number
    gpuCost: Number
    ramByteRequestAverage: Number
    ramByteUsageAverage: Number
    ramCost: Number
    pvCost: Number
    networkCost: Number
    loadBalancerCost: Number
    totalEfficiency: Number
    efficiency: Number  # older name of totalEfficiency
    totalCost: Number


class SummarySet(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    allocations: dict[str, SummaryAllocation] | None
    window: Window | None


class SummaryData(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    step: int | None
    sets: list[SummarySet] | None
    window: Window | None


class SummaryResponse(TypedDict, total=False):
    """``{"code": 200, "status": "success", "data": {"step", "sets": [{"allocations", "window"}]}}``."""

    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    code: int
    message: str | None
    data: SummaryData | None


SUMMARY_RESPONSE = TypeAdapter(SummaryResponse)
