"""A small Kubernetes API server for tests and the local stack.

The product's Kubernetes adapter is exercised through the official ``kubernetes`` client over
real HTTP. This package serves the subset of the API the product uses (CRUD, merge and JSON patch,
the status subresource, label and field selectors, optimistic concurrency, finalizers) from an
in-memory store that can be seeded from a folder of YAML manifests. Objects of a kind whose CRD
(with a schema) was created in the sandbox are pruned, defaulted and validated against it on every
write like on a real server (``sandbox.kube.schema``, ``sandbox.kube.validation``; CEL rules
excepted), and what was pruned or refused is recorded in ``KubeStore.schemas``; other kinds are
stored as sent. There is no watch, admission webhook, garbage collection or authentication;
``KubeServer.attach_events`` does send change events the way a Knative ``ApiServerSource`` does
(``sandbox.kube.events``).

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
