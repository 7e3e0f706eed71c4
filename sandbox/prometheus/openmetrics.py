"""A ``World`` as OpenMetrics text, the input of ``promtool tsdb create-blocks-from openmetrics``.

The series and labels are kube-state-metrics' (v2) and the kubelet's cAdvisor's as Prometheus
stores them after a scrape (``namespace``/``pod``/``container`` labels); namespace labels are the
``label_<sanitised key>`` labels kube-state-metrics exports with
``--metric-labels-allowlist=namespaces=[...]``. Each metric family is written whole (one
``# TYPE`` block), each series in time order, timestamps in seconds, ending with ``# EOF``.

The cAdvisor families also carry the pod-level (``container=""``) and pause (``POD``) series a
real kubelet exports, with values that would double a pod's cost if a query forgot to exclude them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from sandbox.prometheus.world import WARM_UP, Pod, World

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_INVALID = re.compile(r"[^a-zA-Z0-9_]")

Labels = dict[str, str]


@dataclass
class _Family:
    name: str
    kind: str  # gauge or counter
    series: list[tuple[Labels, list[tuple[int, float]]]]  # labels, (minute, value) in time order


def render(world: World) -> str:
    """The whole world as one OpenMetrics document."""
    lines: list[str] = []
    base = int(world.first_hour.timestamp())
    for family in _families(world):
        lines.append(f"# TYPE {family.name} {family.kind}")
        sample_name = family.name + ("_total" if family.kind == "counter" else "")
        for labels, points in family.series:
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            for minute, value in points:
                lines.append(f"{sample_name}{{{text}}} {_number(value)} {base + minute * 60}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _minutes(world: World, start: int, stop: int | None) -> range:
    return range(max(start, -WARM_UP), world.stop_of(stop))


def _constant(world: World, start: int, stop: int | None, value: float) -> list[tuple[int, float]]:
    return [(m, value) for m in _minutes(world, start, stop)]


def _running(world: World, pod: Pod) -> range:
    return _minutes(world, pod.start, pod.done if pod.done is not None else pod.stop)


def _families(world: World) -> Iterator[_Family]:
    everywhere = -WARM_UP, None
    yield _Family(
        "kube_node_status_allocatable",
        "gauge",
        [
            (labels, _constant(world, *everywhere, value))
            for node in world.nodes
            for labels, value in (
                ({"node": node.name, "resource": "cpu", "unit": "core"}, node.cpu_cores),
                ({"node": node.name, "resource": "memory", "unit": "byte"}, node.memory_bytes),
                *(
                    [({"node": node.name, "resource": "nvidia_com_gpu", "unit": "integer"}, node.gpus)]
                    if node.gpus
                    else []
                ),
            )
        ],
    )
    yield _Family(
        "kube_namespace_labels",
        "gauge",
        [
            (
                {"namespace": ns, **{"label_" + _INVALID.sub("_", k): v for k, v in labels.items()}},
                _constant(world, *everywhere, 1),
            )
            for ns, labels in world.namespaces.items()
        ],
    )
    yield _Family(
        "kube_pod_info",
        "gauge",
        [(_pod(p) | {"node": p.node}, _constant(world, p.start, p.stop, 1)) for p in world.pods],
    )
    yield _Family(
        "kube_pod_owner",
        "gauge",
        [
            (
                _pod(p)
                | (
                    {"owner_kind": p.owner_kind, "owner_name": p.owner_name, "owner_is_controller": "true"}
                    if p.owner_kind
                    else {"owner_kind": "<none>", "owner_name": "<none>", "owner_is_controller": "<none>"}
                ),
                _constant(world, p.start, p.stop, 1),
            )
            for p in world.pods
        ],
    )
    yield _Family(
        "kube_replicaset_owner",
        "gauge",
        [
            (
                {
                    "namespace": ns,
                    "replicaset": rs,
                    "owner_kind": "Deployment",
                    "owner_name": dep,
                    "owner_is_controller": "true",
                },
                _constant(world, *everywhere, 1),
            )
            for (ns, rs), dep in world.replicasets.items()
        ],
    )
    yield _Family("kube_pod_status_phase", "gauge", [s for p in world.pods for s in _phases(world, p)])
    yield _Family(
        "kube_pod_container_resource_requests",
        "gauge",
        [
            (
                _pod(p) | {"container": c.name, "node": p.node, "resource": resource, "unit": unit},
                _constant(world, p.start, p.stop, value),
            )
            for p in world.pods
            for c in p.containers
            for resource, unit, value in (
                ("cpu", "core", c.cpu_request),
                ("memory", "byte", c.memory_request),
                ("nvidia_com_gpu", "integer", c.gpu_request or None),
            )
            if value is not None
        ],
    )
    yield _Family("container_cpu_usage_seconds", "counter", [s for p in world.pods for s in _cpu(world, p)])
    yield _Family("container_memory_working_set_bytes", "gauge", [s for p in world.pods for s in _memory(world, p)])
    yield _Family(
        "kube_persistentvolumeclaim_resource_requests_storage_bytes",
        "gauge",
        [
            ({"namespace": c.namespace, "persistentvolumeclaim": c.name}, _constant(world, c.start, c.stop, c.bytes))
            for c in world.claims
        ],
    )
    yield _Family(
        "kube_service_spec_type",
        "gauge",
        [
            ({"namespace": s.namespace, "service": s.name, "type": s.type}, _constant(world, s.start, s.stop, 1))
            for s in world.services
        ],
    )


def _pod(p: Pod) -> Labels:
    return {"namespace": p.namespace, "pod": p.name}


def _phases(world: World, p: Pod) -> Iterator[tuple[Labels, list[tuple[int, float]]]]:
    for phase in PHASES:
        points = []
        for m in _minutes(world, p.start, p.stop):
            current = "Succeeded" if p.done is not None and m >= p.done else "Running"
            points.append((m, 1.0 if phase == current else 0.0))
        yield _pod(p) | {"phase": phase}, points


def _cpu(world: World, p: Pod) -> Iterator[tuple[Labels, list[tuple[int, float]]]]:
    running = _running(world, p)
    for c in p.containers:
        yield _pod(p) | {"container": c.name}, [(m, c.cpu_usage * 60 * (m - running.start + 1)) for m in running]
    total = sum(c.cpu_usage for c in p.containers)
    # The pod's cgroup (container="") holds every container's time; the pause container ("POD") a little.
    yield _pod(p) | {"container": ""}, [(m, total * 60 * (m - running.start + 1)) for m in running]
    yield _pod(p) | {"container": "POD"}, [(m, 0.125 * 60 * (m - running.start + 1)) for m in running]


def _memory(world: World, p: Pod) -> Iterator[tuple[Labels, list[tuple[int, float]]]]:
    running = _running(world, p)
    for c in p.containers:
        yield _pod(p) | {"container": c.name}, [(m, c.memory_usage) for m in running]
    yield _pod(p) | {"container": ""}, [(m, sum(c.memory_usage for c in p.containers)) for m in running]
    yield _pod(p) | {"container": "POD"}, [(m, 64 * 2**20) for m in running]
