"""A ``World`` as OpenMetrics text, the input of ``promtool tsdb create-blocks-from openmetrics``.

The series and labels are kube-state-metrics' (v2) and the kubelet's cAdvisor's as Prometheus
stores them after a scrape (``namespace``/``pod``/``container`` labels); namespace labels are the
``label_<sanitised key>`` labels kube-state-metrics exports with
``--metric-labels-allowlist=namespaces=[...]``. Each metric family is written whole (one
``# TYPE`` block), each series in time order, timestamps in seconds, ending with ``# EOF``.

The cAdvisor families also carry the pod-level (``container=""``) and pause (``POD``) series a
real kubelet exports, with values that would double a pod's cost if a query forgot to exclude them.

The GPU series are NVIDIA dcgm-exporter's (4.5.3-4.8.2, scraped with ``honorLabels: true`` so its
``namespace``/``pod``/``container`` labels are kept): a whole GPU's or MIG instance's series carry
the pod holding it; on a shared GPU (``Gpu.shared``, ``KUBERNETES_VIRTUAL_GPUS``) the GPU's own
``DCGM_FI_DEV_GPU_UTIL`` and ``DCGM_FI_DEV_FB_USED`` are kept and each pod gets its processes' part,
while its other series are the GPU's, copied onto every pod; MIG GPUs have no
``DCGM_FI_DEV_GPU_UTIL`` (NVML does not measure it there).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from sandbox.prometheus.world import WARM_UP, Gpu, GpuLoad, Pod, World

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
            (labels, _constant(world, node.start, node.stop, value))
            for node in world.nodes
            for labels, value in (
                ({"node": node.name, "resource": "cpu", "unit": "core"}, node.cpu_cores),
                ({"node": node.name, "resource": "memory", "unit": "byte"}, node.memory_bytes),
                *(
                    [({"node": node.name, "resource": "nvidia_com_gpu", "unit": "integer"}, node.gpus)]
                    if node.gpus
                    else []
                ),
                *(({"node": node.name, "resource": r, "unit": "integer"}, n) for r, n in node.allocatable),
            )
        ],
    )
    yield _Family(
        "kube_node_labels",
        "gauge",
        [
            (
                {"node": node.name, **{"label_" + _INVALID.sub("_", k): v for k, v in node.labels}},
                _constant(world, node.start, node.stop, 1),
            )
            for node in world.nodes
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
                *((r, "integer", n) for r, n in c.resources),
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

    yield from _dcgm(world)


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


_DCGM_FAMILIES = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
)


def _dcgm(world: World) -> Iterator[_Family]:
    """dcgm-exporter's series of every GPU, minute by minute (module docstring)."""
    series: dict[str, dict[tuple[tuple[str, str], ...], list[tuple[int, float]]]] = {
        name: defaultdict(list) for name in _DCGM_FAMILIES
    }
    pods = {(p.namespace, p.name): p for p in world.pods}
    for gpu in world.gpus:
        loads = [load for load in world.gpu_loads if load.uuid == gpu.uuid]
        for m in _minutes(world, -WARM_UP, None):
            present = [load for load in loads if m in _running(world, pods[(load.namespace, load.pod)])]
            for name, labels, value in _gpu_minute(gpu, present):
                series[name][tuple(sorted(labels.items()))].append((m, value))
    for name in _DCGM_FAMILIES:
        yield _Family(name, "gauge", [(dict(key), points) for key, points in series[name].items()])


def _gpu_minute(gpu: Gpu, present: list[GpuLoad]) -> Iterator[tuple[str, Labels, float]]:
    device = {
        "gpu": str(gpu.index),
        "UUID": gpu.uuid,
        "device": f"nvidia{gpu.index}",
        "modelName": gpu.model,
        "pci_bus_id": f"00000000:{gpu.index + 0x17:02X}:00.0",
        "Hostname": gpu.node,
        "instance": f"{gpu.node}:9400",
        "job": "dcgm-exporter",
    }
    used = sum(load.framebuffer_mib for load in present)
    if gpu.instances:  # MIG: the GPU's memory, and each instance's activity with its pod
        yield "DCGM_FI_DEV_FB_USED", device, used
        yield "DCGM_FI_DEV_FB_FREE", device, gpu.framebuffer_mib - used
        for instance in gpu.instances:
            labels = device | {"GPU_I_ID": str(instance.id), "GPU_I_PROFILE": instance.profile}
            load = next((load for load in present if load.instance == instance.id), None)
            yield "DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels | _holder(load), load.active if load else 0
        return
    if not present:
        yield from _device(device, 0, 0, 0, gpu.framebuffer_mib)
        return
    if not gpu.shared:  # the pod holding it labels the GPU's own series
        (load,) = present
        yield from _device(device | _holder(load), load.active, load.util, used, gpu.framebuffer_mib - used)
        return
    active, util = min(1.0, sum(load.active for load in present)), min(100, sum(load.util for load in present))
    yield "DCGM_FI_DEV_GPU_UTIL", device, util
    yield "DCGM_FI_DEV_FB_USED", device, used
    for load in present:
        mine = device | _holder(load)
        yield "DCGM_FI_DEV_GPU_UTIL", mine | {"pod_uid": f"uid-{load.pod}"}, load.util
        yield "DCGM_FI_DEV_FB_USED", mine | {"pod_uid": f"uid-{load.pod}"}, load.framebuffer_mib
        yield "DCGM_FI_DEV_FB_FREE", mine, gpu.framebuffer_mib - used
        yield "DCGM_FI_PROF_GR_ENGINE_ACTIVE", mine, active


def _device(labels: Labels, active: float, util: int, used: int, free: int) -> Iterator[tuple[str, Labels, float]]:
    yield "DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, active
    yield "DCGM_FI_DEV_GPU_UTIL", labels, util
    yield "DCGM_FI_DEV_FB_USED", labels, used
    yield "DCGM_FI_DEV_FB_FREE", labels, free


def _holder(load: GpuLoad | None) -> Labels:
    return {} if load is None else {"namespace": load.namespace, "pod": load.pod, "container": load.container}
