"""OpenCost adapter: the only importer of httpx for OpenCost."""

from infra.opencost.assets import Assets
from infra.opencost.client import EndpointMissing, OpenCostClient, OversizedAnswer, Spooled, namespace_filter
from infra.opencost.models import Allocation

__all__ = [
    "Allocation",
    "Assets",
    "EndpointMissing",
    "OpenCostClient",
    "OversizedAnswer",
    "Spooled",
    "namespace_filter",
]
