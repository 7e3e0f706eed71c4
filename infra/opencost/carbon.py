"""OpenCost's carbon estimates (``/assets/carbon``): each asset's CO2e over a window.

OpenCost serves the route only when started with ``CARBON_ESTIMATES_ENABLED=true``
(``pkg/cmd/costmodel/costmodel.go``); otherwise it answers 404, which the client turns into
``EndpointMissing``. The handler (``ComputeAssetsCarbonHandler``) computes the same asset set as
``/assets`` and answers ``{"code": 200, "status": "success", "data": {key: {"co2e": number}}}``:
one entry per asset, keyed by the asset's key in ``/assets``, whose ``co2e`` is the coefficient of
its provider, region and instance type (Cloud Carbon Footprint's lookup table, metric tonnes CO2e
per hour) x its minutes / 60 (``pkg/carbon/carbonassets.go``, ``RelateCarbonAssets``). Nothing in
it names the asset's type or name: the collector joins it to the hour's ``/assets`` by key.

Numbers are read as ``Decimal`` (never a float); an entry whose ``co2e`` is absent or null is
refused (``OpenCostUnavailable`` naming its key), since an estimate missing is not zero.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from finops.errors import OpenCostUnavailable
from infra.opencost.models import _LENIENT, Number

CARBON_PATH = "/assets/carbon"


class CarbonRow(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    co2e: Number


class CarbonResponse(TypedDict, total=False):
    __pydantic_config__ = _LENIENT  # type: ignore[misc]
    code: int
    status: str | None
    message: str | None
    data: dict[str, CarbonRow | None] | None


CARBON_RESPONSE = TypeAdapter(CarbonResponse)


def parse_carbon(data: dict[str, CarbonRow | None], origin: str) -> dict[str, Decimal]:
    """Tonnes CO2e per asset key, as sent."""
    tonnes: dict[str, Decimal] = {}
    for key, row in sorted(data.items()):
        value = (row or {}).get("co2e")
        if not isinstance(value, Decimal) or not value.is_finite():
            raise OpenCostUnavailable(f"{origin} with {key}.co2e: {value}, not a finite number")
        tonnes[key] = value
    return tonnes
