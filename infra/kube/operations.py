"""What the adapter asks the Kubernetes API to do, named the way RBAC names it.

Every adapter call is one ``Operation``: an RBAC verb on a resource (``costjobs`` or the
subresource ``costjobs/status``) in an API group, maybe in a namespace, maybe on one object.
The same value builds the request path, the error messages (a 403 names exactly the missing
``verb`` + ``group`` + ``resource``), and the permission list an RBAC test compares with the
shipped Role: ``METHOD_VERBS`` says which verb each ``KubeClient`` method needs, so the rules
a deployment must grant follow from the methods the product calls.

Discovery (``Operation.discovery``: the APIResourceList at ``/api/v1`` or
``/apis/{group}/{version}``) is the one request that is not on a resource: RBAC grants it as a
``nonResourceURL``, which the built-in ClusterRole ``system:discovery`` gives every
authenticated user. So ``METHOD_VERBS`` maps ``api_resources`` to ``None`` (no Role rule to
ship) and ``permission_for`` answers ``None`` for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

# KubeClient method -> (RBAC verb, subresource), or None when the method needs no Role rule.
# Keep in step with infra/kube/client.py.
METHOD_VERBS: dict[str, tuple[str, str | None] | None] = {
    "list_objects": ("list", None),
    "get_object": ("get", None),
    "create_object": ("create", None),
    "patch_object": ("patch", None),
    "patch_status": ("patch", "status"),
    # Discovery: a nonResourceURL every authenticated user may get (ClusterRole system:discovery).
    "api_resources": None,
    "server_version": None,
    # A SelfSubjectAccessReview: every authenticated user may create one (ClusterRole system:basic-user).
    "access_review": None,
}


@dataclass(frozen=True)
class Permission:
    """One RBAC rule entry: ``verb`` on ``resource`` (``plural`` or ``plural/sub``) in ``group``."""

    verb: str
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource} in API group {self.group!r}"


def permission_for(method: str, group: str, plural: str) -> Permission | None:
    """The permission ``KubeClient.<method>`` needs on ``group``/``plural``; ``None`` if it needs no
    Role rule (discovery)."""
    entry = METHOD_VERBS[method]
    if entry is None:
        return None
    verb, subresource = entry
    return Permission(verb, group, f"{plural}/{subresource}" if subresource else plural)


@dataclass(frozen=True)
class Operation:
    """One request: RBAC verb, resource coordinates, and (optionally) namespace and name."""

    verb: str
    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None

    @classmethod
    def discovery(cls, group: str, version: str) -> Operation:
        """Reading the APIResourceList of ``group``/``version`` (``""`` is the core group)."""
        return cls("get", group, version, "")

    @property
    def is_discovery(self) -> bool:
        """A discovery request: no resource (``plural`` is empty), so no Role rule applies."""
        return not self.plural

    @property
    def permission(self) -> Permission:
        resource = f"{self.plural}/{self.subresource}" if self.subresource else self.plural
        return Permission(self.verb, self.group, resource)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self) -> str:
        """The REST path: ``/api/v1/...`` for the core group, ``/apis/{group}/{version}/...`` else.

        A ``create`` posts to the collection; its name (if known) is only for messages.
        """
        path = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.is_discovery:
            return path
        if self.namespace:
            path += f"/namespaces/{quote(self.namespace, safe='')}"
        path += f"/{self.plural}"
        if self.name and self.verb != "create":
            path += f"/{quote(self.name, safe='')}"
        if self.subresource:
            path += f"/{self.subresource}"
        return path

    def target(self) -> str:
        """Human wording of what was addressed, e.g. ``costjobs "job-1" in namespace "team-a"``."""
        if self.is_discovery:
            return f"the API resource list of {self.group_version}"
        what = f"{self.group_version} {self.plural}"
        if self.subresource:
            what += f"/{self.subresource}"
        if self.name:
            what += f" {self.name!r}"
        if self.namespace:
            return f"{what} in namespace {self.namespace!r}"
        return f"{what} (cluster-wide)" if self.verb == "list" else what

    def describe(self) -> str:
        return f"{self.verb} {self.target()}"
