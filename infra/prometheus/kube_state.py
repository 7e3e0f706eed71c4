"""What kube-state-metrics says of Kubernetes objects, read the same way by every pass of the
Prometheus source (``source``'s allocations, ``nodes``' inventory, ``gpus``' figures): labels
exported as ``label_<sanitised key>``, each pod's node and controller, and the label set that
describes a series for a whole window when it changed within it.

Why one module: these readings are the method's joins (a container to its pod's node, owner and
namespace's labels); two passes reading them differently would store rows that disagree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal

from finops.allocations import Container
from infra.prometheus.client import Sample


def kube_labels(s: Sample) -> dict[str, str]:
    """kube-state-metrics' ``label_team="x"`` of a Kubernetes object as ``{"team": "x"}`` (the
    sanitised keys, as OpenCost's ``namespaceLabels`` and ``nodeLabels`` carry them)."""
    return {k.removeprefix("label_"): v for k, v in s.labels.items() if k.startswith("label_")}


def longest_labels(
    samples: Iterable[Sample], by: str, labels: Callable[[Sample], dict[str, str]] = lambda s: s.labels
) -> dict[str, dict[str, str]]:
    """Per value of the ``by`` label, the label set seen longest in the window (each sample's value
    is its minutes; ties: the first in label order). Why one set: a node relabelled or an exporter
    upgraded mid-hour has two series for the hour, and the hour is described by one."""
    seen: dict[str, list[tuple[Decimal, dict[str, str]]]] = defaultdict(list)
    for s in samples:
        seen[s.labels.get(by, "")].append((s.value, labels(s)))
    return {
        key: max(sorted(sets, key=lambda c: sorted(c[1].items())), key=lambda c: c[0])[1] for key, sets in seen.items()
    }


def pod_nodes(samples: Iterable[Sample]) -> dict[tuple[str, str], str]:
    """Each pod's node, by (namespace, pod), from ``kube_pod_info``'s ``node`` label."""
    return {(s.labels.get("namespace", ""), s.labels.get("pod", "")): s.labels["node"] for s in samples}


def container(s: Sample) -> Container:
    """The container a per-container series is of, by its ``namespace``, ``pod`` and ``container``
    labels (kube-state-metrics', cAdvisor's and DCGM's exporter's alike)."""
    return s.labels.get("namespace", ""), s.labels.get("pod", ""), s.labels.get("container", "")


def by_container(samples: list[Sample]) -> dict[Container, Decimal]:
    """Each series' value by its container (one series per container: the queries sum by it)."""
    return {container(s): s.value for s in samples}


def controllers(pod_owners: list[Sample], rs_owners: list[Sample]) -> dict[tuple[str, str], tuple[str, str]]:
    """``(controllerKind, controller)`` per pod as OpenCost reports them: a ReplicaSet's pods
    belong to its Deployment; other owners are their own kind, lower-case."""
    deployments = {
        (s.labels.get("namespace", ""), s.labels.get("replicaset", "")): s.labels.get("owner_name", "")
        for s in rs_owners
        if s.labels.get("owner_kind") == "Deployment"
    }
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for s in pod_owners:
        namespace, pod = s.labels.get("namespace", ""), s.labels.get("pod", "")
        kind, name = s.labels.get("owner_kind", ""), s.labels.get("owner_name", "")
        if kind in ("", "<none>"):
            continue
        if kind == "ReplicaSet" and (namespace, name) in deployments:
            out[(namespace, pod)] = ("deployment", deployments[(namespace, name)])
        else:
            out[(namespace, pod)] = (kind.lower(), name)
    return out


def namespace_labels(samples: list[Sample]) -> dict[str, dict[str, str]]:
    """``label_team="x"`` as OpenCost's ``namespaceLabels`` (sanitised keys, ``team: x``)."""
    return {s.labels.get("namespace", ""): kube_labels(s) for s in samples}
