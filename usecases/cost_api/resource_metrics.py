"""The GPU and emission families of ``GET /metrics``: the last complete hour's GPU cost, GPU-hours
and grams CO2e per namespace and owner, GPU idle per model, and the cluster's grams by pile.

They follow ``usecases.cost_api.metric_families``' conventions: the same hour (the last complete
one, ``finops_cost_hour_timestamp_seconds``), the same labels and ownership (``__unallocated__``
without the owner label; namespace-less rows count in their owner and the cluster only), money
exact until the exposition (``money``). Why these and no more labels: a GPU model is a handful of
values per cluster, and the namespace families exist only for namespaces with a GPU (GPU) or
with grams (emissions), so the series are at most the namespace cost family's.

- **GPUs** are as the collector split them (``usecases.collect_allocations.gpus``): a row's GPU
  cost is its share of the physical GPUs it ran on, its GPU-hours the part of their hours it is
  billed for; what nobody used is the model's idle (``finops_gpu_idle_*``). The namespaces' GPU
  cost and the idle add up to what the hour's GPUs cost.
- **Emissions** are the hour's stored split (``finops.carbon``): whole grams per row and idle,
  adding up to the nodes' and disks' grams (``finops_cluster_co2e_grams`` by pile). An hour stored
  without emissions (an OpenCost without carbon estimates) has no emission series at all, never
  0 g; ``finops_cost_hour_emissions_measured`` says which (0 or 1).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from finops.allocations import UNALLOCATED
from infra.postgres import Database
from usecases.cost_api.metric_families import CLUSTER_KINDS, money

NAMESPACE = ["namespace", "owner", "cost_center"]
OWNER = ["owner", "cost_center"]


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=["cluster", *labels])


def gpu_families(db: Database, cluster: str, aggregation: str, start: datetime | None) -> Iterator[Metric]:
    """The hour's GPU cost and GPU-hours per namespace and owner, and GPU idle per model."""
    namespace_cost = _gauge(
        "finops_namespace_gpu_cost_per_hour",
        "GPU cost of the namespace in the last complete hour: its share of the GPUs it ran on (currency units)",
        [*NAMESPACE, "currency"],
    )
    namespace_hours = _gauge(
        "finops_namespace_gpu_hours",
        "GPU-hours billed to the namespace in the last complete hour (its share of its GPUs x the part of the hour)",
        NAMESPACE,
    )
    owner_cost = _gauge(
        "finops_owner_gpu_cost_per_hour",
        "GPU cost of the owner's namespaces in the last complete hour (currency units per hour)",
        [*OWNER, "currency"],
    )
    owner_hours = _gauge(
        "finops_owner_gpu_hours", "GPU-hours billed to the owner's namespaces, last complete hour", OWNER
    )
    idle_cost = _gauge(
        "finops_gpu_idle_cost_per_hour",
        "Cost of the GPUs of the model nobody used, last complete hour (gpu_model empty: the hour was not split)",
        ["gpu_model", "currency"],
    )
    idle_hours = _gauge(
        "finops_gpu_idle_hours", "GPU-hours of the model nobody used, last complete hour", ["gpu_model"]
    )
    if start is not None:
        costs: dict[tuple[str, ...], int] = defaultdict(int)
        hours: dict[tuple[str, ...], Decimal] = defaultdict(Decimal)
        owners: dict[tuple[str, ...], int] = defaultdict(int)
        owner_gpu_hours: dict[tuple[str, ...], Decimal] = defaultdict(Decimal)
        for r in db.fetch_all("metrics_gpu_costs", cluster=cluster, aggregation=aggregation, hour=start):
            micros, gpu_hours = int(r["gpu_micros"]), Decimal(r["gpu_hours"])
            if r["idle"]:
                idle_cost.add_metric([cluster, r["gpu_model"], r["currency"]], money(micros))
                idle_hours.add_metric([cluster, r["gpu_model"]], float(gpu_hours))
                continue
            owner, cost_center = r["owner"] or UNALLOCATED, r["cost_center"] or UNALLOCATED
            owners[(owner, cost_center, r["currency"])] += micros
            owner_gpu_hours[(owner, cost_center)] += gpu_hours
            if r["namespace"]:
                costs[(r["namespace"], owner, cost_center, r["currency"])] += micros
                hours[(r["namespace"], owner, cost_center)] += gpu_hours
        for key, micros in sorted(costs.items()):
            namespace_cost.add_metric([cluster, *key], money(micros))
        for key, amount in sorted(hours.items()):
            namespace_hours.add_metric([cluster, *key], float(amount))
        for key, micros in sorted(owners.items()):
            owner_cost.add_metric([cluster, *key], money(micros))
        for key, amount in sorted(owner_gpu_hours.items()):
            owner_hours.add_metric([cluster, *key], float(amount))
    yield from (namespace_cost, namespace_hours, owner_cost, owner_hours, idle_cost, idle_hours)


def emission_families(db: Database, cluster: str, aggregation: str, start: datetime | None) -> Iterator[Metric]:
    """The hour's grams CO2e per namespace, owner and pile of the cluster; absent when the hour was
    stored without emissions, which ``finops_cost_hour_emissions_measured`` states."""
    measured = _gauge(
        "finops_cost_hour_emissions_measured",
        "1: the last complete hour was stored with emissions; 0: without (its *_co2e_grams are absent, not 0)",
        [],
    )
    namespace_grams = _gauge(
        "finops_namespace_co2e_grams",
        "Grams CO2e of the namespace in the last complete hour: its share of its nodes' and disks' by cost",
        NAMESPACE,
    )
    owner_grams = _gauge(
        "finops_owner_co2e_grams", "Grams CO2e of the owner's namespaces in the last complete hour", OWNER
    )
    piles = _gauge(
        "finops_cluster_co2e_grams",
        "The cluster's grams CO2e in the last complete hour by pile: allocated, unallocated, idle (sum: its nodes')",
        ["kind"],
    )
    if start is not None:
        window: dict[str, Any] = {"cluster": cluster, "aggregation": aggregation, "hour": start}
        stored = db.fetch_one("metrics_emission_hour", **window)
        measured.add_metric([cluster], 1 if stored else 0)
        if stored:
            namespaces: dict[tuple[str, ...], int] = defaultdict(int)
            owners: dict[tuple[str, ...], int] = defaultdict(int)
            kinds = dict.fromkeys(CLUSTER_KINDS, 0)
            for r in db.fetch_all("metrics_emissions", **window):
                grams = int(r["grams"])
                if r["idle"]:
                    kinds["idle"] += grams
                    continue
                owner, cost_center = r["owner"] or UNALLOCATED, r["cost_center"] or UNALLOCATED
                kinds["allocated" if r["owner"] else "unallocated"] += grams
                owners[(owner, cost_center)] += grams
                if r["namespace"]:
                    namespaces[(r["namespace"], owner, cost_center)] += grams
            for key, grams in sorted(namespaces.items()):
                namespace_grams.add_metric([cluster, *key], grams)
            for key, grams in sorted(owners.items()):
                owner_grams.add_metric([cluster, *key], grams)
            for kind, grams in kinds.items():
                piles.add_metric([cluster, kind], grams)
    yield from (measured, namespace_grams, owner_grams, piles)
