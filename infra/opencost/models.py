"""OpenCost's Allocation object, as documented (``core/pkg/opencost/allocation_json.go``).

Parsing is lenient the way OpenCost's output requires: every field may be missing, extra fields
are ignored, and numbers may be ``null`` (OpenCost turns NaN and Inf into null). Numbers are
parsed from the JSON text straight into ``Decimal``, so no cost ever passes through a float.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from finops.allocations import IDLE, UNALLOCATED, UNMOUNTED

Number = Decimal | None


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Window(_Lenient):
    start: datetime | None = None
    end: datetime | None = None


class AllocationProperties(_Lenient):
    cluster: str | None = None
    node: str | None = None
    container: str | None = None
    controller: str | None = None
    controllerKind: str | None = None
    namespace: str | None = None
    pod: str | None = None
    services: list[str] | None = None
    providerID: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    namespaceLabels: dict[str, str] | None = None
    namespaceAnnotations: dict[str, str] | None = None


class PVAllocation(_Lenient):
    byteHours: Number = None
    cost: Number = None
    providerID: str | None = None


class LBAllocation(_Lenient):
    service: str | None = None
    cost: Number = None
    private: bool | None = None
    ip: str | None = None
    hours: Number = None


class Allocation(_Lenient):
    """One allocation of one step set. Costs are in the PriceBook's currency units."""

    name: str
    properties: AllocationProperties = Field(default_factory=AllocationProperties)
    window: Window | None = None
    start: datetime | None = None
    end: datetime | None = None
    minutes: Number = None
    cpuCores: Number = None
    cpuCoreRequestAverage: Number = None
    cpuCoreUsageAverage: Number = None
    cpuCoreHours: Number = None
    cpuCost: Number = None
    cpuCostAdjustment: Number = None
    cpuEfficiency: Number = None
    gpuCount: Number = None
    gpuHours: Number = None
    gpuCost: Number = None
    gpuCostAdjustment: Number = None
    networkTransferBytes: Number = None
    networkReceiveBytes: Number = None
    networkCost: Number = None
    networkCostAdjustment: Number = None
    loadBalancerCost: Number = None
    loadBalancerCostAdjustment: Number = None
    lbAllocations: dict[str, LBAllocation] | None = None
    pvBytes: Number = None
    pvByteHours: Number = None
    pvCost: Number = None
    pvCostAdjustment: Number = None
    pvs: dict[str, PVAllocation] | None = None
    ramBytes: Number = None
    ramByteRequestAverage: Number = None
    ramByteUsageAverage: Number = None
    ramByteHours: Number = None
    ramCost: Number = None
    ramCostAdjustment: Number = None
    ramEfficiency: Number = None
    externalCost: Number = None
    sharedCost: Number = None
    totalCost: Number = None
    totalEfficiency: Number = None

    @property
    def is_idle(self) -> bool:
        return self.name == IDLE or self.name.endswith("/" + IDLE)

    @property
    def is_unallocated(self) -> bool:
        return UNALLOCATED in self.name.split("/")

    @property
    def is_unmounted(self) -> bool:
        return UNMOUNTED in self.name.split("/")


class AllocationResponse(_Lenient):
    """The documented envelope: ``{"code": 200, "status": "success", "data": [{key: Allocation}]}``;
    ``data`` holds one map per step set."""

    code: int
    status: str | None = None
    message: str | None = None
    warning: str | None = None
    data: list[dict[str, Allocation] | None] | None = None
