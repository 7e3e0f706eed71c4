"""What the adapter asks the Kubernetes API to do, named the way RBAC names it.

Every adapter call is one ``Operation``: an RBAC verb on a resource (``costjobs`` or the
subresource ``costjobs/status``) in an API group, maybe in a namespace, maybe on one object.
The same value builds the request path, the error messages (a 403 names exactly the missing
``verb`` + ``group`` + ``resource``), and the permission list an RBAC test compares with the
shipped Role: ``METHOD_VERBS`` says which verb each ``KubeClient`` method needs, so the rules
a deployment must grant follow from the methods the product calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

# KubeClient method -> (RBAC verb, subresource). Keep in step with infra/kube/client.py.
METHOD_VERBS: dict[str, tuple[str, str | None]] = {
    "list_objects": ("list", None),
    "get_object": ("get", None),
    "create_object": ("create", None),
    "patch_object": ("patch", None),
    "patch_status": ("patch", "status"),
    "replace_status": ("update", "status"),
    "delete_object": ("delete", None),
}


@dataclass(frozen=True)
class Permission:
    """One RBAC rule entry: ``verb`` on ``resource`` (``plural`` or ``plural/sub``) in ``group``."""

    verb: str
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource} in API group {self.group!r}"


def permission_for(method: str, group: str, plural: str) -> Permission:
    """The permission ``KubeClient.<method>`` needs on ``group``/``plural``."""
    verb, subresource = METHOD_VERBS[method]
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
