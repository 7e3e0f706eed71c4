"""The PromQL of the allocation method over kube-state-metrics and the kubelet's cAdvisor metrics.

No recording rules are needed: every query is an instant query evaluated once, just before the
window's end, whose subquery ``[<window>s:<step>s]`` samples the window at a fixed resolution
(``STEP_SECONDS``). Subquery steps are aligned to multiples of the step, and evaluating at
``end - 1 ms`` makes them exactly ``start, start + 1 m, ..., end - 1 m``: each minute of the window
once, none of the next hour's. A sum over those steps is a quantity in unit-minutes (core-minutes,
byte-minutes); the method divides by 60 in Decimal.

Per container and step, the billed quantity is the larger of request and usage
(``(R > U) or U or R`` keeps R where it is larger, U where usage exists, R where only a request
does). Requests count only for pods whose phase is Pending or Running (a completed Job keeps
reporting requests); usage is gated the same way, so the 5-minute ``rate`` window does not bill a
pod for minutes after it ended. The pod-level (``container=""``) and pause (``POD``) series are
excluded.
"""

from __future__ import annotations

STEP_SECONDS = 60
RATE_WINDOW = "5m"
GPU_RESOURCE = "nvidia_com_gpu"  # kube-state-metrics' sanitised nvidia.com/gpu

_LIVE = 'max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"}) == 1'
_CONTAINERS = 'container!="", container!="POD"'
_BY = "namespace, pod, container"


def requests(resource: str) -> str:
    return (
        f'sum by ({_BY}) (kube_pod_container_resource_requests{{resource="{resource}", {_CONTAINERS}}} '
        f"and on (namespace, pod) ({_LIVE}))"
    )


CPU_USAGE = (
    f"sum by ({_BY}) (rate(container_cpu_usage_seconds_total{{{_CONTAINERS}}}[{RATE_WINDOW}]) "
    f"and on (namespace, pod) ({_LIVE}))"
)
MEMORY_USAGE = f"sum by ({_BY}) (container_memory_working_set_bytes{{{_CONTAINERS}}} and on (namespace, pod) ({_LIVE}))"
CPU_REQUESTS = requests("cpu")
MEMORY_REQUESTS = requests("memory")
GPU_REQUESTS = requests(GPU_RESOURCE)


def billed(request: str, usage: str) -> str:
    """max(request, usage) per container, at one step."""
    return f"(({request}) > ({usage})) or ({usage}) or ({request})"


CPU_BILLED = billed(CPU_REQUESTS, CPU_USAGE)
MEMORY_BILLED = billed(MEMORY_REQUESTS, MEMORY_USAGE)
PRESENT = f"({CPU_BILLED}) or ({MEMORY_BILLED}) or ({GPU_REQUESTS})"


def window(seconds: int) -> str:
    return f"[{seconds}s:{STEP_SECONDS}s]"


# -- GPUs (docs/how-to/prometheus-source.md, "GPUs"; read by ``infra.prometheus.gpus``) ------------
# kube-state-metrics' sanitised resource names: MIG slices (mixed strategy), time-sliced replicas
# renamed by the device plugin (renameByDefault), HAMi's percent of cores and MiB of memory.
MIG_RESOURCES = "nvidia_com_mig_.+"
SHARED_GPU_RESOURCE = "nvidia_com_gpu_shared"
HAMI_CORES = "nvidia_com_gpucores"
HAMI_MEMORY = "nvidia_com_gpumem"
REPLICAS_LABEL = "label_nvidia_com_gpu_replicas"  # GPU feature discovery's nvidia.com/gpu.replicas
# DCGM's exporter: per GPU (``UUID``, ``device``, ``modelName``; a MIG instance adds ``GPU_I_PROFILE``
# and ``GPU_I_ID``) and, mapped by the kubelet's pod-resources API, per ``namespace``/``pod``/``container``.
ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"  # fraction 0..1 of the GPU's (or MIG instance's) engines
UTIL = "DCGM_FI_DEV_GPU_UTIL"  # percent; per process (so per pod) on a shared GPU
FB_USED, FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"  # MiB
_DCGM = f'{{__name__=~"{ACTIVE}|{UTIL}|{FB_USED}|{FB_FREE}", UUID!=""}}'
_GPU_BY = f"{_BY}, UUID, device, modelName, GPU_I_PROFILE"
HOST_LABELS = ("Hostname", "hostname", "node")  # where the exporter (or a relabelling) puts the node


def requests_by_resource(pattern: str) -> str:
    """Like ``requests`` for the resources matching ``pattern``, one series per resource."""
    return (
        f'sum by ({_BY}, resource) (kube_pod_container_resource_requests{{resource=~"{pattern}", {_CONTAINERS}}} '
        f"and on (namespace, pod) ({_LIVE}))"
    )


def _per_container(metric: str) -> str:
    return f'sum by ({_GPU_BY}) ({metric}{{UUID!="", pod!="", {_CONTAINERS}}})'


def gpu_queries(seconds: int) -> dict[str, str]:
    """The GPU queries of one window, per container (unit-minutes) and per node."""
    w, last = window(seconds), f"[{seconds}s]"
    return {
        "gpu_mig_request": f"sum_over_time(({requests_by_resource(MIG_RESOURCES)}){w})",
        "gpu_shared_request": f"sum_over_time(({requests(SHARED_GPU_RESOURCE)}){w})",
        "gpu_cores_request": f"sum_over_time(({requests(HAMI_CORES)}){w})",
        "gpu_mem_request": f"sum_over_time(({requests(HAMI_MEMORY)}){w})",
        "gpu_replicas": f'last_over_time(kube_node_labels{{{REPLICAS_LABEL}!=""}}{last})',
        "gpu_active": f"sum_over_time(({_per_container(ACTIVE)}){w})",
        "gpu_util": f"sum_over_time(({_per_container(UTIL)}){w})",
        # a GPU's framebuffer: used + free of the whole GPU (not of a MIG instance); the largest
        # FB_USED is the device's own (a shared GPU's per-pod series are its processes' parts)
        "gpu_framebuffer": (
            f'max_over_time((max by (UUID) ({FB_USED}{{UUID!="", GPU_I_PROFILE=""}}) '
            f'+ on (UUID) max by (UUID) ({FB_FREE}{{UUID!="", GPU_I_PROFILE=""}})){w})'
        ),
    }


def presence_queries(seconds: int) -> dict[str, str]:
    """Each container's minutes and each pod's node: what ``gpu_queries``' answers are read with."""
    w, last = window(seconds), f"[{seconds}s]"
    return {
        "gpu_request": f"sum_over_time(({GPU_REQUESTS}){w})",
        "minutes": f"count_over_time(({PRESENT}){w})",
        "pod_node": f'last_over_time(kube_pod_info{{node!=""}}{last})',
    }


def device_queries(seconds: int) -> dict[str, str]:
    """The inventory of one window: per GPU the minutes DCGM saw it and, per label set, how long."""
    w, last = window(seconds), f"[{seconds}s]"
    labels = ", ".join(("UUID", "modelName", *HOST_LABELS))
    return {
        "gpu_minutes": f"count_over_time((count by (UUID) ({_DCGM})){w})",
        "gpu_labels": f"count_over_time((count by ({labels}) ({_DCGM})){w})",
        "node_names": f"count by (node) (last_over_time(kube_node_status_allocatable{last}))",
    }


# -- nodes (emissions from the operator's table: ``infra.prometheus.nodes``) -------------------------
NODE_RESOURCES = f"cpu|memory|{GPU_RESOURCE}"


def node_queries(seconds: int) -> dict[str, str]:
    """Per node of one window: the minutes it existed, its allocatable capacity in unit-minutes per
    resource, and each set of its labels with the minutes it was seen."""
    w = window(seconds)
    return {
        "node_minutes": f"count_over_time((count by (node) (kube_node_status_allocatable)){w})",
        "node_capacity": (
            f"sum_over_time((sum by (node, resource) "
            f'(kube_node_status_allocatable{{resource=~"{NODE_RESOURCES}"}})){w})'
        ),
        "node_labels": f"count_over_time((kube_node_labels){w})",
    }


def queries(seconds: int) -> dict[str, str]:
    """Every query of one window of ``seconds``, by the name the method reads it under."""
    w, last = window(seconds), f"[{seconds}s]"
    return {
        # per container: unit-minutes of the window
        "cpu_request": f"sum_over_time(({CPU_REQUESTS}){w})",
        "cpu_usage": f"sum_over_time(({CPU_USAGE}){w})",
        "cpu_billed": f"sum_over_time(({CPU_BILLED}){w})",
        "ram_request": f"sum_over_time(({MEMORY_REQUESTS}){w})",
        "ram_usage": f"sum_over_time(({MEMORY_USAGE}){w})",
        "ram_billed": f"sum_over_time(({MEMORY_BILLED}){w})",
        **presence_queries(seconds),  # gpu_request, minutes, pod_node
        "first": f"min_over_time((0 * ({PRESENT}) + time()){w})",
        "last": f"max_over_time((0 * ({PRESENT}) + time()){w})",
        # who owns what
        "pod_owner": f'last_over_time(kube_pod_owner{{owner_is_controller="true"}}{last})',
        "replicaset_owner": f'last_over_time(kube_replicaset_owner{{owner_is_controller="true"}}{last})',
        "namespace_labels": f"last_over_time(kube_namespace_labels{last})",
        # outside the containers: claims' requested bytes, LoadBalancer Services, node capacity
        "pvc_bytes": f"sum_over_time(kube_persistentvolumeclaim_resource_requests_storage_bytes{w})",
        "lb_minutes": f'count_over_time(kube_service_spec_type{{type="LoadBalancer"}}{w})',
        "capacity": (
            f"sum_over_time((sum by (resource) (kube_node_status_allocatable"
            f'{{resource=~"cpu|memory|{GPU_RESOURCE}"}})){w})'
        ),
        **gpu_queries(seconds),
    }
