"""Where an hour's allocations come from (``ALLOCATION_SOURCE``): the port both sources satisfy.

``OpenCostClient`` (OpenCost's allocation API, priced by OpenCost) and ``PrometheusAllocations``
(the same method computed from Prometheus, priced with the active PriceBook) answer
``allocation()`` in OpenCost's shape, so the collector stores either unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Literal, Protocol, runtime_checkable

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
