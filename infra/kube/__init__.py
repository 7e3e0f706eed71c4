"""The Kubernetes adapter: the only package in the product that imports ``kubernetes``.

Everything else talks to the cluster through ``KubeClient`` in plain dicts and sees only
``finops.errors`` exceptions. Importing this package does not import ``kubernetes`` (a heavy
import): that happens when a client is constructed.
"""

from __future__ import annotations

from infra.kube.client import JSON_PATCH, KubeClient
from infra.kube.discovery import ApiResource, Discovery, discovery_for
from infra.kube.errors import AlreadyExists, wrap_errors
from infra.kube.operations import METHOD_VERBS, Operation, Permission, permission_for

__all__ = [
    "JSON_PATCH",
    "METHOD_VERBS",
    "AlreadyExists",
    "ApiResource",
    "Discovery",
    "KubeClient",
    "Operation",
    "Permission",
    "discovery_for",
    "permission_for",
    "wrap_errors",
]
