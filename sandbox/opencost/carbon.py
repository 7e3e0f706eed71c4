"""``/assets/carbon``: OpenCost's carbon estimate of each asset over a window.

Why the sandbox serves it: the collector joins it to ``/assets`` by asset key, so both must come
from the same asset set, as in OpenCost, where ``ComputeAssetsCarbonHandler`` computes the window's
assets and maps each key to ``{"co2e": coefficient x minutes / 60}`` (``pkg/carbon/carbonassets.go``;
the coefficient is metric tonnes CO2e per hour). Here the coefficients are the scenario's
``carbon`` section: per node by name, one for every disk; a load balancer has none (0), as in
OpenCost, which looks up nodes and disks only; the section's ``omit`` leaves assets out, as an
answer computed from another fetch of the assets would. Numbers are sent unrounded, as Go marshals a
``float64``. A scenario without ``carbon`` answers 404, as OpenCost does when
``CARBON_ESTIMATES_ENABLED`` is off (the route is not registered).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sandbox.opencost.assets import assets
from sandbox.opencost.model import Cluster

CARBON_PATH = "/assets/carbon"


def carbon(cluster: Cluster, args: Mapping[str, str], now: int) -> dict[str, dict[str, float]]:
    """Tonnes CO2e per asset key over ``window`` (raises ``QueryError`` as ``/assets`` does)."""
    factors = cluster.scenario.carbon
    assert factors is not None  # the server answers 404 without a carbon section
    every = assets(cluster, {"window": args.get("window", "")}, now)
    out: dict[str, dict[str, float]] = {}
    for key, asset in every.items():
        if asset["properties"].get("name") in factors.omit:
            continue
        hours = float(asset["minutes"]) / 60
        kind = asset["type"]
        if kind == "Node":
            coefficient = factors.nodes.get(asset["properties"]["name"], 0.0)
        elif kind == "Disk":
            coefficient = factors.disk_hourly
        else:
            coefficient = 0.0
        out[key] = {"co2e": coefficient * hours}
    return out


def render_carbon(estimates: Mapping[str, Any]) -> bytes:
    """OpenCost's success envelope around the map (``WrapData``), keys sorted."""
    body = {"code": 200, "status": "success", "data": dict(sorted(estimates.items()))}
    return json.dumps(body, separators=(",", ":")).encode()
