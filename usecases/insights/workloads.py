"""What the insights read from the Kubernetes API: Argo CD Applications, a namespace's pods with
the objects that own them, and VerticalPodAutoscalers.

Every call goes through a variable named ``kube`` with constant group and plural, so the RBAC test
(tests/deploy/test_rbac.py) derives ``cost-api``'s ClusterRole from these lines: list
Applications, get one Application, list pods, ReplicaSets and Jobs (the owner chains), list
VerticalPodAutoscalers.

The insights are advice, so a cluster that cannot answer them is not an error: ``reachable``
turns a missing credential, a refused permission (401/403), a missing API and an unreachable
server into an ``Unavailable`` carrying the reason, which the views answer as
``available: false``. A missing Application stays a 404.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from finops.applications import is_local
from finops.errors import InvalidInput, KubernetesUnavailable, NotFound, PermanentError
from finops.labels import validate_namespace
from finops.ownership import owned_pods, owner_chain
from infra.kube import KubeClient as Kube
from infra.kube import discovery_for

Obj = dict[str, Any]
ARGO_GROUP, ARGO_VERSION, APPLICATIONS = "argoproj.io", "v1alpha1", "applications"
VPA_GROUP, VPA_VERSION, VPAS, VPA_KIND = "autoscaling.k8s.io", "v1", "verticalpodautoscalers", "VerticalPodAutoscaler"
CORE, PODS = "", "pods"
APPS, REPLICASETS = "apps", "replicasets"
BATCH, JOBS = "batch", "jobs"

Target = tuple[str, str, str]  # (API group, kind, name) of an object in the destination namespace


class Unavailable(Exception):
    """The cluster cannot answer this insight; ``reason`` says why (shown as ``available: false``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@contextmanager
def reachable(what: str) -> Iterator[None]:
    """Turn "cannot ask" into ``Unavailable``; a missing named object (404) and bad input stay errors."""
    try:
        yield
    except (NotFound, InvalidInput):
        raise
    except (PermanentError, KubernetesUnavailable) as exc:
        raise Unavailable(f"{what}: {exc.message}") from exc


def connect(factory: Callable[[], Kube]) -> Kube:
    """The client, or ``Unavailable`` when there are no credentials (no in-cluster account, no kubeconfig)."""
    with reachable("no Kubernetes credentials"):
        return factory()


@dataclass(frozen=True)
class App:
    """An Argo CD Application as the insights need it."""

    namespace: str
    name: str
    destination: str | None  # a valid destination namespace, else None
    local: bool
    resources: tuple[tuple[str, str, str, str], ...]  # (namespace, group, kind, name) it lists

    def listed_in(self, namespace: str) -> set[Target]:
        return {(g, k, n) for ns, g, k, n in self.resources if ns == namespace}


def parse_app(obj: Mapping[str, Any]) -> App:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    destination = spec.get("destination") or {}
    raw = destination.get("namespace")
    try:
        dest: str | None = validate_namespace(raw) if isinstance(raw, str) and raw else None
    except InvalidInput:
        dest = None
    resources = tuple(
        (str(r.get("namespace") or dest or ""), str(r.get("group") or ""), str(r["kind"]), str(r["name"]))
        for r in status.get("resources") or []
        if isinstance(r, Mapping) and isinstance(r.get("kind"), str) and isinstance(r.get("name"), str)
    )
    return App(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        destination=dest,
        local=is_local(destination.get("server"), destination.get("name")),
        resources=resources,
    )


def application(kube: Kube, namespace: str, name: str) -> App:
    """One Application; ``NotFound`` (404) when Argo CD has no such application."""
    with reachable("cannot read the Argo CD Application"):
        try:
            return parse_app(kube.get_object(ARGO_GROUP, ARGO_VERSION, APPLICATIONS, namespace, name))
        except NotFound:
            raise NotFound(f"no Argo CD Application {namespace}/{name} in the cluster") from None


def applications(kube: Kube) -> list[App]:
    with reachable("cannot list Argo CD Applications"):
        return [parse_app(obj) for obj in kube.list_objects(ARGO_GROUP, ARGO_VERSION, APPLICATIONS)]


@dataclass(frozen=True)
class Namespace:
    """A namespace's pods and the intermediate owners (ReplicaSets, Jobs) their chains pass through."""

    name: str
    pods: list[Obj]
    owners: list[Obj]

    def by_uid(self) -> dict[str, Obj]:
        return {str((o.get("metadata") or {}).get("uid")): o for o in self.owners}

    def owned_by(self, targets: set[Target]) -> set[str]:
        """Pods whose owner chain reaches one of ``targets`` (compared by kind and name: one namespace)."""
        return owned_pods({(kind, name) for _, kind, name in targets}, self.pods, self.owners)

    def controllers_of(self, pod_names: set[str]) -> set[Target]:
        """Every object on the owner chains of ``pod_names``, with its API group."""
        found: set[Target] = set()
        by_uid = self.by_uid()
        for pod in self.pods:
            if (pod.get("metadata") or {}).get("name") not in pod_names:
                continue
            current: Mapping[str, Any] = pod
            for _ in range(8):
                ref = next(
                    (r for r in (current.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")),
                    None,
                )
                if ref is None:
                    break
                group = str(ref.get("apiVersion", "")).rpartition("/")[0]
                found.add((group, str(ref.get("kind", "")), str(ref.get("name", ""))))
                parent = by_uid.get(str(ref.get("uid", "")))
                if parent is None:
                    break
                current = parent
        return found

    def top_owner(self, pod: Obj) -> tuple[str, str] | None:
        """(kind, name) at the top of the pod's owner chain; None for a bare pod."""
        chain = owner_chain(pod, self.by_uid())
        return chain[-1] if len(chain) > 1 else None


def namespace(kube: Kube, name: str) -> Namespace:
    with reachable(f"cannot list the pods of namespace {name}"):
        pods = kube.list_objects(CORE, "v1", PODS, namespace=name)
        owners = [
            *kube.list_objects(APPS, "v1", REPLICASETS, namespace=name),
            *kube.list_objects(BATCH, "v1", JOBS, namespace=name),
        ]
    return Namespace(name, pods, owners)


def vpas(kube: Kube, namespace: str) -> list[Obj]:
    """The namespace's VerticalPodAutoscalers; ``Unavailable`` when the cluster does not serve the
    API (VPA not installed), refuses us (403) or cannot be asked."""
    with reachable("the VerticalPodAutoscaler API could not be asked"):
        served = discovery_for(kube).resolve(f"{VPA_GROUP}/{VPA_VERSION}", VPA_KIND)
    if served is None:
        raise Unavailable(f"the cluster does not serve {VPA_GROUP}/{VPA_VERSION} {VPAS} (the VPA is not installed)")
    with reachable("cannot list VerticalPodAutoscalers"):
        try:
            return kube.list_objects(VPA_GROUP, VPA_VERSION, VPAS, namespace=namespace)
        except NotFound as exc:  # removed since discovery answered
            raise Unavailable(f"cannot list VerticalPodAutoscalers: {exc.message}") from exc
