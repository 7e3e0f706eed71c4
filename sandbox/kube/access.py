"""``SelfSubjectAccessReview``: may the caller do this? The sandbox has no authentication, so every
review is allowed unless a test denied that permission (``AccessRules.deny``), to everyone or to
the user a review impersonates (``Impersonate-User``, which the sandbox always lets a caller
use), which is how the tests see ``finops doctor`` report a function's missing grant.

A review is answered as the apiserver answers it: the posted object with ``status.allowed`` (and
``status.denied`` and a ``reason`` when refused), 201 Created; a body that is not a review of a
resource (``spec.resourceAttributes`` with a ``verb`` and a ``resource``) is a 400.
"""

from __future__ import annotations

import threading
from typing import Any

from sandbox.kube import errors

PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class AccessRules:
    """The permissions refused: ``(verb, group, resource, namespace, user)``, ``resource`` being
    ``plural`` or ``plural/sub``, ``namespace`` None for any namespace and ``user`` None for
    everyone. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._denied: set[tuple[str, str, str, str | None, str | None]] = set()

    def deny(
        self, verb: str, group: str, resource: str, namespace: str | None = None, *, user: str | None = None
    ) -> None:
        with self._lock:
            self._denied.add((verb, group, resource, namespace, user))

    def reset(self) -> None:
        with self._lock:
            self._denied.clear()

    def review(self, body: Any, user: str | None = None) -> dict[str, Any]:
        """The answered review of ``body``, asked by ``user`` (None: the unauthenticated caller);
        an ``ApiError`` 400 when it is not a review."""
        spec = body.get("spec") if isinstance(body, dict) else None
        attributes = spec.get("resourceAttributes") if isinstance(spec, dict) else None
        if not isinstance(attributes, dict) or not attributes.get("verb") or not attributes.get("resource"):
            raise errors.bad_request("spec.resourceAttributes with a verb and a resource is required")
        resource = str(attributes["resource"])
        if attributes.get("subresource"):
            resource += f"/{attributes['subresource']}"
        verb, group, namespace = (
            str(attributes["verb"]),
            str(attributes.get("group") or ""),
            attributes.get("namespace"),
        )
        with self._lock:
            denied = any(
                (verb, group, resource, ns, who) in self._denied for ns in (None, namespace) for who in (None, user)
            )
        status: dict[str, Any] = {"allowed": not denied}
        if denied:
            status.update(denied=True, reason=f"the sandbox denies {verb} {resource} in API group {group!r}")
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
