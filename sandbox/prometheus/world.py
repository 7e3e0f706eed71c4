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
class World:
    first_hour: datetime
    hours: int
    nodes: tuple[Node, ...]
    namespaces: dict[str, dict[str, str]]  # name -> labels (as set on the Namespace)
    pods: tuple[Pod, ...]
    claims: tuple[Claim, ...] = ()
    services: tuple[Service, ...] = ()
    replicasets: dict[tuple[str, str], str] = field(default_factory=dict)  # (ns, rs) -> Deployment

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
    )
