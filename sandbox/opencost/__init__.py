"""A simulated OpenCost allocation API, driven by a scenario file.

This sandbox answers ``GET /allocation`` (and ``/allocation/compute``, ``/allocation/summary``,
``/healthz``) following OpenCost's documented allocation contract and cost model, so the real
OpenCost can replace it by changing a URL. ``sandbox.cluster`` gives the Kubernetes objects of the
same scenario. Start with::

    from sandbox.opencost import load_scenario, serve
    with serve(load_scenario("sandbox/demo/scenario.yaml")) as server:
        httpx.get(f"{server.url}/allocation", params={"window": "24h", "aggregate": "namespace"})

or from a shell: ``python -m sandbox.opencost --scenario sandbox/demo/scenario.yaml --port 9003``.
"""

from __future__ import annotations

from sandbox.opencost.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from sandbox.opencost.server import OpenCostApp, OpenCostServer, serve
from sandbox.opencost.synthetic import synthetic

__all__ = [
    "OpenCostApp",
    "OpenCostServer",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "parse_scenario",
    "serve",
    "synthetic",
]
