"""The cost model (reference §2): from a scenario to raw per-container allocations and idle.

Names, prices, pod placement, labels and usage profiles are resolved once, when the scenario is
compiled, so the per-query loop (:meth:`Cluster.compute`) is plain arithmetic.

The model, per container and per covered second of its pod's life inside the set:

* billed CPU cores = max(request, usage of that hour-of-day); billed RAM bytes likewise;
  ``cpuCost = cpuCoreHours * node cpuHourly``; ``ramCost = GiB-hours * node ramGiBHourly``;
  ``gpuCost = requested GPU-hours * node gpuHourly`` (no DCGM, so GPU usage is not modelled);
* workload-level costs are split evenly over the workload's pods and then over each pod's containers:
  PV GiB-hours * storage price, load-balancer hours * hourly price, and network bytes (transfer is
  priced at the scenario's ``network.egressPerGiB``, default 0.01/GiB, reported as cross-zone);
* a CronJob runs ``replicas`` pods every ``schedule.every`` for ``schedule.runFor``; its pods report
  ``controllerKind: job`` and the CronJob's name as controller, as OpenCost does. Workload-level costs
  of a CronJob are only billed while a run is active. Pod, ReplicaSet and Job names, and the
  controller each pod reports (an Argo Rollout's pods: ``rollout``/its ReplicaSet), come from
  :mod:`sandbox.opencost.naming`, shared with the Kubernetes objects of ``sandbox.cluster``;
* unmounted PVs become ``<ns>-unmounted-pvcs/__unmounted__`` allocations (or ``__unmounted__`` in
  every position when no namespace is given);
* capacity cost for idle = node cores * hours * price (and GiB, GPUs likewise), nodes always present;
* a workload's ``costAdjustment`` adds ``fraction x cost`` per resource as the ``*CostAdjustment`` of
  each of its allocations (the bill differing from list prices). Idle is still capacity minus the
  unadjusted costs, so the cluster's Σ totalCost (idle included) is capacity plus Σ adjustments.

Data exists only in ``[now - retention, now]`` (``dataUntilNow``/``retention`` scenario keys).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from sandbox.opencost.allocation import GIB, UNMOUNTED, Alloc, Properties
from sandbox.opencost.naming import controller_of, daemon_pod_name, job_name, job_pod_name, pod_name, short_hash
from sandbox.opencost.scenario import CostAdjustment, Scenario, ScenarioError, TimeSpec, Workload
from sandbox.opencost.windows import DAY, HOUR, MINUTE, floor

_LABEL_RE = re.compile(r"[^a-zA-Z0-9_]")
_NEVER = -(2**62)
_FOREVER = 2**62


def sanitize_label(name: str) -> str:
    """Prometheus label-name sanitising, as kube-state-metrics and OpenCost apply it."""
    return _LABEL_RE.sub("_", name)


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    provider_id: str
    cpu_cores: float
    ram_gib: float
    gpus: float
    cpu_price: float
    ram_price: float
    gpu_price: float
    gpu_model: str = ""
    gpu_shared: bool = False


class ContainerSpec:
    """Requests and per-hour-of-day usage/billed quantities (24 entries each)."""

    __slots__ = ("cpu_bill", "cpu_req", "cpu_use", "gpu_req", "gpu_use", "name", "ram_bill", "ram_req", "ram_use")

    def __init__(
        self,
        name: str,
        cpu_req: float,
        ram_req: float,
        gpu_req: float,
        cpu: tuple[float, ...],
        ram: tuple[float, ...],
        gpu_use: float = 0.0,
    ) -> None:
        self.name = name
        self.gpu_use = gpu_use
        self.cpu_req = cpu_req
        self.ram_req = ram_req
        self.gpu_req = gpu_req
        self.cpu_use = tuple(cpu[h % len(cpu)] for h in range(24))
        self.ram_use = tuple(ram[h % len(ram)] for h in range(24))
        self.cpu_bill = tuple(max(cpu_req, u) for u in self.cpu_use)
        self.ram_bill = tuple(max(ram_req, u) for u in self.ram_use)


@dataclass(slots=True)
class PodSpec:
    name: str
    node: NodeSpec
    props: list[Properties]  # one per container, same order as the workload's containers
    gpus: list[int | None] = field(default_factory=list)  # per container: the index of its (first) GPU


@dataclass(frozen=True, slots=True)
class CronRun:
    """One run of a CronJob: its Job, scheduled ``[start, end)``, and the pods it ran."""

    start: int
    end: int
    job: str
    pods: list[PodSpec]


@dataclass(slots=True)
class WorkloadSpec:
    source: Workload
    start: TimeSpec | None
    end: TimeSpec | None
    containers: list[ContainerSpec]
    pods: list[PodSpec]  # static pods; empty for a CronJob (its pods are made per run)
    pods_per_instance: int  # how many pods share the workload-level costs at a time
    pvs: list[tuple[str, str, float]]  # (key, providerID, size GiB)
    lbs: list[tuple[str, str, float, str]]  # (key, service, hourly, ip)
    labels: dict[str, str]
    namespace_labels: dict[str, str]
    services: tuple[str, ...]


def hour_of_day_seconds(a: int, b: int) -> list[tuple[int, int]]:
    """Seconds of ``[a, b)`` falling in each UTC hour-of-day, as sparse ``(hour, seconds)`` pairs."""
    secs = [0] * 24
    t = a
    while t < b and (t % DAY != 0 or b - t < DAY):
        nxt = min(floor(t, HOUR) + HOUR, b)
        secs[(t // HOUR) % 24] += nxt - t
        t = nxt
    if t < b:
        days = (b - t) // DAY
        for h in range(24):
            secs[h] += days * HOUR
        t += days * DAY
        while t < b:
            nxt = min(t + HOUR, b)
            secs[(t // HOUR) % 24] += nxt - t
            t = nxt
    return [(h, s) for h, s in enumerate(secs) if s]


def adjust(alloc: Alloc, fractions: CostAdjustment) -> None:
    """Set the allocation's ``*CostAdjustment`` figures: each resource's cost times its fraction."""
    alloc.cpu_adj = alloc.cpu_cost * fractions.cpu
    alloc.gpu_adj = alloc.gpu_cost * fractions.gpu
    alloc.ram_adj = alloc.ram_cost * fractions.ram
    alloc.pv_adj = alloc.pv_cost * fractions.pv
    alloc.net_adj = alloc.net_cost * fractions.network
    alloc.lb_adj = alloc.lb_cost * fractions.load_balancer


class Cluster:
    """A compiled scenario: evaluate it for any set window with :meth:`compute`."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.name = scenario.cluster
        self.nodes = [
            NodeSpec(
                n.name,
                n.provider_id or n.name,
                n.cpu_cores,
                n.ram_gib,
                n.gpus,
                n.cpu_hourly,
                n.ram_gib_hourly,
                n.gpu_hourly,
                n.gpu_model,
                n.gpu_sharing == "time-sliced",
            )
            for n in scenario.nodes
        ]
        self._node_by_name = {n.name: n for n in self.nodes}
        self.storage_price = scenario.storage.gb_hourly
        self.egress_price = scenario.network.egress_per_gib
        self.has_relative_times = scenario.has_relative_times
        self._ns_labels = {
            ns.name: {**{sanitize_label(k): v for k, v in ns.labels.items()}, "kubernetes_io_metadata_name": ns.name}
            for ns in scenario.namespaces
        }
        self._round_robin = 0
        self._gpu_next: dict[str, int] = {}  # per node: the next whole GPU to hand out
        self.workloads = [self._compile(w) for w in scenario.workloads]
        self._check_pod_names()

    # -- compilation -------------------------------------------------------------------------------

    def _next_node(self) -> NodeSpec:
        node = self.nodes[self._round_robin % len(self.nodes)]
        self._round_robin += 1
        return node

    def _compile(self, w: Workload) -> WorkloadSpec:
        ns_labels = self._ns_labels[w.namespace]
        labels = {**ns_labels, "app": w.name, **{sanitize_label(k): v for k, v in w.labels.items()}}
        containers = [
            ContainerSpec(
                c.name,
                c.request.cpu,
                c.request.ram_gib * GIB,
                c.request.gpu,
                c.usage.cpu,
                tuple(v * GIB for v in c.usage.ram_gib),
                c.usage.gpu,
            )
            for c in w.containers
        ]
        spec = WorkloadSpec(
            source=w,
            start=w.start,
            end=w.end,
            containers=containers,
            pods=[],
            pods_per_instance=max(w.replicas, 1),
            pvs=[(f"cluster={self.name}:name={v.name}", v.name, v.size_gib) for v in w.pvs],
            lbs=[
                (
                    f"{self.name}/{w.namespace}/{lb.name}",
                    f"{w.namespace}/{lb.name}",
                    lb.hourly,
                    f"203.0.113.{int(short_hash(w.namespace + '/' + lb.name, 4), 16) % 254 + 1}",
                )
                for lb in w.load_balancers
            ],
            labels=labels,
            namespace_labels=ns_labels,
            services=tuple(lb.name for lb in w.load_balancers),
        )
        fixed = self._node_by_name[w.node] if w.node else None
        if w.kind == "DaemonSet":
            for node in [fixed] if fixed else self.nodes:
                spec.pods.append(self._pod(spec, daemon_pod_name(w, node.name), node))
            spec.pods_per_instance = len(spec.pods)
        elif w.kind != "CronJob":
            for i in range(w.replicas):
                spec.pods.append(self._pod(spec, pod_name(w, i), fixed or self._next_node()))
        return spec

    def _pod(self, spec: WorkloadSpec, name: str, node: NodeSpec) -> PodSpec:
        w = spec.source
        controller_kind, controller = controller_of(w)
        props = [
            Properties(
                cluster=self.name,
                node=node.name,
                container=c.name,
                controller=controller,
                controller_kind=controller_kind,
                namespace=w.namespace,
                pod=name,
                services=spec.services,
                provider_id=node.provider_id,
                labels=spec.labels,
                namespace_labels=spec.namespace_labels,
            )
            for c in spec.containers
        ]
        gpus: list[int | None] = []
        for c in spec.containers:
            if not c.gpu_req or not node.gpus:
                gpus.append(None)
            elif node.gpu_shared:
                gpus.append(0)
            else:  # whole GPUs, handed out in order
                first = self._gpu_next.get(node.name, 0)
                self._gpu_next[node.name] = first + math.ceil(c.gpu_req)
                gpus.append(first % int(node.gpus))
        return PodSpec(name, node, props, gpus)

    def _check_pod_names(self) -> None:
        seen: set[tuple[str, str]] = set()
        for spec in self.workloads:
            for pod in spec.pods:
                key = (spec.source.namespace, pod.name)
                if key in seen:
                    raise ScenarioError(f"two workloads in namespace {key[0]!r} produce the same pod name {key[1]!r}")
                seen.add(key)

    # -- evaluation --------------------------------------------------------------------------------

    def data_range(self, now: int) -> tuple[int, int]:
        """``[lo, hi)`` of instants for which the simulated Prometheus holds data."""
        now_minute = floor(now, MINUTE)
        lo = now_minute - self.scenario.retention if self.scenario.retention else _NEVER
        hi = now_minute if self.scenario.data_until_now else _FOREVER
        return lo, hi

    def capacity_costs(self, lo: int, hi: int) -> tuple[float, float, float]:
        """Node (cpu, gpu, ram) cost over ``[lo, hi)``: what idle is measured against."""
        hours = max(hi - lo, 0) / HOUR
        cpu = sum(n.cpu_cores * n.cpu_price for n in self.nodes) * hours
        gpu = sum(n.gpus * n.gpu_price for n in self.nodes) * hours
        ram = sum(n.ram_gib * n.ram_price for n in self.nodes) * hours
        return cpu, gpu, ram

    def compute(self, win: tuple[int, int], lo: int, hi: int, anchor: int) -> list[Alloc]:
        """Raw allocations for set window ``win`` restricted to data in ``[lo, hi)``."""
        out: list[Alloc] = []
        buckets: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for spec in self.workloads:
            a = lo if spec.start is None else max(lo, spec.start.resolve(anchor))
            b = hi if spec.end is None else min(hi, spec.end.resolve(anchor))
            if a >= b:
                continue
            if spec.source.kind == "CronJob":
                self._cron_allocs(spec, win, a, b, buckets, out)
                continue
            hod = buckets.get((a, b)) or buckets.setdefault((a, b), hour_of_day_seconds(a, b))
            for pod in spec.pods:
                self._pod_allocs(spec, pod, win, a, b, hod, out)
        for i, pv in enumerate(self.scenario.unmounted_pvs):
            a = lo if pv.start is None else max(lo, pv.start.resolve(anchor))
            b = hi if pv.end is None else min(hi, pv.end.resolve(anchor))
            if a < b:
                out.append(self._unmounted(i, win, a, b))
        return out

    def cron_runs(self, spec: WorkloadSpec, a: int, b: int) -> Iterator[CronRun]:
        """The runs of a CronJob overlapping ``[a, b)``, oldest first, with their pods and nodes."""
        w = spec.source
        schedule = w.schedule
        every, run_for, offset = (schedule.every, schedule.run_for, schedule.offset) if schedule else (3600, 600, 0)
        first = floor(a - run_for - offset, every) + offset
        fixed = self._node_by_name[w.node] if w.node else None
        for t in range(first, b, every):
            if max(a, t) >= min(b, t + run_for):
                continue
            job = job_name(w.name, t)
            pods = [
                self._pod(spec, job_pod_name(job, i), fixed or self.nodes[(t // every + i) % len(self.nodes)])
                for i in range(spec.pods_per_instance)
            ]
            yield CronRun(t, t + run_for, job, pods)

    def _cron_allocs(
        self,
        spec: WorkloadSpec,
        win: tuple[int, int],
        a: int,
        b: int,
        buckets: dict[tuple[int, int], list[tuple[int, int]]],
        out: list[Alloc],
    ) -> None:
        for run in self.cron_runs(spec, a, b):
            ra, rb = max(a, run.start), min(b, run.end)
            hod = buckets.get((ra, rb)) or buckets.setdefault((ra, rb), hour_of_day_seconds(ra, rb))
            for pod in run.pods:
                self._pod_allocs(spec, pod, win, ra, rb, hod, out)

    def _pod_allocs(
        self,
        spec: WorkloadSpec,
        pod: PodSpec,
        win: tuple[int, int],
        a: int,
        b: int,
        hod: list[tuple[int, int]],
        out: list[Alloc],
    ) -> None:
        node = pod.node
        seconds = b - a
        hours = seconds / HOUR
        share = 1.0 / (spec.pods_per_instance * len(spec.containers))
        w = spec.source
        for c, props, gpu in zip(spec.containers, pod.props, pod.gpus or [None] * len(spec.containers), strict=True):
            cpu_bill = cpu_use = ram_bill = ram_use = cpu_max = ram_max = 0.0
            cu, cb, ru, rb = c.cpu_use, c.cpu_bill, c.ram_use, c.ram_bill
            for h, s in hod:
                cpu, ram = cu[h], ru[h]
                cpu_use += cpu * s
                cpu_bill += cb[h] * s
                ram_use += ram * s
                ram_bill += rb[h] * s
                if cpu > cpu_max:
                    cpu_max = cpu
                if ram > ram_max:
                    ram_max = ram
            alloc = Alloc(f"{self.name}/{node.name}/{w.namespace}/{pod.name}/{c.name}", props, win[0], win[1], a, b)
            alloc.cpu_core_hours = cpu_bill / HOUR
            alloc.cpu_cost = alloc.cpu_core_hours * node.cpu_price
            alloc.cpu_req_cm = c.cpu_req * seconds / MINUTE
            alloc.cpu_use_cm = cpu_use / MINUTE
            alloc.ram_byte_hours = ram_bill / HOUR
            alloc.ram_cost = alloc.ram_byte_hours / GIB * node.ram_price
            alloc.ram_req_bm = c.ram_req * seconds / MINUTE
            alloc.ram_use_bm = ram_use / MINUTE
            alloc.gpu_hours = c.gpu_req * hours
            alloc.gpu_cost = alloc.gpu_hours * node.gpu_price
            if gpu is not None:  # OpenCost's gpuAllocation: GPU-minutes requested and busy, and the device
                minutes = seconds / MINUTE
                uuid = f"GPU-{node.name}-{gpu}"
                alloc.gpu = [c.gpu_req * minutes, c.gpu_use * minutes, node.gpu_shared, gpu, node.gpu_model, uuid]
            alloc.raw = (cpu_max, ram_max)
            if spec.pvs:
                alloc.pvs = {
                    key: [size * GIB * hours * share, size * hours * share * self.storage_price, provider]
                    for key, provider, size in spec.pvs
                }
            if spec.lbs:
                alloc.lbs = {key: [svc, hourly * hours * share, False, ip, hours] for key, svc, hourly, ip in spec.lbs}
                alloc.lb_cost = sum(lb[1] for lb in alloc.lbs.values())
            net = w.network_bytes_per_hour
            if net is not None:
                alloc.net_tx = net.transfer * hours * share
                alloc.net_rx = net.receive * hours * share
                alloc.net_cost = alloc.net_tx / GIB * self.egress_price
            if w.cost_adjustment is not None:
                adjust(alloc, w.cost_adjustment)
            out.append(alloc)

    def _unmounted(self, index: int, win: tuple[int, int], a: int, b: int) -> Alloc:
        pv = self.scenario.unmounted_pvs[index]
        if pv.namespace:
            ns, pod = pv.namespace, f"{pv.namespace}-unmounted-pvcs"
        else:
            ns = pod = UNMOUNTED
        props = Properties(cluster=self.name, container=UNMOUNTED, namespace=ns, pod=pod)
        alloc = Alloc(f"{self.name}//{ns}/{pod}/{UNMOUNTED}", props, win[0], win[1], a, b)
        hours = (b - a) / HOUR
        alloc.pvs = {
            f"cluster={self.name}:name={pv.name}": [
                pv.size_gib * GIB * hours,
                pv.size_gib * hours * self.storage_price,
                pv.name,
            ]
        }
        return alloc
