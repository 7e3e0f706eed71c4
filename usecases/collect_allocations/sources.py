"""Where an hour's allocations come from (``ALLOCATION_SOURCE``): the port both sources satisfy.

``OpenCostClient`` (OpenCost's allocation API, priced by OpenCost) and ``PrometheusAllocations``
(the same method computed from Prometheus, priced with the active PriceBook) answer
``allocation()`` in OpenCost's shape, so the collector stores either unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, Protocol, runtime_checkable

from finops.allocations import Container
from finops.gpus import GpuDevice
from infra.opencost import Allocation

Source = Literal["opencost", "prometheus"]


class AllocationSource(Protocol):
    """``OpenCostClient`` or ``PrometheusAllocations`` (see the module docstring)."""

    def allocation(
        self,
        start: datetime,
        end: datetime,
        *,
        aggregate: str,
        accumulate: bool = ...,
        include_idle: bool = ...,
        retry_until: float | None = ...,
    ) -> list[dict[str, Allocation]]: ...


@runtime_checkable
class PricedSource(Protocol):
    """A source that prices with the run's active PriceBook (Prometheus); OpenCost prices itself."""

    def priced(self, rates: Mapping[str, Decimal] | None) -> AllocationSource: ...


class GpuFigures(Protocol):
    """What ``WithGpuFigures`` asks Prometheus (``PrometheusAllocations``): each container's GPU
    figures and the hour's physical GPUs. A port, so this module names no adapter."""

    def gpu_allocations(
        self, start: datetime, end: datetime, *, retry_until: float | None = ...
    ) -> dict[Container, dict[str, Any]]: ...

    def gpu_devices(self, start: datetime, end: datetime, *, retry_until: float | None = ...) -> list[GpuDevice]: ...


class WithGpuFigures:
    """OpenCost's allocations and assets, with each container's GPU figures and the hour's GPUs
    from Prometheus (``GPU_FIGURES=prometheus``): OpenCost's allocations do not say which MIG slice
    or HAMi fraction a pod holds, kube-state-metrics and DCGM do. Everything else is OpenCost's."""

    def __init__(self, opencost: AllocationSource, prometheus: GpuFigures) -> None:
        self._opencost = opencost
        self._prometheus = prometheus

    def __getattr__(self, name: str) -> Any:  # allocation(), assets(), base_url...: OpenCost's
        return getattr(self._opencost, name)

    def allocation(self, start: datetime, end: datetime, **options: Any) -> list[dict[str, Allocation]]:
        return self._opencost.allocation(start, end, **options)

    def gpu_figures(
        self, start: datetime, end: datetime, *, retry_until: float | None = None
    ) -> dict[Container, dict[str, Any]]:
        return self._prometheus.gpu_allocations(start, end, retry_until=retry_until)

    def gpu_devices(self, start: datetime, end: datetime, *, retry_until: float | None = None) -> list[GpuDevice]:
        return self._prometheus.gpu_devices(start, end, retry_until=retry_until)
