"""OpenCost adapter: the only importer of httpx for OpenCost."""

from infra.opencost.client import OpenCostClient, OversizedAnswer, Spooled, namespace_filter
from infra.opencost.models import Allocation, AllocationProperties, AllocationResponse

__all__ = [
    "Allocation",
    "AllocationProperties",
    "AllocationResponse",
    "OpenCostClient",
    "OversizedAnswer",
    "Spooled",
    "namespace_filter",
]
