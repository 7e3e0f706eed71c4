"""A generated cluster's series in a real Prometheus (Debian's ``prometheus`` and ``promtool``).

Used by the Prometheus-source tests and by ``finops run --source prometheus``::

    from sandbox.prometheus import demo_world, serve
    with serve(demo_world(first_hour)) as url:
        httpx.post(f"{url}/api/v1/query", data={"query": "kube_pod_info"})
"""

from __future__ import annotations

from sandbox.prometheus.openmetrics import render
from sandbox.prometheus.server import INSTALL, PrometheusMissing, binaries, build_tsdb, serve
from sandbox.prometheus.world import GIB, MIB, Claim, Container, Node, Pod, Service, World, demo_world

__all__ = [
    "GIB",
    "INSTALL",
    "MIB",
    "Claim",
    "Container",
    "Node",
    "Pod",
    "PrometheusMissing",
    "Service",
    "World",
    "binaries",
    "build_tsdb",
    "demo_world",
    "render",
    "serve",
]
