"""A generated cluster's series in a real Prometheus (Debian's ``prometheus`` and ``promtool``).

Used by the Prometheus-source tests and by ``finops run --source prometheus``::

    from sandbox.prometheus import demo_world, serve
    with serve(demo_world(first_hour)) as url:
        httpx.post(f"{url}/api/v1/query", data={"query": "kube_pod_info"})
"""

from __future__ import annotations

from sandbox.prometheus.server import PrometheusMissing, binaries, serve
from sandbox.prometheus.world import GIB, MIB, World, demo_world, gpu_uuid, gpu_world

__all__ = ["GIB", "MIB", "PrometheusMissing", "World", "binaries", "demo_world", "gpu_uuid", "gpu_world", "serve"]
