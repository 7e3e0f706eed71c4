"""A small cluster described as the series kube-state-metrics and the kubelet would export.

A real Prometheus's TSDB is built from these series (``sandbox.prometheus.openmetrics``), and tests
compute the expected money by hand from the same definitions; ``finops run --source prometheus``
shows the same cluster.

Time is in minutes from ``first_hour`` (the first hour that is collected); series start
``WARM_UP`` minutes earlier so a CPU ``rate`` is whole from the first collected minute. Samples
are one a minute, on the minute, as a 60 s scrape would take them. A pod exists in
``[start, stop)``; its phase is Running while it runs and ``Succeeded`` from ``done`` on (a
completed Job, still reporting its requests until it is deleted at ``stop``).

Values are chosen exact in binary (multiples of 1/8 core, whole MiB), so Prometheus's float
sums carry no noise and a hand computation can match to the micro; pods that start or stop
inside an hour use less than they request, so the ramp of a ``rate`` at their edges never
decides what they are billed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

MIB = 2**20
GIB = 2**30
WARM_UP = 15  # minutes of series before the first collected hour


@dataclass(frozen=True)
class Container:
    name: str
    cpu_request: float | None  # cores; None: no request
    cpu_usage: float  # cores, constant while the pod runs
    memory_request: int | None  # bytes
    memory_usage: int  # bytes (working set)
    gpu_request: int = 0
    resources: tuple[tuple[str, int], ...] = ()  # other requests, as kube-state-metrics names them


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    node: str
    containers: tuple[Container, ...]
    owner_kind: str = ""  # "" for a bare pod
    owner_name: str = ""
    start: int = -WARM_UP  # minutes from first_hour
    stop: int | None = None  # None: to the end of the world
    done: int | None = None  # from then on phase Succeeded (a completed Job), requests still reported


@dataclass(frozen=True)
class Node:
    name: str
    cpu_cores: float
    memory_bytes: int
    gpus: int = 0
    allocatable: tuple[tuple[str, int], ...] = ()  # other resources (nvidia_com_mig_1g_10gb, ...)
    labels: tuple[tuple[str, str], ...] = ()  # the Node's labels kube-state-metrics is allowed to export
    start: int = -WARM_UP  # minutes from first_hour: a node added (or, with stop, removed) mid-hour
    stop: int | None = None


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    bytes: int
    start: int = -WARM_UP
    stop: int | None = None


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    type: str  # LoadBalancer, ClusterIP, ...
    start: int = -WARM_UP
    stop: int | None = None


@dataclass(frozen=True)
class MigInstance:
    """A MIG GPU instance: DCGM's ``GPU_I_ID`` and ``GPU_I_PROFILE``."""

    id: int
    profile: str  # 1g.10gb


@dataclass(frozen=True)
class Gpu:
    """A physical GPU as DCGM's exporter reports it (``gpu``, ``device``, ``UUID``, ``modelName``,
    ``Hostname``). ``shared``: time-sliced or HAMi, the exporter running with
    ``KUBERNETES_VIRTUAL_GPUS``, so per pod it measures ``DCGM_FI_DEV_GPU_UTIL`` and
    ``DCGM_FI_DEV_FB_USED`` of its processes and copies the GPU's other series."""

    node: str
    index: int
    uuid: str
    model: str
    framebuffer_mib: int  # DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE
    shared: bool = False
    instances: tuple[MigInstance, ...] = ()


@dataclass(frozen=True)
class GpuLoad:
    """What one container runs on a GPU (or one of its MIG instances) while its pod runs:
    ``active`` is its DCGM_FI_PROF_GR_ENGINE_ACTIVE (of the instance for MIG; on a shared GPU its
    part of the GPU's, which the exporter reports summed), ``util`` its DCGM_FI_DEV_GPU_UTIL in
    percent, ``framebuffer_mib`` its DCGM_FI_DEV_FB_USED."""

    namespace: str
    pod: str
    container: str
    uuid: str
    active: float
    util: int
    framebuffer_mib: int
    instance: int | None = None  # the MIG instance's GPU_I_ID


@dataclass(frozen=True)
class World:
    first_hour: datetime
    hours: int
    nodes: tuple[Node, ...]
    namespaces: dict[str, dict[str, str]]  # name -> labels (as set on the Namespace)
    pods: tuple[Pod, ...]
    claims: tuple[Claim, ...] = ()
    services: tuple[Service, ...] = ()
    replicasets: dict[tuple[str, str], str] = field(default_factory=dict)  # (ns, rs) -> Deployment
    gpus: tuple[Gpu, ...] = ()
    gpu_loads: tuple[GpuLoad, ...] = ()

    @property
    def end(self) -> int:
        """The world's last minute (exclusive), in minutes from ``first_hour``."""
        return self.hours * 60

    def stop_of(self, stop: int | None) -> int:
        return self.end if stop is None else stop


def demo_world(first_hour: datetime, hours: int = 4) -> World:
    """Five namespaces on a pool of two nodes (one with a GPU): a Deployment with a sidecar that
    uses more than it requests and a second replica that starts and stops mid-hour, a StatefulSet
    that stops mid-hour, a completed Job still reporting requests, a pod without requests, a GPU
    trainer, two claims and two LoadBalancer Services (one ClusterIP Service that costs nothing),
    and a namespace without owner labels."""
    app = Container("app", 0.5, 0.25, 512 * MIB, 768 * MIB)
    proxy = Container("proxy", 0.125, 0.25, 64 * MIB, 32 * MIB)
    return World(
        first_hour=first_hour,
        hours=hours,
        nodes=(Node("node-a", 4, 16 * GIB), Node("node-b", 8, 32 * GIB, gpus=1)),
        namespaces={
            "shop": {"team": "checkout", "cost-center": "cc-100"},
            "search": {"team": "discovery", "cost-center": "cc-200"},
            "ml": {"team": "research", "cost-center": "cc-300"},
            "batch": {"team": "data", "cost-center": "cc-400"},
            "legacy": {},
        },
        replicasets={("shop", "web-7d4b9"): "web", ("ml", "trainer-5c6d7"): "trainer"},
        pods=(
            Pod("shop", "web-7d4b9-a", "node-a", (app, proxy), "ReplicaSet", "web-7d4b9"),
            Pod(
                "shop",
                "web-7d4b9-b",
                "node-b",
                (Container("app", 0.5, 0.125, 512 * MIB, 256 * MIB),),
                "ReplicaSet",
                "web-7d4b9",
                start=90,
                stop=200,
            ),
            Pod(
                "search",
                "indexer-0",
                "node-b",
                (Container("indexer", 1, 0.75, 2 * GIB, 1536 * MIB),),
                "StatefulSet",
                "indexer",
                stop=150,
            ),
            Pod(
                "batch",
                "report-29400000-x7k2p",
                "node-a",
                (Container("report", 1, 0.5, GIB, 512 * MIB),),
                "Job",
                "report-29400000",
                start=10,
                done=40,
            ),
            Pod("legacy", "tool", "node-b", (Container("tool", None, 0.375, None, 256 * MIB),)),
            Pod(
                "ml",
                "trainer-5c6d7-q8w",
                "node-b",
                (Container("trainer", 2, 1, 4 * GIB, 3 * GIB, gpu_request=1),),
                "ReplicaSet",
                "trainer-5c6d7",
                start=30,
            ),
        ),
        claims=(Claim("search", "data-indexer-0", 10 * GIB), Claim("shop", "uploads", 5 * GIB, start=60)),
        services=(
            Service("shop", "web-public", "LoadBalancer"),
            Service("search", "api", "ClusterIP"),
            Service("ml", "notebook", "LoadBalancer", start=120),
        ),
        # node-b's GPU as DCGM's exporter reports it, so the hours' GPU split has its inventory
        gpus=(Gpu("node-b", 0, DEMO_GPU, "Tesla T4", 15360),),
    )


DEMO_GPU = "GPU-d0000000-0000-4000-8000-000000000001"  # demo_world's GPU on node-b


def gpu_uuid(kind: str, index: int) -> str:
    """The UUIDs of ``gpu_world``'s GPUs: ``GPU-a1000000-0000-4000-8000-000000000001``."""
    return f"GPU-{kind}000000-0000-4000-8000-{index:012d}"


def gpu_world(first_hour: datetime, hours: int = 2) -> World:
    """Four GPU nodes, one per way of sharing a GPU, with the series of kube-state-metrics and of
    DCGM's exporter (``Hostname`` is the node). Every figure is constant while a pod runs:

    - ``gpu-a100``: two NVIDIA A100-SXM4-80GB GPUs, whole: ``ml/train-0`` holds GPU 0 at 30%
      engine activity (util 45%), GPU 1 is idle;
    - ``gpu-t4``: one Tesla T4, time-sliced (``nvidia.com/gpu.replicas=4``): three pods of
      ``inference`` each requesting one replica, at 40%, 20% and 10% util, the last from minute 30;
    - ``gpu-h100``: one NVIDIA H100 80GB HBM3 in MIG slices 1g.10gb, 2g.20gb and 3g.40gb, each held
      by a pod of ``research`` at 50%, 25% and 75% activity of its slice;
    - ``gpu-l4``: one NVIDIA L4 shared by HAMi: ``notebooks`` pods with gpucores 25 (util 20%),
      gpucores 50 (util 35%), and gpumem 5632 MiB alone (a quarter of the 22528 MiB, util 5%).
    """

    def pod(
        namespace: str, name: str, node: str, *resources: tuple[str, int], gpus: int = 1, start: int = -WARM_UP
    ) -> Pod:
        container = Container("main", 1, 0.5, 4 * GIB, 2 * GIB, gpu_request=gpus, resources=resources)
        return Pod(namespace, name, node, (container,), "StatefulSet", name.rsplit("-", 1)[0], start=start)

    a100, t4, h100, l4 = (gpu_uuid("a1", 0), gpu_uuid("a1", 1)), gpu_uuid("74", 0), gpu_uuid("h1", 0), gpu_uuid("14", 0)
    return World(
        first_hour=first_hour,
        hours=hours,
        nodes=(
            Node("gpu-a100", 32, 256 * GIB, gpus=2),
            Node("gpu-t4", 8, 32 * GIB, gpus=4, labels=(("nvidia.com/gpu.replicas", "4"),)),
            Node(
                "gpu-h100",
                32,
                256 * GIB,
                allocatable=(
                    ("nvidia_com_mig_1g_10gb", 1),
                    ("nvidia_com_mig_2g_20gb", 1),
                    ("nvidia_com_mig_3g_40gb", 1),
                ),
            ),
            Node("gpu-l4", 16, 64 * GIB, gpus=10),  # HAMi's deviceSplitCount: 10 pods a GPU
        ),
        namespaces={
            "ml": {"team": "research", "cost-center": "cc-300"},
            "inference": {"team": "serving", "cost-center": "cc-500"},
            "research": {"team": "research", "cost-center": "cc-300"},
            "notebooks": {"team": "analytics", "cost-center": "cc-600"},
        },
        pods=(
            pod("ml", "train-0", "gpu-a100"),
            pod("inference", "asr-0", "gpu-t4"),
            pod("inference", "ocr-0", "gpu-t4"),
            pod("inference", "tts-0", "gpu-t4", start=30),
            pod("research", "mig-small-0", "gpu-h100", ("nvidia_com_mig_1g_10gb", 1), gpus=0),
            pod("research", "mig-medium-0", "gpu-h100", ("nvidia_com_mig_2g_20gb", 1), gpus=0),
            pod("research", "mig-large-0", "gpu-h100", ("nvidia_com_mig_3g_40gb", 1), gpus=0),
            pod("notebooks", "nb-quarter-0", "gpu-l4", ("nvidia_com_gpucores", 25), ("nvidia_com_gpumem", 4096)),
            pod("notebooks", "nb-half-0", "gpu-l4", ("nvidia_com_gpucores", 50), ("nvidia_com_gpumem", 8192)),
            pod("notebooks", "nb-mem-0", "gpu-l4", ("nvidia_com_gpumem", 5632)),
        ),
        gpus=(
            Gpu("gpu-a100", 0, a100[0], "NVIDIA A100-SXM4-80GB", 81920),
            Gpu("gpu-a100", 1, a100[1], "NVIDIA A100-SXM4-80GB", 81920),
            Gpu("gpu-t4", 0, t4, "Tesla T4", 15360, shared=True),
            Gpu(
                "gpu-h100",
                0,
                h100,
                "NVIDIA H100 80GB HBM3",
                81920,
                instances=(MigInstance(1, "3g.40gb"), MigInstance(5, "2g.20gb"), MigInstance(13, "1g.10gb")),
            ),
            Gpu("gpu-l4", 0, l4, "NVIDIA L4", 22528, shared=True),
        ),
        gpu_loads=(
            GpuLoad("ml", "train-0", "main", a100[0], 0.3, 45, 40960),
            GpuLoad("inference", "asr-0", "main", t4, 0.25, 40, 4096),
            GpuLoad("inference", "ocr-0", "main", t4, 0.125, 20, 2048),
            GpuLoad("inference", "tts-0", "main", t4, 0.0625, 10, 1024),
            GpuLoad("research", "mig-small-0", "main", h100, 0.5, 0, 5120, instance=13),
            GpuLoad("research", "mig-medium-0", "main", h100, 0.25, 0, 10240, instance=5),
            GpuLoad("research", "mig-large-0", "main", h100, 0.75, 0, 20480, instance=1),
            GpuLoad("notebooks", "nb-quarter-0", "main", l4, 0.125, 20, 4096),
            GpuLoad("notebooks", "nb-half-0", "main", l4, 0.25, 35, 8192),
            GpuLoad("notebooks", "nb-mem-0", "main", l4, 0.0625, 5, 5632),
        ),
    )
