"""A small Kubernetes API server for tests and the local stack.

The product's Kubernetes adapter is exercised through the official ``kubernetes`` client over
real HTTP. This package serves the subset of the API the product uses (CRUD, merge and JSON patch,
the status subresource, label and field selectors, optimistic concurrency, finalizers) from an
in-memory store that can be seeded from a folder of YAML manifests; custom resources are checked
against their CRD's schema as on a real server (``sandbox.kube.schema``). There is no watch,
admission webhook, garbage collection or authentication; ``KubeServer.attach_events`` sends change
events as a Knative ``ApiServerSource`` does (``sandbox.kube.events``).

    with serve(seed_dir=Path("sandbox/demo")) as server:
        client = KubeClient.from_url(server.url)

``serve(seed_dir=..., objects=sandbox.cluster.cluster_objects(scenario))`` adds the Namespaces,
Nodes, workloads and pods of an OpenCost sandbox scenario, so both sandboxes describe one cluster.
"""

from __future__ import annotations

from sandbox.kube.app import make_app
from sandbox.kube.errors import ApiError
from sandbox.kube.seed import ManifestError, load_manifests
from sandbox.kube.server import KubeServer, serve
from sandbox.kube.store import KubeStore

__all__ = [
    "ApiError",
    "KubeServer",
    "KubeStore",
    "ManifestError",
    "load_manifests",
    "make_app",
    "serve",
]
