"""What an hour's nodes, GPUs and emissions are, fetched before its transaction, so no lock is held
while OpenCost or Prometheus answers: OpenCost's node assets (with its carbon estimates), the
Prometheus source's GPUs (DCGM) and nodes' grams (the operator's emission table) and, with
``GPU_FIGURES=prometheus``, each container's GPU figures. The hour's transaction then writes what
was fetched with the hour's rows (``service._store_hour``), or nothing at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from finops.allocations import Container
from finops.carbon import EmissionTable
from finops.gpus import GpuDevice
from finops.hours import Hour
from infra.opencost import Assets
from usecases.collect_allocations.assets import fetch_assets
from usecases.collect_allocations.carbon import TableEmissions, fetch_table_emissions
from usecases.collect_allocations.gpus import fetch_devices, fetch_figures


@dataclass(frozen=True)
class Inventory:
    """What the hour's nodes and GPUs cost: OpenCost's assets, or the Prometheus source's GPUs."""

    assets: Assets | None
    devices: list[GpuDevice] | None
    emissions: TableEmissions | None = None  # the nodes' grams by the operator's emission table
    figures: dict[Container, dict[str, Any]] | None = None  # GPU_FIGURES=prometheus: each container's GPU


def fetch_inventory(
    source: object, hour: Hour, table: EmissionTable | None, *, retry_until: float | None = None
) -> Inventory:
    """Everything the source answers of ``hour`` besides its allocations (each part None when the
    source has none of it); a failure fails the hour like an outage, before anything is locked."""
    return Inventory(
        assets=fetch_assets(source, hour, retry_until=retry_until),
        devices=fetch_devices(source, hour, retry_until=retry_until),
        emissions=fetch_table_emissions(source, hour, table, retry_until=retry_until),
        figures=fetch_figures(source, hour, retry_until=retry_until),
    )
