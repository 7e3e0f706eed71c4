"""Which kind lives at which URL: the sandbox's tiny stand-in for API discovery.

A request names a resource by ``group/version/plural``, a manifest by ``apiVersion/kind``. The
lookup falls through three layers: CRDs registered at runtime, a built-in table of the kinds the
product touches, and an English-plural guess (so tests can use ``argoproj.io`` Applications
without installing Argo CD). Undeclared resources have unknown scope; the request's URL shape
(with or without ``/namespaces/{ns}``) then decides.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

CRD_GROUP = "apiextensions.k8s.io"


@dataclass(frozen=True)
class ResourceType:
    """One API resource: its group, kind, plural and scope.

    ``namespaced`` is ``None`` for a resource nobody declared: its objects are namespaced if
    they were created with a namespace and cluster-scoped otherwise.
    """

    group: str
    kind: str
    plural: str
    namespaced: bool | None

    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _builtin(group: str, namespaced: bool, *kinds: str) -> list[ResourceType]:
    return [ResourceType(group, kind, guess_plural(kind), namespaced) for kind in kinds]


def guess_plural(kind: str) -> str:
    """The lower-case English plural of ``kind``: ``CostJob`` → ``costjobs``, ``Policy`` → ``policies``."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def guess_kind(plural: str) -> str:
    """Best effort inverse of :func:`guess_plural`; only used for resources never seen."""
    if plural.endswith("ies"):
        singular = plural[:-3] + "y"
    elif plural.endswith(("sses", "xes", "zes", "ches", "shes")):
        singular = plural[:-2]
    elif plural.endswith("s"):
        singular = plural[:-1]
    else:
        singular = plural
    return singular[:1].upper() + singular[1:]


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    *_builtin("", False, "Namespace", "Node", "PersistentVolume"),
    *_builtin(
        "",
        True,
        "Pod",
        "ConfigMap",
        "Secret",
        "Service",
        "ServiceAccount",
        "PersistentVolumeClaim",
        "Event",
        "LimitRange",
        "ResourceQuota",
    ),
    ResourceType("", "Endpoints", "endpoints", True),
    *_builtin("apps", True, "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"),
    *_builtin("apps", True, "ControllerRevision"),
    *_builtin("batch", True, "Job", "CronJob"),
    *_builtin(CRD_GROUP, False, "CustomResourceDefinition"),
    *_builtin("rbac.authorization.k8s.io", True, "Role", "RoleBinding"),
    *_builtin("rbac.authorization.k8s.io", False, "ClusterRole", "ClusterRoleBinding"),
    *_builtin("networking.k8s.io", True, "Ingress", "NetworkPolicy"),
    *_builtin("storage.k8s.io", False, "StorageClass"),
    *_builtin("scheduling.k8s.io", False, "PriorityClass"),
    *_builtin("coordination.k8s.io", True, "Lease"),
    *_builtin("policy", True, "PodDisruptionBudget"),
    *_builtin("autoscaling", True, "HorizontalPodAutoscaler"),
)


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` → ``("apps", "v1")``; the core group is ``""``: ``v1`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def join_api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


class ResourceRegistry:
    """Thread-safe map between ``(group, plural)`` and ``(group, kind)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_plural: dict[tuple[str, str], ResourceType] = {}
        self._plural_by_kind: dict[tuple[str, str], str] = {}
        self._versions: dict[str, set[str]] = {}
        for resource in BUILTIN_TYPES:
            self._put(resource)
            self._versions.setdefault(resource.group, set()).add("v1")

    def _put(self, resource: ResourceType) -> None:
        self._by_plural[(resource.group, resource.plural)] = resource
        self._plural_by_kind[(resource.group, resource.kind)] = resource.plural

    def register(self, resource: ResourceType) -> None:
        """Declare a resource, replacing whatever was known or guessed about it."""
        with self._lock:
            old = self._by_plural.get((resource.group, resource.plural))
            if old is not None and old.kind != resource.kind:
                self._plural_by_kind.pop((old.group, old.kind), None)
            self._put(resource)

    def register_crd(self, crd: dict[str, Any]) -> None:
        """Declare the resource a ``CustomResourceDefinition`` manifest describes."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind = spec.get("group"), names.get("kind")
        if not isinstance(group, str) or not isinstance(kind, str):
            return
        plural = names.get("plural") or guess_plural(kind)
        resource = ResourceType(group, kind, plural, spec.get("scope", "Namespaced") != "Cluster")
        self.register(resource)
        with self._lock:
            for entry in spec.get("versions") or []:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    self._versions.setdefault(group, set()).add(entry["name"])

    def note_version(self, group: str, version: str) -> None:
        with self._lock:
            self._versions.setdefault(group, set()).add(version)

    def versions(self) -> dict[str, list[str]]:
        """Every group/version seen so far (for the ``/apis`` discovery answer)."""
        with self._lock:
            return {group: sorted(found) for group, found in sorted(self._versions.items())}

    def by_plural(self, group: str, plural: str) -> ResourceType:
        with self._lock:
            known = self._by_plural.get((group, plural))
        return known or ResourceType(group, guess_kind(plural), plural, None)

    def by_kind(self, group: str, kind: str) -> ResourceType:
        """The resource for ``kind``; an unknown kind is remembered with its guessed plural."""
        with self._lock:
            plural = self._plural_by_kind.get((group, kind))
            if plural is not None:
                return self._by_plural[(group, plural)]
            guessed = ResourceType(group, kind, guess_plural(kind), None)
            if (group, guessed.plural) not in self._by_plural:
                self._put(guessed)
            return guessed

    def learn_kind(self, group: str, plural: str, kind: str) -> None:
        """Remember the kind a client sent for an undeclared plural."""
        with self._lock:
            if (group, plural) not in self._by_plural:
                self._put(ResourceType(group, kind, plural, None))

    def resolve(self, group: str, kind_or_plural: str) -> ResourceType:
        """Accept either ``CostJob`` or ``costjobs``; kinds start with an upper-case letter."""
        if kind_or_plural[:1].isupper():
            return self.by_kind(group, kind_or_plural)
        return self.by_plural(group, kind_or_plural)

    def resources(self, group: str) -> list[ResourceType]:
        with self._lock:
            return sorted((r for r in self._by_plural.values() if r.group == group), key=lambda r: r.plural)
