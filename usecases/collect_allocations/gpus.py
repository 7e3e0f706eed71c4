"""The hour's GPU split, inside its transaction: each physical GPU's cost shared among the rows that
ran on it by the cluster's GPU basis (``finops.gpus``), and what nobody used kept as one idle line
per GPU model.

The source's own GPU figures are replaced: OpenCost bills requested whole GPUs times hours (a
HAMi ``gpucores=25`` pod pays a whole GPU, a pod using a tenth of its GPU pays all of it), and its
``__idle__`` line holds the GPUs nobody requested, whatever their model. After the split:

- each GPU row's ``gpu_cost_micros`` is its share, plus OpenCost's ``gpuCostAdjustment`` for the
  row (its reconciliation with the bill, which the node's ``gpuCost`` does not hold) scaled to the
  share, and its ``total_cost_micros`` moves by the difference; ``gpu_busy_hours`` is its measured
  use in GPU-hours; its ``gpu_hours`` are the GPU-hours it is billed
  for (its part of its GPU's hours);
- the source's idle rows lose their GPU cost (``gpu_cost_micros`` 0, the total lowered by it);
- a row ``__idle__/gpu:<model>`` per GPU model holds that model's idle GPU cost and GPU-hours.
  It is an idle row like ``__idle__``, so the chargeback policy's ``idle`` option distributes it
  or keeps it separate, as it does CPU and memory idle.

So the hour's GPU cost is exactly what its GPUs cost (with the rows' adjustments), to the micro:
every GPU's parts add up to it.

Where each GPU's cost comes from (the plan over them: ``finops.gpu_hours``):

- **OpenCost**: the hour's node assets (``gpuCost`` over ``gpuCount``, split evenly to the micro),
  with DCGM's UUIDs and models when ``GPU_FIGURES=prometheus`` (``apply_figures`` then writes each
  container's GPU figures from Prometheus over OpenCost's first);
- **Prometheus**: DCGM's inventory (``gpu_devices``), each GPU priced at the PriceBook's
  ``gpuHour`` for the minutes it was seen. GPUs no pod used are in the inventory, so their cost is
  idle, not lost.

When the hour cannot be split (its rows are unpriced; a GPU row's node has no GPU in the assets;
OpenCost sent no ``gpuAllocation``; no asset or inventory at all), the source's GPU figures are kept,
``allocation_hours.gpu_basis`` stays NULL and a warning names the reason: never a guess.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

from finops.allocations import IDLE, Container
from finops.errors import InvalidInput
from finops.gpu_hours import GpuOptions, GpuRow, HourGpu, from_devices, plan, scaled_adjustment
from finops.gpus import GpuDevice
from finops.hours import Hour
from finops.money import to_micros
from finops.rounding import largest_remainder
from infra.opencost import Assets
from infra.postgres import Database
from infra.postgres.database import Connection

log = logging.getLogger(__name__)


@runtime_checkable
class GpuInventory(Protocol):
    """A source that lists the hour's physical GPUs itself (the Prometheus source, from DCGM)."""

    def gpu_devices(self, start: datetime, end: datetime, *, retry_until: float | None = ...) -> list[GpuDevice]: ...


@runtime_checkable
class GpuFigures(Protocol):
    """OpenCost's allocations with each container's GPU figures from Prometheus
    (``sources.WithGpuFigures``, ``GPU_FIGURES=prometheus``)."""

    def gpu_figures(
        self, start: datetime, end: datetime, *, retry_until: float | None = ...
    ) -> dict[Container, dict[str, Any]]: ...


def fetch_figures(
    source: object, hour: Hour, *, retry_until: float | None = None
) -> dict[Container, dict[str, Any]] | None:
    """Each container's ``gpuAllocation`` from Prometheus, for a source that has them; fetched
    before the transaction and written over the rows' by ``apply_figures``."""
    if not isinstance(source, GpuFigures):
        return None
    return source.gpu_figures(hour.start, hour.end, retry_until=retry_until)


def apply_figures(
    db: Database, conn: Connection, key: dict[str, Any], figures: dict[Container, dict[str, Any]]
) -> None:
    """Inside the hour's transaction, after its rows: each container's GPU figures from Prometheus
    replace OpenCost's (which say nothing of MIG slices or HAMi fractions). A container Prometheus
    has no figures for keeps OpenCost's."""
    keys = sorted(figures)
    values = [figures[k] for k in keys]
    db.execute(
        "set_gpu_figures",
        conn,
        **key,
        namespaces=[k[0] for k in keys],
        pods=[k[1] for k in keys],
        containers=[k[2] for k in keys],
        requests=[v.get("gpuRequestAverage") for v in values],
        usages=[v.get("gpuUsageAverage") for v in values],
        shared=[v.get("isGPUShared") for v in values],
        devices=[v.get("gpuDevice") for v in values],
        models=[v.get("gpuModel") for v in values],
        uuids=[v.get("gpuUUID") for v in values],
        sharings=[v.get("gpuSharing") for v in values],
        profiles=[v.get("gpuProfile") for v in values],
    )


def fetch_devices(source: object, hour: Hour, *, retry_until: float | None = None) -> list[GpuDevice] | None:
    """The hour's GPUs from a source that lists them; None for one that does not (OpenCost,
    whose GPUs are its node assets). Fetched before the transaction, like the assets."""
    if not isinstance(source, GpuInventory):
        return None
    return source.gpu_devices(hour.start, hour.end, retry_until=retry_until)


def from_assets(assets: Assets, devices: Sequence[GpuDevice] | None = None) -> list[HourGpu]:
    """OpenCost's node assets as GPUs: a node's GPU cost split evenly over its ``gpuCount``; with
    DCGM's ``devices`` (``GPU_FIGURES=prometheus``), each GPU is also given its UUID and model."""
    gpus: list[HourGpu] = []
    seen: dict[str, list[GpuDevice]] = defaultdict(list)
    for device in sorted(devices or (), key=lambda d: d.uuid):
        seen[device.node].append(device)
    for node in assets.nodes:
        count = node.gpu_count
        if count <= 0 and not seen.get(node.name):
            continue
        if count != count.to_integral_value():
            raise InvalidInput(f"node {node.name}: gpuCount {count} is not a whole number of GPUs")
        mine = seen.pop(node.name, [])
        if devices is not None and len(mine) != count:
            raise InvalidInput(f"node {node.name}: OpenCost counts {count} GPUs, DCGM saw {len(mine)}")
        cost = to_micros(node.gpu_cost)
        parts = largest_remainder([Fraction(cost, int(count))] * int(count), cost)
        minutes = min(node.minutes, Decimal(60))
        for index, part in enumerate(parts):
            uuid, model = (mine[index].uuid, mine[index].model) if mine else (None, None)
            gpus.append(HourGpu(node.name, uuid, model, part, minutes))
    if seen:
        raise InvalidInput(f"node {min(seen)}: DCGM saw GPUs OpenCost's assets do not have")
    return gpus


def split_hour(
    db: Database,
    conn: Connection,
    key: dict[str, Any],
    options: GpuOptions,
    *,
    assets: Assets | None,
    devices: list[GpuDevice] | None,
    rates: Mapping[str, Decimal] | None,
    priced: bool,
    row_tail: Mapping[str, Any],
) -> tuple[int, dict[str, str | None]]:
    """Inside the hour's transaction, after its rows: split its GPUs (module docstring). Returns the
    GPU idle rows written and the ledger's ``gpu_basis``/``gpu_mig_by`` (``record_hour_gpus``):
    NULL, with a warning naming the reason, when the hour keeps its source's GPU figures."""
    found = db.fetch_all("hour_gpu_rows", conn, **key)
    stored = [row for row in found if row["entry_kind"] == "workload"]
    source_idle = [row["name"] for row in found if row["entry_kind"] == "idle"]  # they lose their GPUs
    basis: GpuOptions | None = None
    if stored or (assets and any(node.gpu_count for node in assets.nodes)) or devices:
        try:
            rows = [GpuRow.of(row) for row in stored]
            _check_splittable(rows, assets, devices, rates, priced)
            if assets is None:  # the Prometheus source: each GPU DCGM saw, at the PriceBook's rate
                gpus = from_devices(devices or [], (rates or {})["gpuHour"])
            else:  # OpenCost: its node assets, with DCGM's UUIDs when GPU_FIGURES=prometheus
                gpus = from_assets(assets, devices)
            result = plan(rows, gpus, options)
            basis = options
        except InvalidInput as exc:
            log.warning(
                f"the hour's GPUs are not split, their cost stays the source's: {exc.message}",
                extra={"fields": {"hour": str(key["hour"])}},
            )
    written = 0
    if basis is not None:
        names = sorted(result.owed)
        adjustments = {row["name"]: row for row in stored}  # OpenCost's gpuCostAdjustment, scaled to the share
        micros = [result.owed[name] + _adjustment(adjustments[name], result.owed[name]) for name in names]
        db.execute(
            "set_gpu_costs",
            conn,
            **key,
            names=names + source_idle,
            micros=micros + [0] * len(source_idle),
            hours=[result.hours[name] for name in names] + [Decimal(0)] * len(source_idle),
            busy=[result.busy[name] for name in names] + [None] * len(source_idle),
        )
        models = sorted(result.idle)
        written = db.execute(
            "insert_gpu_idle",
            conn,
            **key,
            **row_tail,
            names=[f"{IDLE}/gpu:{model}" for model in models],
            models=models,
            micros=[result.idle[model] for model in models],
            hours=[result.idle_hours[model] for model in models],
        )
    ledger = {
        "gpu_basis": None if basis is None else basis.basis.value,
        "gpu_mig_by": None if basis is None else basis.mig_by.value,
    }
    return written, ledger


def _adjustment(row: Mapping[str, Any], share: int) -> int:
    """The row's GPU cost adjustment scaled to its share (``finops.gpu_hours.scaled_adjustment``)."""
    adjustment = row["gpu_adjustment_micros"] or 0
    return scaled_adjustment(adjustment, share, (row["gpu_cost_micros"] or 0) - adjustment)


def _check_splittable(
    rows: list[GpuRow],
    assets: Assets | None,
    devices: list[GpuDevice] | None,
    rates: Mapping[str, Decimal] | None,
    priced: bool,
) -> None:
    """Refuse (``InvalidInput``) an hour whose GPUs cannot be split: it keeps its source's figures."""
    if not priced:
        raise InvalidInput("the hour is unpriced")
    if devices is None and assets is None:
        raise InvalidInput("OpenCost answered no assets: the GPUs' cost is unknown")
    if assets is None and "gpuHour" not in (rates or {}):
        raise InvalidInput("the PriceBook has no gpuHour rate")
    if missing := next((row.name for row in rows if row.request is None), None):
        raise InvalidInput(f"{missing}: no GPU request (an OpenCost without gpuAllocation, or no DCGM figure)")
