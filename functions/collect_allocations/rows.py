"""OpenCost-shaped allocations to ``provider_allocations`` rows (the column order of ``COLUMNS``).

The allocations come from OpenCost or from the Prometheus source (``prometheus_source``), which
answers in OpenCost's shape; ``source`` records which one on every row."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from finops.allocations import IDLE, UNALLOCATED, UNMOUNTED, entry_kind
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

    def _row(self, name: str, a: Allocation, owners: Mapping[str, tuple[str | None, str | None]]) -> tuple[Any, ...]:
        props = a.get("properties") or {}
        namespace = props.get("namespace") or ""
        if namespace in SENTINELS:
            namespace = ""
        team, cost_center = owners.get(namespace, (None, None))
        return (
            self.cluster,
            namespace,
            name,
            self.aggregation,
            self.hour,
            entry_kind(name).value,
            props.get("controllerKind"),
            props.get("controller"),
            props.get("pod"),
            props.get("container"),
            props.get("node"),
            a.get("start"),
            a.get("end"),
            a.get("minutes"),
            a.get("cpuCores"),
            a.get("cpuCoreRequestAverage"),
            a.get("cpuCoreUsageAverage"),
            a.get("cpuCoreHours"),
            a.get("ramBytes"),
            a.get("ramByteRequestAverage"),
            a.get("ramByteUsageAverage"),
            a.get("ramByteHours"),
            a.get("gpuCount"),
            a.get("gpuHours"),
            a.get("pvBytes"),
            a.get("pvByteHours"),
            a.get("networkTransferBytes"),
            a.get("networkReceiveBytes"),
            cost_micros(a.get("cpuCost"), a.get("cpuCostAdjustment")),
            cost_micros(a.get("gpuCost"), a.get("gpuCostAdjustment")),
            cost_micros(a.get("ramCost"), a.get("ramCostAdjustment")),
            cost_micros(a.get("pvCost"), a.get("pvCostAdjustment")),
            cost_micros(a.get("networkCost"), a.get("networkCostAdjustment")),
            cost_micros(a.get("loadBalancerCost"), a.get("loadBalancerCostAdjustment")),
            cost_micros(a.get("sharedCost")),
            cost_micros(a.get("externalCost")),
            cost_micros(a.get("totalCost")),
            team,
            cost_center,
            self.pricebook_id,
            self.currency,
            self.finalized,
            self.collected_at,
            self.source,
        )
