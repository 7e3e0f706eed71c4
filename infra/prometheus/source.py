"""The allocation method computed from Prometheus, for clusters without OpenCost.

``ALLOCATION_SOURCE=prometheus``: :class:`PrometheusAllocations` answers ``allocation()`` like
``OpenCostClient.allocation`` does for one accumulated window, so ``_write_hour`` and
``RowBuilder`` store its rows unchanged. The method (docs/how-to/prometheus-source.md, "How an
hour is computed"):

* per container, each minute: the larger of its request (Pending/Running pods only) and its usage
  (CPU: ``rate`` of ``container_cpu_usage_seconds_total``; memory:
  ``container_memory_working_set_bytes``); GPUs on requests. The PromQL is in ``promql``;
* a container holding a GPU also says how it is shared, what it requested and used of it and
  which GPU it is (``gpuAllocation``, from kube-state-metrics and DCGM's exporter: ``gpus``), and
  ``gpu_devices`` lists the hour's physical GPUs, so the collection pass can split each one's cost;
* a namespace's claims (requested bytes) and LoadBalancer Services are one entry per namespace,
  named as OpenCost names what no pod mounts (``<ns>/__unallocated__/__unallocated__/__unmounted__/
  __unmounted__``);
* ``__idle__``: what the nodes' allocatable capacity costs minus what was billed, per resource;
* prices: the active PriceBook's exact rates (``cpuHour`` per core-hour, ``ramGbHour`` per
  GiB-hour, ``gpuHour`` per GPU-hour, ``pvGbHour`` per GiB-hour of claimed storage, ``lbHour`` per
  LoadBalancer-hour). Without a PriceBook the quantities are stored and every cost is None.

Exactness: Prometheus sums in float64 and answers decimal strings; they are read as Decimal and
rounded once (core- and GPU-minutes to 10^-9, byte-minutes to 10^-3), far below a micro of money,
which removes the float noise (0.1 summed 60 times is 6.000000000000001). Each cost is then
``unit-minutes x rate / 60`` (bytes / 2^30 first), exact, rounded half-even to micros per
entry and resource; ``totalCost`` is the sum of the rounded parts, and each idle cost is the
capacity's rounded cost minus the sum of the rounded billed costs, so the hour's rows add up to
the capacity's cost to the micro.

Namespace ownership comes from ``kube_namespace_labels``; kube-state-metrics exports labels only
when started with ``--metric-labels-allowlist=namespaces=[team,cost-center]``. Without the owner
label on any namespace that has cost, the run fails with that hint instead of storing a month of
unallocated rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Protocol

from finops.allocations import DEFAULT_AGGREGATION, IDLE, UNALLOCATED, UNMOUNTED, Container
from finops.errors import SourceMisconfigured
from finops.gpus import GpuDevice
from finops.labels import sanitize_label_key
from infra.opencost import Allocation
from infra.prometheus import Sample, gpus, kube_state, nodes, promql

GIB = Decimal(2**30)
MINUTES_PER_HOUR = Decimal(60)
_MICRO = Decimal("0.000001")
_NANO = Decimal("1e-9")
_MILLI = Decimal("0.001")
_PLACES = Decimal("1e-10")  # averages and hours as stored (numeric)


class PromQuery(Protocol):
    def query(self, promql: str, at: datetime, *, retry_until: float | None = None) -> list[Sample]: ...


def allowlist_hint(owner_label: str, cost_center_label: str) -> str:
    return f"--metric-labels-allowlist=namespaces=[{owner_label},{cost_center_label}]"


@dataclass(frozen=True)
class PrometheusAllocations:
    """An ``AllocationSource`` over Prometheus's HTTP API (see the module docstring)."""

    client: PromQuery
    cluster: str
    owner_label: str = "team"
    cost_center_label: str = "cost-center"
    rates: Mapping[str, Decimal] | None = None

    def priced(self, rates: Mapping[str, Decimal] | None) -> PrometheusAllocations:
        """This source pricing with ``rates`` (the run's active PriceBook; None: unpriced)."""
        return replace(self, rates=rates)

    def allocation(
        self,
        start: datetime,
        end: datetime,
        *,
        aggregate: str,
        accumulate: bool = True,
        include_idle: bool = True,
        retry_until: float | None = None,
    ) -> list[dict[str, Allocation]]:
        """One accumulated set for ``[start, end)`` (``[]`` when Prometheus has no data for it)."""
        if aggregate != DEFAULT_AGGREGATION:
            raise SourceMisconfigured(
                f"OPENCOST_AGGREGATE: the Prometheus source computes {DEFAULT_AGGREGATION!r} only, not {aggregate!r}"
            )
        if not accumulate:
            raise SourceMisconfigured("the Prometheus source answers accumulated windows only")
        answers = self._ask(start, end, retry_until, promql.queries)
        hour = _Window(start, end, Decimal(_seconds(start, end) // promql.STEP_SECONDS))
        billed: dict[str, Decimal] = defaultdict(Decimal)  # unit-minutes billed per resource
        entries = self._containers(answers, hour, billed)
        workloads = list(entries.values())
        entries.update(self._unmounted(answers, hour))
        if not entries and not answers["capacity"]:
            return []
        self._require_owner_labels(entries.values())
        if include_idle:
            entries[IDLE] = self._idle(answers, hour, workloads, billed)
        return [entries]

    def gpu_devices(self, start: datetime, end: datetime, *, retry_until: float | None = None) -> list[GpuDevice]:
        """Every physical GPU DCGM's exporter saw in ``[start, end)``, used or not, with the minutes
        it was seen (``infra.prometheus.gpus.devices``): what the hour's GPUs cost is split from."""
        return gpus.devices(self._ask(start, end, retry_until, promql.device_queries))

    def gpu_allocations(
        self, start: datetime, end: datetime, *, retry_until: float | None = None
    ) -> dict[Container, dict[str, Any]]:
        """Each container's ``gpuAllocation`` in ``[start, end)`` (``infra.prometheus.gpus``), by
        (namespace, pod, container): how an OpenCost cluster's GPUs are shared and used, which
        OpenCost's allocations do not say for MIG and HAMi (``GPU_FIGURES=prometheus``)."""
        answers = self._ask(start, end, retry_until, promql.gpu_queries, promql.presence_queries)
        return gpus.allocations(
            answers, kube_state.by_container(answers["minutes"]), kube_state.pod_nodes(answers["pod_node"])
        )

    def node_hours(self, start: datetime, end: datetime, *, retry_until: float | None = None) -> list[nodes.NodeHour]:
        """Every node of ``[start, end)`` with its minutes, labels and capacity's cost
        (``infra.prometheus.nodes``): what the operator's emission table is applied to."""
        return nodes.node_hours(self._ask(start, end, retry_until, promql.node_queries), self._capacity_cost)

    def _ask(
        self, start: datetime, end: datetime, retry_until: float | None, *queries: Callable[[int], Mapping[str, str]]
    ) -> dict[str, list[Sample]]:
        """The answers to ``queries``' PromQL for ``[start, end)``, by name: each evaluated once, at
        the window's last millisecond, so that its range vectors span the window exactly."""
        seconds, at = _seconds(start, end), end - timedelta(milliseconds=1)
        texts = {name: text for of_window in queries for name, text in of_window(seconds).items()}
        return {name: self.client.query(text, at, retry_until=retry_until) for name, text in texts.items()}

    def _capacity_cost(self, cpu: Decimal, ram: Decimal, gpu: Decimal) -> Decimal | None:
        """What allocatable capacity (unit-minutes) costs, rounded as ``_idle`` rounds the cluster's."""
        return self._costs(cpu=cpu.quantize(_NANO), ram=ram.quantize(_MILLI), gpu=gpu.quantize(_NANO))["totalCost"]

    # -- containers --------------------------------------------------------------------------

    def _containers(
        self, answers: Mapping[str, list[Sample]], w: _Window, billed: dict[str, Decimal]
    ) -> dict[str, Allocation]:
        per: dict[str, dict[Container, Decimal]] = {
            name: kube_state.by_container(answers[name])
            for name in (
                "cpu_request",
                "cpu_usage",
                "cpu_billed",
                "ram_request",
                "ram_usage",
                "ram_billed",
                "gpu_request",
                "minutes",
                "first",
                "last",
            )
        }
        on = kube_state.pod_nodes(answers["pod_node"])
        owners = kube_state.controllers(answers["pod_owner"], answers["replicaset_owner"])
        labels = kube_state.namespace_labels(answers["namespace_labels"])
        held = gpus.allocations(answers, per["minutes"], on)
        out: dict[str, Allocation] = {}
        for key in sorted(per["minutes"]):
            namespace, pod, container = key
            minutes = per["minutes"][key]
            if minutes <= 0:
                continue
            cpu_min = per["cpu_billed"].get(key, Decimal(0)).quantize(_NANO)
            ram_min = per["ram_billed"].get(key, Decimal(0)).quantize(_MILLI)
            gpu_min = per["gpu_request"].get(key, Decimal(0)).quantize(_NANO)
            cpu_req = per["cpu_request"].get(key, Decimal(0)).quantize(_NANO)
            cpu_use = per["cpu_usage"].get(key, Decimal(0)).quantize(_NANO)
            ram_req = per["ram_request"].get(key, Decimal(0)).quantize(_MILLI)
            ram_use = per["ram_usage"].get(key, Decimal(0)).quantize(_MILLI)
            billed["cpu"] += cpu_min
            billed["ram"] += ram_min
            billed["gpu"] += gpu_min
            kind, controller = owners.get((namespace, pod), ("", ""))
            first = per["first"].get(key)
            last = per["last"].get(key)
            props: dict[str, Any] = {
                "cluster": self.cluster,
                "namespace": namespace,
                "pod": pod,
                "container": container,
                "node": on.get((namespace, pod)),
                "namespaceLabels": labels.get(namespace),
            }
            if kind:
                props.update(controllerKind=kind, controller=controller)
            costs = self._costs(cpu=cpu_min, ram=ram_min, gpu=gpu_min)
            name = f"{namespace}/{kind or UNALLOCATED}/{controller or UNALLOCATED}/{pod}/{container}"
            out[name] = {
                "name": name,
                "properties": props,
                "window": {"start": w.start, "end": w.end},
                "start": _moment(first) if first is not None else w.start,
                "end": _moment(last) + timedelta(seconds=promql.STEP_SECONDS) if last is not None else w.end,
                "minutes": minutes,
                "cpuCores": _avg(cpu_min, minutes),
                "cpuCoreRequestAverage": _avg(cpu_req, minutes),
                "cpuCoreUsageAverage": _avg(cpu_use, minutes),
                "cpuCoreHours": _hours(cpu_min),
                "cpuEfficiency": _efficiency(cpu_use, cpu_req),
                "ramBytes": _avg(ram_min, minutes),
                "ramByteRequestAverage": _avg(ram_req, minutes),
                "ramByteUsageAverage": _avg(ram_use, minutes),
                "ramByteHours": _hours(ram_min),
                "ramEfficiency": _efficiency(ram_use, ram_req),
                "gpuCount": _avg(gpu_min, minutes),
                "gpuHours": _hours(gpu_min),
                **costs,  # type: ignore[typeddict-item]
            }
            if key in held:
                out[name]["gpuAllocation"] = held[key]  # type: ignore[typeddict-item]
        return out

    # -- volumes and load balancers ----------------------------------------------------------

    def _unmounted(self, answers: Mapping[str, list[Sample]], w: _Window) -> dict[str, Allocation]:
        pv: dict[str, Decimal] = defaultdict(Decimal)
        lb: dict[str, Decimal] = defaultdict(Decimal)
        for s in answers["pvc_bytes"]:
            pv[s.labels.get("namespace", "")] += s.value
        for s in answers["lb_minutes"]:
            lb[s.labels.get("namespace", "")] += s.value
        labels = kube_state.namespace_labels(answers["namespace_labels"])
        out: dict[str, Allocation] = {}
        for namespace in sorted(set(pv) | set(lb)):
            byte_min = pv.get(namespace, Decimal(0)).quantize(_MILLI)
            lb_min = lb.get(namespace, Decimal(0))
            name = f"{namespace}/{UNALLOCATED}/{UNALLOCATED}/{UNMOUNTED}/{UNMOUNTED}"
            pv_cost = self._cost(byte_min / GIB, "pvGbHour")
            lb_cost = self._cost(lb_min, "lbHour")
            out[name] = {
                "name": name,
                "properties": {
                    "cluster": self.cluster,
                    "namespace": namespace,
                    "pod": UNMOUNTED,
                    "container": UNMOUNTED,
                    "namespaceLabels": labels.get(namespace),
                },
                "window": {"start": w.start, "end": w.end},
                "start": w.start,
                "end": w.end,
                "minutes": w.minutes,
                "pvBytes": _avg(byte_min, w.minutes),
                "pvByteHours": _hours(byte_min),
                "pvCost": pv_cost,
                "loadBalancerCost": lb_cost,
                "totalCost": _sum(pv_cost, lb_cost),
            }
        return out

    # -- idle ---------------------------------------------------------------------------------

    def _idle(
        self,
        answers: Mapping[str, list[Sample]],
        w: _Window,
        workloads: list[Allocation],
        billed: Mapping[str, Decimal],
    ) -> Allocation:
        capacity = {s.labels.get("resource", ""): s.value for s in answers["capacity"]}
        cpu_cap = capacity.get("cpu", Decimal(0)).quantize(_NANO)
        ram_cap = capacity.get("memory", Decimal(0)).quantize(_MILLI)
        gpu_cap = capacity.get(promql.GPU_RESOURCE, Decimal(0)).quantize(_NANO)
        cap = self._costs(cpu=cpu_cap, ram=ram_cap, gpu=gpu_cap)
        cpu_min, ram_min, gpu_min = cpu_cap - billed["cpu"], ram_cap - billed["ram"], gpu_cap - billed["gpu"]
        idle: Allocation = {
            "name": IDLE,
            "properties": {"cluster": self.cluster},
            "window": {"start": w.start, "end": w.end},
            "start": w.start,
            "end": w.end,
            "minutes": w.minutes,
            "cpuCores": _avg(cpu_min, w.minutes),
            "cpuCoreHours": _hours(cpu_min),
            "ramBytes": _avg(ram_min, w.minutes),
            "ramByteHours": _hours(ram_min),
            "gpuCount": _avg(gpu_min, w.minutes),
            "gpuHours": _hours(gpu_min),
            "pvCost": _zero(self.rates),
            "loadBalancerCost": _zero(self.rates),
        }
        idle["cpuCost"] = _less(cap["cpuCost"], [a.get("cpuCost") for a in workloads])
        idle["ramCost"] = _less(cap["ramCost"], [a.get("ramCost") for a in workloads])
        idle["gpuCost"] = _less(cap["gpuCost"], [a.get("gpuCost") for a in workloads])
        idle["totalCost"] = _sum(idle["cpuCost"], idle["ramCost"], idle["gpuCost"])
        return idle

    # -- pricing and ownership -----------------------------------------------------------------

    def _cost(self, unit_minutes: Decimal, rate: str) -> Decimal | None:
        """``unit_minutes / 60 x rate``, rounded half-even to micros; None when unpriced."""
        if self.rates is None:
            return None
        exact = unit_minutes * self.rates.get(rate, Decimal(0)) / MINUTES_PER_HOUR
        return exact.quantize(_MICRO, rounding=ROUND_HALF_EVEN)

    def _costs(self, *, cpu: Decimal, ram: Decimal, gpu: Decimal) -> dict[str, Decimal | None]:
        costs = {
            "cpuCost": self._cost(cpu, "cpuHour"),
            "ramCost": self._cost(ram / GIB, "ramGbHour"),
            "gpuCost": self._cost(gpu, "gpuHour"),
        }
        return {
            **costs,
            "pvCost": _zero(self.rates),
            "loadBalancerCost": _zero(self.rates),
            "totalCost": _sum(*costs.values()),
        }

    def _require_owner_labels(self, entries: Collection[Allocation]) -> None:
        """Fail when no namespace with cost carries the owner label: kube-state-metrics was not
        told to export it, and every row would be unallocated."""
        key = sanitize_label_key(self.owner_label)
        if not entries or any(((a.get("properties") or {}).get("namespaceLabels") or {}).get(key) for a in entries):
            return
        raise SourceMisconfigured(
            f"kube_namespace_labels has no label_{key} for any namespace with cost: start kube-state-metrics with "
            f"{allowlist_hint(self.owner_label, self.cost_center_label)} (OWNER_LABEL={self.owner_label})"
        )


def _seconds(start: datetime, end: datetime) -> int:
    seconds = int((end - start).total_seconds())
    if seconds <= 0 or seconds % promql.STEP_SECONDS:
        raise SourceMisconfigured(f"window {start}..{end} is not a whole number of minutes")
    return seconds


@dataclass(frozen=True)
class _Window:
    start: datetime
    end: datetime
    minutes: Decimal


def _moment(seconds: Decimal) -> datetime:
    return datetime.fromtimestamp(int(seconds), tz=UTC)


def _avg(unit_minutes: Decimal, minutes: Decimal) -> Decimal:
    return (unit_minutes / minutes).quantize(_PLACES) if minutes else Decimal(0)


def _hours(unit_minutes: Decimal) -> Decimal:
    return (unit_minutes / MINUTES_PER_HOUR).quantize(_PLACES)


def _efficiency(usage: Decimal, request: Decimal) -> Decimal:
    if request:
        return (usage / request).quantize(_PLACES)
    return Decimal(1) if usage > 0 else Decimal(0)


def _zero(rates: Mapping[str, Decimal] | None) -> Decimal | None:
    return None if rates is None else Decimal(0)


def _less(capacity: Decimal | None, billed: list[Decimal | None]) -> Decimal | None:
    """What the capacity costs beyond what was billed; None when unpriced."""
    return None if capacity is None else capacity - sum((b for b in billed if b is not None), Decimal(0))


def _sum(*parts: Decimal | None) -> Decimal | None:
    known = [p for p in parts if p is not None]
    return sum(known, Decimal(0)) if known else None
