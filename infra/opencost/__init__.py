"""OpenCost adapter: the only importer of httpx for OpenCost."""

from infra.opencost.assets import Assets, DiskAsset, LoadBalancerAsset, NodeAsset
from infra.opencost.client import EndpointMissing, OpenCostClient, OversizedAnswer, Spooled, namespace_filter
from infra.opencost.models import Allocation, AllocationProperties, AllocationResponse

__all__ = [
    "Allocation",
    "AllocationProperties",
    "AllocationResponse",
    "Assets",
    "DiskAsset",
    "EndpointMissing",
    "LoadBalancerAsset",
    "NodeAsset",
    "OpenCostClient",
    "OversizedAnswer",
    "Spooled",
    "namespace_filter",
]
