"""One Allocation: the internal record and how two records combine (its JSON form: ``rendering``).

The merge rules are OpenCost's ``Allocation.add``. When two allocations combine, ``start``/``end``
widen to the covered span, ``minutes`` is that span, and each ``*Average`` becomes
``Σ(average_i * minutes_i) / span_minutes``. For members covering the same span this is the plain
*sum* of their averages (a namespace's request average is the sum of its containers'), and for
consecutive steps of one container it is their time-weighted mean. Properties are intersected (only
values shared by all members survive; ``services`` never do), and ``labels`` survive an intersection
only with ``includeAggregatedMetadata=true``, as in OpenCost. ``rawAllocationOnly`` is dropped by any
merge. The six ``*CostAdjustment`` figures add up like the costs, and ``totalCost`` is OpenCost's
``TotalCost()``: every cost *plus its adjustment*.
"""

from __future__ import annotations

import json
from typing import Any

IDLE = "__idle__"
UNALLOCATED = "__unallocated__"
UNMOUNTED = "__unmounted__"
GIB = 1024.0**3


class Properties:
    """An allocation's descriptive fields; immutable by convention (shared between queries)."""

    __slots__ = (
        "_json",
        "cluster",
        "container",
        "controller",
        "controller_kind",
        "labels",
        "namespace",
        "namespace_labels",
        "node",
        "pod",
        "provider_id",
        "services",
    )

    def __init__(
        self,
        cluster: str = "",
        node: str = "",
        container: str = "",
        controller: str = "",
        controller_kind: str = "",
        namespace: str = "",
        pod: str = "",
        services: tuple[str, ...] = (),
        provider_id: str = "",
        labels: dict[str, str] | None = None,
        namespace_labels: dict[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.node = node
        self.container = container
        self.controller = controller
        self.controller_kind = controller_kind
        self.namespace = namespace
        self.pod = pod
        self.services = services
        self.provider_id = provider_id
        self.labels = labels or {}
        self.namespace_labels = namespace_labels or {}
        self._json: str | None = None

    def _subsumes(self, other: Properties, keep_labels: bool) -> bool:
        """Whether intersecting with ``other`` would give these same properties back (the common case
        once a group's properties have shrunk to what all members share)."""
        if self.services or self.container == UNMOUNTED:
            return False
        pairs = (
            (self.cluster, other.cluster),
            (self.node, other.node),
            (self.container, other.container),
            (self.controller, other.controller),
            (self.controller_kind, other.controller_kind),
            (self.namespace, other.namespace),
            (self.pod, other.pod),
            (self.provider_id, other.provider_id),
        )
        if any(mine and mine != theirs for mine, theirs in pairs):
            return False
        if self.namespace != other.namespace and (self.namespace_labels or self.labels):
            return False
        if self.labels and not keep_labels:
            return False
        return (
            not self.labels
            or other.container == UNMOUNTED
            or all(other.labels.get(k) == v for k, v in self.labels.items())
        )

    def intersect(self, other: Properties, keep_labels: bool) -> Properties:
        """OpenCost's ``AllocationProperties.Intersection``, skipping the copy when nothing would change."""
        return self if self._subsumes(other, keep_labels) else self.intersection(other, keep_labels)

    def intersection(self, other: Properties, keep_labels: bool) -> Properties:
        """OpenCost's ``AllocationProperties.Intersection``, always as a new object."""
        same_ns = self.namespace == other.namespace
        ns_labels: dict[str, str] = {}
        labels: dict[str, str] = {}
        if same_ns:
            ns_labels = other.namespace_labels if self.container == UNMOUNTED else self.namespace_labels
            if keep_labels:
                if self.container == UNMOUNTED:
                    labels = other.labels
                elif other.container == UNMOUNTED:
                    labels = self.labels
                else:
                    labels = {k: v for k, v in self.labels.items() if other.labels.get(k) == v}
        return Properties(
            cluster=self.cluster if self.cluster == other.cluster else "",
            node=self.node if self.node == other.node else "",
            container=self.container if self.container == other.container else "",
            controller=self.controller if self.controller == other.controller else "",
            controller_kind=self.controller_kind if self.controller_kind == other.controller_kind else "",
            namespace=self.namespace if same_ns else "",
            pod=self.pod if self.pod == other.pod else "",
            provider_id=self.provider_id if self.provider_id == other.provider_id else "",
            labels=labels,
            namespace_labels=ns_labels,
        )

    def to_json_text(self) -> str:
        """The ``properties`` object as JSON text with Go's omitempty; cached (properties are shared)."""
        if self._json is None:
            pairs: list[tuple[str, Any]] = [
                ("cluster", self.cluster),
                ("node", self.node),
                ("container", self.container),
                ("controller", self.controller),
                ("controllerKind", self.controller_kind),
                ("namespace", self.namespace),
                ("pod", self.pod),
                ("services", list(self.services)),
                ("providerID", self.provider_id),
                ("labels", dict(sorted(self.labels.items()))),
                ("namespaceLabels", dict(sorted(self.namespace_labels.items()))),
            ]
            self._json = json.dumps({k: v for k, v in pairs if v}, separators=(",", ":"), ensure_ascii=False)
        return self._json


class Alloc:
    """Unrounded allocation figures for one key in one set (or accumulated sets).

    Request/usage are kept as totals (core-minutes, byte-minutes); the reported averages divide them
    by ``minutes``, which is exactly OpenCost's arithmetic in ``Allocation.add``.
    """

    __slots__ = (
        "cpu_adj",
        "cpu_core_hours",
        "cpu_cost",
        "cpu_req_cm",
        "cpu_use_cm",
        "end",
        "gpu",
        "gpu_adj",
        "gpu_cost",
        "gpu_hours",
        "lb_adj",
        "lb_cost",
        "lbs",
        "name",
        "net_adj",
        "net_cost",
        "net_rx",
        "net_tx",
        "props",
        "pv_adj",
        "pvs",
        "ram_adj",
        "ram_byte_hours",
        "ram_cost",
        "ram_req_bm",
        "ram_use_bm",
        "raw",
        "start",
        "win_end",
        "win_start",
    )

    def __init__(self, name: str, props: Properties, win_start: int, win_end: int, start: int, end: int) -> None:
        self.name = name
        self.props = props
        self.win_start = win_start
        self.win_end = win_end
        self.start = start
        self.end = end
        self.cpu_core_hours = 0.0
        self.cpu_req_cm = 0.0
        self.cpu_use_cm = 0.0
        self.cpu_cost = 0.0
        self.gpu_hours = 0.0
        self.gpu_cost = 0.0
        self.ram_byte_hours = 0.0
        self.ram_req_bm = 0.0
        self.ram_use_bm = 0.0
        self.ram_cost = 0.0
        self.net_tx = 0.0
        self.net_rx = 0.0
        self.net_cost = 0.0
        self.lb_cost = 0.0
        # OpenCost's *CostAdjustment figures (reconciliation with the bill); see scenario costAdjustment.
        self.cpu_adj = self.gpu_adj = self.ram_adj = self.pv_adj = self.net_adj = self.lb_adj = 0.0
        self.pvs: dict[str, list[Any]] | None = None  # key -> [byteHours, cost, providerID]
        self.lbs: dict[str, list[Any]] | None = None  # key -> [service, cost, private, ip, hours]
        self.raw: tuple[float, float] | None = None  # (cpuCoreUsageMax, ramByteUsageMax)
        # gpuAllocation: [GPU-minutes requested, GPU-minutes busy, shared, device index, model, UUID]
        self.gpu: list[Any] | None = None

    @property
    def pv_cost(self) -> float:
        return sum(pv[1] for pv in self.pvs.values()) if self.pvs else 0.0

    @property
    def pv_byte_hours(self) -> float:
        return sum(pv[0] for pv in self.pvs.values()) if self.pvs else 0.0

    @property
    def adjustment(self) -> float:
        return self.cpu_adj + self.gpu_adj + self.ram_adj + self.pv_adj + self.net_adj + self.lb_adj

    @property
    def total_cost(self) -> float:
        """OpenCost's ``TotalCost()``: the costs with their adjustments."""
        costs = self.cpu_cost + self.gpu_cost + self.ram_cost + self.pv_cost + self.net_cost + self.lb_cost
        return costs + self.adjustment

    def merge(self, other: Alloc, keep_labels: bool) -> None:
        """Add ``other`` into this allocation (OpenCost's ``Allocation.add``)."""
        if other.props is not self.props:
            self.props = self.props.intersect(other.props, keep_labels)
        self.win_start = min(self.win_start, other.win_start)
        self.win_end = max(self.win_end, other.win_end)
        self.start = min(self.start, other.start)
        self.end = max(self.end, other.end)
        self.cpu_core_hours += other.cpu_core_hours
        self.cpu_req_cm += other.cpu_req_cm
        self.cpu_use_cm += other.cpu_use_cm
        self.cpu_cost += other.cpu_cost
        self.gpu_hours += other.gpu_hours
        self.gpu_cost += other.gpu_cost
        if other.gpu is not None:
            if self.gpu is None:
                self.gpu = list(other.gpu)
            else:
                self.gpu[0] += other.gpu[0]
                self.gpu[1] += other.gpu[1]
        self.ram_byte_hours += other.ram_byte_hours
        self.ram_req_bm += other.ram_req_bm
        self.ram_use_bm += other.ram_use_bm
        self.ram_cost += other.ram_cost
        self.net_tx += other.net_tx
        self.net_rx += other.net_rx
        self.net_cost += other.net_cost
        self.lb_cost += other.lb_cost
        self.cpu_adj += other.cpu_adj
        self.gpu_adj += other.gpu_adj
        self.ram_adj += other.ram_adj
        self.pv_adj += other.pv_adj
        self.net_adj += other.net_adj
        self.lb_adj += other.lb_adj
        if other.pvs:
            pvs = self.pvs = self.pvs if self.pvs is not None else {}
            for key, pv in other.pvs.items():
                mine = pvs.setdefault(key, [0.0, 0.0, pv[2]])
                mine[0] += pv[0]
                mine[1] += pv[1]
        if other.lbs:
            lbs = self.lbs = self.lbs if self.lbs is not None else {}
            for key, lb in other.lbs.items():
                mine = lbs.setdefault(key, [lb[0], 0.0, lb[2], lb[3], 0.0])
                mine[1] += lb[1]
                mine[4] = max(mine[4], lb[4])
        self.raw = None
