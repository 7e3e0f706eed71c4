"""OpenCost-shaped allocations to ``provider_allocations`` rows (the column order of ``COLUMNS``).

The allocations come from OpenCost or from the Prometheus source (``prometheus_source``), which
answers in OpenCost's shape; ``source`` records which one on every row."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from finops.allocations import IDLE, UNALLOCATED, UNMOUNTED, EntryKind, entry_kind
from finops.labels import owner_label
from finops.money import cost_micros
from infra.opencost import Allocation

COLUMNS = (
    "cluster",
    "namespace",
    "name",
    "aggregation",
    "hour",
    "entry_kind",
    "controller_kind",
    "controller",
    "pod",
    "container",
    "node",
    "data_start",
    "data_end",
    "minutes",
    "cpu_cores",
    "cpu_core_request_avg",
    "cpu_core_usage_avg",
    "cpu_core_hours",
    "ram_bytes",
    "ram_byte_request_avg",
    "ram_byte_usage_avg",
    "ram_byte_hours",
    "gpu_count",
    "gpu_hours",
    "pv_bytes",
    "pv_byte_hours",
    "network_transfer_bytes",
    "network_receive_bytes",
    "cpu_cost_micros",
    "gpu_cost_micros",
    "ram_cost_micros",
    "pv_cost_micros",
    "network_cost_micros",
    "lb_cost_micros",
    "shared_cost_micros",
    "external_cost_micros",
    "total_cost_micros",
    "team",
    "cost_center",
    "pricebook_id",
    "currency",
    "is_finalized",
    "collected_at",
    "source",
)

# OpenCost's placeholders where a namespace would be; stored as '' (no namespace).
SENTINELS = frozenset({IDLE, UNALLOCATED, UNMOUNTED})


class RowBuilder:
    """Everything a row needs besides the allocation, fixed for one hour of one run."""

    def __init__(
        self,
        *,
        cluster: str,
        aggregation: str,
        hour: datetime,
        finalized: bool,
        pricebook_id: int | None,
        currency: str | None,
        owner_label_key: str,
        cost_center_label_key: str,
        collected_at: datetime,
        source: str = "opencost",
    ) -> None:
        self.cluster = cluster
        self.aggregation = aggregation
        self.hour = hour
        self.finalized = finalized
        self.pricebook_id = pricebook_id
        self.currency = currency
        self.owner_key = owner_label_key
        self.cost_center_key = cost_center_label_key
        self.collected_at = collected_at
        self.source = source
        self._tail = (pricebook_id, currency, finalized, collected_at, source)  # the row's last columns
        self._owners: dict[str, tuple[str | None, str | None]] = {}
        self._unowned: set[str] = set()

    def rows(self, allocations: Mapping[str, Allocation]) -> Iterator[tuple[Any, ...]]:
        """One row per allocation. Ownership comes from namespace labels only (OpenCost's
        ``namespaceLabels``): pod labels never decide a team, since a pod can claim any owner.
        Entries OpenCost sends without namespace labels, such as a namespace's unmounted volumes,
        take the labels its other entries carry in the same hour."""
        owners: dict[str, tuple[str | None, str | None]] = {}
        for a in allocations.values():
            props = a.get("properties") or {}
            namespace = props.get("namespace")
            labels = props.get("namespaceLabels")
            if namespace and labels and namespace not in owners:
                owners[namespace] = (owner_label(labels, self.owner_key), owner_label(labels, self.cost_center_key))
        for key, a in allocations.items():
            yield self._row(a.get("name") or key, a, owners)

    def stream(self, entries: Iterable[tuple[str, Allocation]]) -> Iterator[tuple[Any, ...]]:
        """``rows`` in one pass over ``(key, allocation)`` pairs as they are parsed, holding none:
        a row of a namespace whose labels have not arrived yet is written without an owner, and
        ``late_owners()`` then gives the owners those rows take (``fill_hour_owners``), so the
        stored hour equals ``rows``' (the first labelled entry of a namespace decides)."""
        owners: dict[str, tuple[str | None, str | None]] = {}
        self._owners, self._unowned = owners, set()
        for key, a in entries:
            props = a.get("properties") or {}
            namespace = props.get("namespace")
            if namespace and namespace not in owners:
                labels = props.get("namespaceLabels")
                if labels:
                    owners[namespace] = (owner_label(labels, self.owner_key), owner_label(labels, self.cost_center_key))
                elif namespace not in SENTINELS:
                    self._unowned.add(namespace)
            yield self._row(a.get("name") or key, a, owners)

    def late_owners(self) -> dict[str, tuple[str | None, str | None]]:
        """After ``stream``: the owners of namespaces that had rows written before their labels."""
        owners = {ns: self._owners.get(ns, (None, None)) for ns in sorted(self._unowned)}
        return {ns: owner for ns, owner in owners.items() if owner != (None, None)}

    def _row(self, name: str, a: Allocation, owners: Mapping[str, tuple[str | None, str | None]]) -> tuple[Any, ...]:
        props = a.get("properties") or {}
        namespace = props.get("namespace") or ""
        if namespace in SENTINELS:
            namespace = ""
        team, cost_center = owners.get(namespace, (None, None))
        places: tuple[Any, ...]
        quantities: tuple[Any, ...]
        costs: tuple[Any, ...]
        if isinstance(a, dict):
            places = tuple(props.get(f) for f in _PLACES)
            quantities = tuple(a.get(f) for f in _QUANTITIES)
            costs = tuple(a.get(f) for f in _COSTS)
        else:  # a streamed record (infra.opencost.stream): every field an attribute, read in one call
            places, quantities, costs = _places(props), _quantities(a), _costs(a)
        return (
            self.cluster,
            namespace,
            name,
            self.aggregation,
            self.hour,
            # Every special entry's key holds "__" (__idle__, __unmounted__): most rows skip the split.
            entry_kind(name).value if "__" in name else _WORKLOAD,
            *places,
            *quantities,
            _micros(costs[0], costs[1]),  # cpu
            _micros(costs[2], costs[3]),  # gpu
            _micros(costs[4], costs[5]),  # ram
            _micros(costs[6], costs[7]),  # pv
            _micros(costs[8], costs[9]),  # network
            _micros(costs[10], costs[11]),  # load balancers
            _micros(costs[12]),  # shared
            _micros(costs[13]),  # external
            _micros(costs[14]),  # total
            team,
            cost_center,
            *self._tail,
        )


# The allocation's fields in the order of their columns (controller_kind .. node, data_start ..
# network_receive_bytes, then each cost with its adjustment: *_cost_micros).
_PLACES = ("controllerKind", "controller", "pod", "container", "node")
_QUANTITIES = (
    "start",
    "end",
    "minutes",
    "cpuCores",
    "cpuCoreRequestAverage",
    "cpuCoreUsageAverage",
    "cpuCoreHours",
    "ramBytes",
    "ramByteRequestAverage",
    "ramByteUsageAverage",
    "ramByteHours",
    "gpuCount",
    "gpuHours",
    "pvBytes",
    "pvByteHours",
    "networkTransferBytes",
    "networkReceiveBytes",
)
_COSTS = (
    "cpuCost",
    "cpuCostAdjustment",
    "gpuCost",
    "gpuCostAdjustment",
    "ramCost",
    "ramCostAdjustment",
    "pvCost",
    "pvCostAdjustment",
    "networkCost",
    "networkCostAdjustment",
    "loadBalancerCost",
    "loadBalancerCostAdjustment",
    "sharedCost",
    "externalCost",
    "totalCost",
)
_WORKLOAD = EntryKind.WORKLOAD.value
_places, _quantities, _costs = (operator.attrgetter(*fields) for fields in (_PLACES, _QUANTITIES, _COSTS))


def _micros(amount: Decimal | None, adjustment: Decimal | None = None) -> int | None:
    """``cost_micros``, with its most frequent case first: nothing spent (no GPU, network, load
    balancer...), about half of an allocation's costs."""
    if not amount and not adjustment:
        return None if amount is None else 0
    return cost_micros(amount, adjustment)
