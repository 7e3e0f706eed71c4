"""What the Prometheus source says of each container's GPU, and which physical GPUs an hour had.

The collection pass splits each physical GPU's cost (``finops.gpus``); it needs, per container,
how its GPU is shared, what it requested and used of it, and which GPU it is, and, per hour, every
GPU DCGM's exporter saw, used or not. Both come from series the method already relies on
(kube-state-metrics) and from NVIDIA's dcgm-exporter (docs/how-to/prometheus-source.md, "GPUs").

How a container's GPU is shared, first rule that applies:

1. ``hami``: it requests HAMi's ``nvidia.com/gpucores`` or ``nvidia.com/gpumem``;
2. ``mig``: it requests a MIG slice (``nvidia.com/mig-1g.10gb``), or its DCGM series are a MIG
   instance's (``GPU_I_PROFILE``: the single strategy hands slices out as ``nvidia.com/gpu``);
3. ``time-sliced``: it requests ``nvidia.com/gpu.shared`` (the device plugin's renamed replicas),
   or ``nvidia.com/gpu`` on a node labelled ``nvidia.com/gpu.replicas`` above 1;
4. ``whole``: it requests ``nvidia.com/gpu``.

A HAMi container that sets neither gpucores nor gpumem is not recognised as HAMi: HAMi then gives
it all of the GPU's memory, so no other pod fits beside it, and rule 3 or 4 applies.

Its use is DCGM's engine activity. On a GPU that is not shared, the exporter labels the GPU's (or
MIG instance's) own series with the pod holding it, so ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` is that
pod's activity (``DCGM_FI_DEV_GPU_UTIL`` / 100 when the profiling metric is not collected). On a
shared GPU it is not: the exporter copies the GPU's activity onto every pod sharing it, and only
``DCGM_FI_DEV_GPU_UTIL`` is measured per process (so per pod), so a shared container's use is its
``DCGM_FI_DEV_GPU_UTIL`` / 100, or unknown.

Prometheus sums in float64: the unit-minutes are read as Decimal and rounded to 10^-9, then
averaged over the container's minutes to 10^-10, as the source's other quantities are.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from finops.allocations import Container
from finops.errors import SourceMisconfigured
from finops.gpus import GpuDevice, Sharing
from infra.prometheus import Sample, promql
from infra.prometheus.kube_state import container, longest_labels

_NANO = Decimal("1e-9")
_PLACES = Decimal("1e-10")
_PERCENT = Decimal(100)
_SHARED = (Sharing.HAMI, Sharing.TIME_SLICED)
_MIG_RESOURCE = re.compile(r"nvidia_com_mig_(?P<compute>[1-7])g_(?P<memory>\d+)gb(?P<me>_me)?")


def _sums(samples: list[Sample]) -> dict[Container, Decimal]:
    out: dict[Container, Decimal] = defaultdict(Decimal)
    for s in samples:
        out[container(s)] += s.value
    return {key: value.quantize(_NANO) for key, value in out.items()}


def _avg(unit_minutes: Decimal, minutes: Decimal) -> Decimal:
    return (unit_minutes / minutes).quantize(_PLACES)


def mig_profile(resource: str) -> str:
    """``nvidia_com_mig_1g_10gb`` (kube-state-metrics' sanitised ``nvidia.com/mig-1g.10gb``) as
    ``1g.10gb``; ``..._me`` is the media-extension profile ``1g.10gb+me``."""
    match = _MIG_RESOURCE.fullmatch(resource)
    if match is None:
        raise SourceMisconfigured(f"kube_pod_container_resource_requests: resource {resource!r} is not a MIG slice")
    return f"{match['compute']}g.{match['memory']}gb" + ("+me" if match["me"] else "")


def replicas(samples: list[Sample]) -> dict[str, int]:
    """Per node, GPU feature discovery's ``nvidia.com/gpu.replicas`` (kube_node_labels)."""
    out: dict[str, int] = {}
    for s in samples:
        node, text = s.labels.get("node", ""), s.labels.get(promql.REPLICAS_LABEL, "")
        if not text.isdigit():
            raise SourceMisconfigured(f"kube_node_labels: {promql.REPLICAS_LABEL} {text!r} of node {node} is no count")
        out[node] = int(text)
    return out


class _Seen:
    """One container's DCGM series: per GPU (and MIG instance) its activity- and util-minutes."""

    def __init__(self) -> None:
        self.gpus: dict[tuple[str, ...], dict[str, Decimal]] = defaultdict(dict)

    def add(self, metric: str, s: Sample) -> None:
        key = tuple(s.labels.get(k, "") for k in ("UUID", "GPU_I_PROFILE", "device", "modelName"))
        self.gpus[key][metric] = self.gpus[key].get(metric, Decimal(0)) + s.value

    def total(self, metric: str) -> Decimal | None:
        values = [figures[metric] for figures in self.gpus.values() if metric in figures]
        return sum(values, Decimal(0)).quantize(_NANO) if values else None

    @property
    def first(self) -> tuple[str, ...]:
        """The GPU it is reported on (the first by UUID when it holds several)."""
        return min(self.gpus)


def allocations(
    answers: Mapping[str, list[Sample]], minutes: Mapping[Container, Decimal], nodes: Mapping[tuple[str, str], str]
) -> dict[Container, dict[str, Any]]:
    """``gpuAllocation`` per container that holds a GPU (module docstring); ``nodes`` is each
    pod's node, ``minutes`` each container's minutes in the window."""
    whole = _sums(answers["gpu_request"])
    shared = _sums(answers["gpu_shared_request"])
    cores = _sums(answers["gpu_cores_request"])
    memory = _sums(answers["gpu_mem_request"])
    mig: dict[Container, dict[str, Decimal]] = defaultdict(dict)
    for s in answers["gpu_mig_request"]:
        mig[container(s)][s.labels.get("resource", "")] = s.value.quantize(_NANO)
    seen: dict[Container, _Seen] = defaultdict(_Seen)
    for metric in ("gpu_active", "gpu_util"):
        for s in answers[metric]:
            seen[container(s)].add(metric, s)
    framebuffer = {s.labels.get("UUID", ""): s.value for s in answers["gpu_framebuffer"]}
    node_replicas = replicas(answers["gpu_replicas"])
    out: dict[Container, dict[str, Any]] = {}
    for key in sorted(set(whole) | set(shared) | set(cores) | set(memory) | set(mig)):
        n = minutes.get(key, Decimal(0))
        if n <= 0:
            continue
        dcgm = seen.get(key)
        uuid, profile, device, model = dcgm.first if dcgm else ("", "", "", "")
        if cores.get(key) or memory.get(key):
            sharing = Sharing.HAMI
            if cores.get(key):
                request: Decimal | None = _avg(cores[key] / _PERCENT, n)
            else:  # gpumem alone: its MiB of the GPU's framebuffer, unknown without DCGM's
                total = framebuffer.get(uuid) if uuid else None
                request = _avg(memory[key] / total, n) if total else None
        elif mig.get(key) or profile:
            sharing = Sharing.MIG
            slices = mig.get(key, {})
            request = _avg(sum(slices.values(), Decimal(0)) if slices else whole.get(key, Decimal(0)), n)
            if not profile:  # DCGM's label is the exact profile; kube-state-metrics' is sanitised
                profile = mig_profile(max(sorted(slices), key=lambda r: slices[r]))
        elif shared.get(key) or (whole.get(key) and node_replicas.get(nodes.get(key[:2], ""), 1) > 1):
            sharing = Sharing.TIME_SLICED
            request = _avg(shared.get(key, Decimal(0)) + whole.get(key, Decimal(0)), n)
        elif whole.get(key):
            sharing = Sharing.WHOLE
            request = _avg(whole[key], n)
        else:
            continue
        out[key] = {
            "gpuRequestAverage": request,
            "gpuUsageAverage": _usage(dcgm, sharing, n),
            "isGPUShared": sharing in _SHARED,
            "gpuDevice": device or None,
            "gpuModel": model or None,
            "gpuUUID": uuid or None,
            "gpuSharing": str(sharing),
            "gpuProfile": (profile or None) if sharing is Sharing.MIG else None,
        }
    return out


def _usage(dcgm: _Seen | None, sharing: Sharing, minutes: Decimal) -> Decimal | None:
    """Average engine activity over the container's minutes (module docstring); None: no series."""
    if dcgm is None:
        return None
    active = None if sharing in _SHARED else dcgm.total("gpu_active")
    if active is not None:
        return _avg(active, minutes)
    util = dcgm.total("gpu_util")
    return None if util is None else _avg(util / _PERCENT, minutes)


def devices(answers: Mapping[str, list[Sample]]) -> list[GpuDevice]:
    """Every GPU DCGM saw in the window, by UUID: its model, its node and for how many minutes.

    The node is the first of the exporter's ``Hostname`` (its ``NODE_NAME``, which its chart sets to
    the pod's node), ``hostname`` (the spelling after 4.5.3-4.8.2) and ``node`` (a relabelling)
    that names a node of the cluster; none naming one is refused, since the GPU could not be
    matched with the pods on it."""
    known = {s.labels.get("node", "") for s in answers["node_names"]} - {""}
    seen = longest_labels(answers["gpu_labels"], "UUID")  # an exporter upgrade can change them mid-hour
    out = []
    for s in sorted(answers["gpu_minutes"], key=lambda s: s.labels.get("UUID", "")):
        uuid = s.labels.get("UUID", "")
        labels = seen.get(uuid) or {"UUID": uuid}
        node = next((labels[k] for k in promql.HOST_LABELS if labels.get(k) in known), None)
        if node is None:
            found = ", ".join(f"{k}={labels[k]!r}" for k in promql.HOST_LABELS if k in labels) or "no host label"
            raise SourceMisconfigured(
                f"DCGM GPU {uuid} ({found}) names no node of kube_node_status_allocatable: set NODE_NAME "
                "from spec.nodeName on dcgm-exporter"
            )
        if not labels.get("modelName"):
            raise SourceMisconfigured(f"DCGM GPU {uuid} has no modelName label")
        out.append(GpuDevice(uuid=uuid, model=labels["modelName"], node=node, minutes=s.value))
    return out
