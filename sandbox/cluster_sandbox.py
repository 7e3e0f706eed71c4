"""The OpenCost and Kubernetes API sandboxes describing one cluster (``sandbox.cluster.cluster_objects``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sandbox.cluster import aware, cluster_objects
from sandbox.kube import KubeServer
from sandbox.kube import serve as serve_kube
from sandbox.opencost.scenario import Scenario
from sandbox.opencost.server import OpenCostServer
from sandbox.opencost.server import serve as serve_opencost
from sandbox.serving import StopOnExit


@dataclass
class ClusterSandbox(StopOnExit):
    """Both sandboxes over one scenario: ``.opencost`` (clock fixed at ``now`` if given) and ``.kube``."""

    opencost: OpenCostServer
    kube: KubeServer

    def stop(self) -> None:
        self.opencost.stop()
        self.kube.stop()


def serve_cluster(scenario: Scenario, *, now: datetime | None = None, seed_dir: Path | None = None) -> ClusterSandbox:
    """Start the OpenCost and Kubernetes sandboxes describing the same cluster.

    With ``now``, OpenCost's clock stands still at ``now`` and the objects are those at ``now``;
    without, OpenCost follows the real clock and the objects are those at start-up (CronJob runs
    after start-up then appear in OpenCost only). ``seed_dir`` (e.g. ``sandbox/demo/kube``, with the
    demo's Argo CD Applications) is applied first, then the scenario's objects.
    """
    fixed = aware(now) if now is not None else None
    opencost = serve_opencost(scenario, clock=(lambda: fixed) if fixed is not None else None)
    try:
        return ClusterSandbox(opencost, serve_kube(seed_dir=seed_dir, objects=cluster_objects(scenario, now=fixed)))
    except BaseException:
        opencost.stop()
        raise
