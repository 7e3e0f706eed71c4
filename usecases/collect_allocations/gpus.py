"""The hour's GPU split, inside its transaction: each physical GPU's cost shared among the rows that
ran on it by the cluster's GPU basis (``finops.gpus``), and what nobody used kept as one idle line
per GPU model.

The source's own GPU figures are replaced: OpenCost bills requested whole GPUs times hours (a
HAMi ``gpucores=25`` pod pays a whole GPU, a pod using a tenth of its GPU pays all of it), and its
``__idle__`` line holds the GPUs nobody requested, whatever their model. After the split:

- each GPU row's ``gpu_cost_micros`` is its share, plus OpenCost's ``gpuCostAdjustment`` for the
  row (its reconciliation with the bill, which the node's ``gpuCost`` does not hold), and its
  ``total_cost_micros`` moves by the difference; its ``gpu_hours`` are the GPU-hours it is billed
  for (its part of its GPU's hours);
- the source's idle rows lose their GPU cost (``gpu_cost_micros`` 0, the total lowered by it);
- a row ``__idle__/gpu:<model>`` per GPU model holds that model's idle GPU cost and GPU-hours.
  It is an idle row like ``__idle__``, so the chargeback policy's ``idle`` option distributes it
  or keeps it separate, as it does CPU and memory idle.

So the hour's GPU cost is exactly what its GPUs cost (with the rows' adjustments), to the micro:
every GPU's parts add up to it.

Where each GPU's cost comes from:

- **OpenCost**: the hour's node assets (``gpuCost`` over ``gpuCount``, split evenly to the micro);
- **Prometheus**: DCGM's inventory (``gpu_devices``), each GPU priced at the PriceBook's
  ``gpuHour`` for the minutes it was seen. GPUs no pod used are in the inventory, so their cost is
  idle, not lost.

GPUs are pooled per node for ``whole`` rows (a pod holding two GPUs is one row with request 2, and
OpenCost does not always say which UUID); a ``mig``, ``hami`` or ``time-sliced`` GPU is split on its
own, by UUID. A row's fraction covers the part of the hour it ran (``minutes / 60``).

When the hour cannot be split (its rows are unpriced; a GPU row's node has no GPU in the assets;
OpenCost sent no ``gpuAllocation``; no asset or inventory at all), the source's GPU figures are kept,
``allocation_hours.gpu_basis`` stays NULL and a warning names the reason: never a guess.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

from finops.allocations import IDLE
from finops.errors import InvalidInput
from finops.gpus import GpuBasis, GpuDevice, GpuUse, MigBy, PhysicalGpu, Sharing, mig_fraction, split_gpu_hour
from finops.hours import Hour
from finops.money import to_micros
from finops.rounding import largest_remainder
from infra.opencost import Assets
from infra.postgres import Database
from infra.postgres.database import Connection

log = logging.getLogger(__name__)

UNKNOWN_MODEL = "unknown"
_MEMORY = re.compile(r"(\d+)\s*GB", re.IGNORECASE)


@dataclass(frozen=True)
class GpuOptions:
    """``GPU_BASIS`` and ``GPU_MIG_BY``: how the cluster's GPUs are split."""

    basis: GpuBasis = GpuBasis.REQUEST
    mig_by: MigBy = MigBy.COMPUTE


@runtime_checkable
class GpuInventory(Protocol):
    """A source that lists the hour's physical GPUs itself (the Prometheus source, from DCGM)."""

    def gpu_devices(self, start: datetime, end: datetime, *, retry_until: float | None = ...) -> list[GpuDevice]: ...


Container = tuple[str, str, str]  # namespace, pod, container


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


@dataclass(frozen=True)
class _Gpu:
    """One physical GPU of the hour: its node, its UUID when known, its model and cost."""

    node: str
    uuid: str | None
    model: str | None
    cost_micros: int
    minutes: Decimal = Decimal(60)


def from_assets(assets: Assets, devices: Sequence[GpuDevice] | None = None) -> list[_Gpu]:
    """OpenCost's node assets as GPUs: a node's GPU cost split evenly over its ``gpuCount``; with
    DCGM's ``devices`` (``GPU_FIGURES=prometheus``), each GPU is also given its UUID and model."""
    gpus: list[_Gpu] = []
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
            gpus.append(_Gpu(node.name, uuid, model, part, minutes))
    if seen:
        raise InvalidInput(f"node {min(seen)}: DCGM saw GPUs OpenCost's assets do not have")
    return gpus


def from_devices(devices: Iterable[GpuDevice], rate: Decimal) -> list[_Gpu]:
    """DCGM's GPUs, each priced at ``rate`` per GPU-hour for the minutes it was seen."""
    return [_Gpu(d.node, d.uuid, d.model, to_micros(rate * d.minutes / 60), d.minutes) for d in devices]


@dataclass(frozen=True)
class GpuRow:
    """What the split reads of a stored row that ran on a GPU."""

    name: str
    node: str
    minutes: Decimal
    sharing: Sharing
    profile: str | None
    request: Decimal | None  # None: the source sent no gpuAllocation
    usage: Decimal | None
    model: str | None
    uuid: str | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> GpuRow:
        name = row["name"]
        sharing = row["gpu_sharing"] or ("time-sliced" if row["gpu_shared"] else "whole")
        try:
            mode = Sharing(sharing)
        except ValueError:
            raise InvalidInput(f"{name}: gpuSharing {sharing!r} is not one of {', '.join(Sharing)}") from None
        if mode is not Sharing.WHOLE and not row["gpu_uuid"]:
            raise InvalidInput(f"{name}: a {mode} GPU row has no gpuUUID")
        return cls(
            name,
            row["node"] or "",
            Decimal(row["minutes"] or 0),
            mode,
            row["gpu_profile"],
            None if row["gpu_request_avg"] is None else Decimal(row["gpu_request_avg"]),
            None if row["gpu_usage_avg"] is None else Decimal(row["gpu_usage_avg"]),
            row["gpu_model"],
            row["gpu_uuid"],
        )


@dataclass(frozen=True)
class Plan:
    """The split of one hour: micros and GPU-hours per row name, and per model the idle micros and
    GPU-hours."""

    owed: dict[str, int]
    hours: dict[str, Decimal]
    idle: dict[str, int]
    idle_hours: dict[str, Decimal]


def plan(rows: Sequence[GpuRow], gpus: Sequence[_Gpu], options: GpuOptions) -> Plan:
    """Split the hour's GPUs among ``rows`` (module docstring). ``InvalidInput`` names the row or
    node when a row cannot be placed on a GPU."""
    by_node: dict[str, list[_Gpu]] = defaultdict(list)
    for gpu in gpus:
        by_node[gpu.node].append(gpu)
    if stray := sorted({row.node for row in rows} - set(by_node)):
        first = next(row for row in rows if row.node == stray[0])
        raise InvalidInput(f"{first.name}: its node {stray[0] or '(none)'} has no GPU in the hour's inventory")
    on_node: dict[str, list[GpuRow]] = defaultdict(list)  # in one pass: a node's rows, in their order
    for row in rows:
        on_node[row.node].append(row)
    units: list[_Unit] = []
    for node in sorted(by_node):
        units.extend(_units(node, by_node[node], on_node[node]))
    uses = [_use(row, unit, options) for unit in units for row in unit.rows]
    split = split_gpu_hour([unit.gpu for unit in units], uses, options.basis)
    hours: dict[str, Decimal] = defaultdict(Decimal)
    billed: dict[str, Decimal] = defaultdict(Decimal)
    for unit in units:  # each part of a unit's GPU-hours, exactly as split
        gpu_hours = unit.size * Fraction(unit.minutes) / 60
        hours[unit.gpu.model] += _decimal(split.unused[unit.gpu.uuid] * gpu_hours)
        for row in unit.rows:
            billed[row.name] += _decimal(split.billed[row.name] * gpu_hours)
    return Plan(split.owed, dict(billed), split.idle, dict(hours))


def _decimal(value: Fraction) -> Decimal:
    """GPU-hours as stored (numeric): exact to 10 decimals, far below what a report shows."""
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(Decimal("1e-10"))


@dataclass(frozen=True)
class _Unit:
    """What one split is over: a shared GPU (by UUID), or a node's pool of whole GPUs."""

    gpu: PhysicalGpu
    size: int  # GPUs in it
    minutes: Decimal  # how long it was seen
    rows: list[GpuRow]


def _units(node: str, gpus: list[_Gpu], rows: list[GpuRow]) -> list[_Unit]:
    free = list(gpus)
    units = []
    for uuid in sorted({row.uuid for row in rows if row.sharing is not Sharing.WHOLE and row.uuid}):
        # its device (DCGM's inventory), or one of the node's GPUs when the assets give no UUIDs
        gpu = next((g for g in free if g.uuid == uuid), None) or next((g for g in free if g.uuid is None), None)
        if gpu is None:
            raise InvalidInput(f"node {node}: GPU {uuid} is not among the node's {len(gpus)} GPUs")
        free.remove(gpu)
        mine = [row for row in rows if row.uuid == uuid and row.sharing is not Sharing.WHOLE]
        model = gpu.model or next((row.model for row in mine if row.model), None) or UNKNOWN_MODEL
        units.append(_Unit(PhysicalGpu(uuid, model, gpu.cost_micros), 1, gpu.minutes, mine))
    whole = [row for row in rows if row.sharing is Sharing.WHOLE]
    if free:
        model = free[0].model or next((row.model for row in whole or rows if row.model), None) or UNKNOWN_MODEL
        pool = PhysicalGpu(f"node:{node}", model, sum(g.cost_micros for g in free))
        units.append(_Unit(pool, len(free), max(g.minutes for g in free), whole))
    elif whole:
        raise InvalidInput(f"{whole[0].name}: holds a whole GPU, but every GPU of node {node} is shared")
    return units


def _use(row: GpuRow, unit: _Unit, options: GpuOptions) -> GpuUse:
    """The row's request and use as fractions of its unit, for the part of the unit's time it ran."""
    request, usage = Fraction(row.request or 0), None if row.usage is None else Fraction(row.usage)
    if row.sharing is Sharing.MIG:
        if not row.profile:
            raise InvalidInput(f"{row.name}: a mig GPU row has no gpuProfile")
        slice_ = mig_fraction(row.profile, options.mig_by, _memory_gb(unit.gpu.model, row, options.mig_by))
        request, usage = request * slice_, None if usage is None else usage * slice_
    elif row.sharing is Sharing.WHOLE:
        request, usage = request / unit.size, None if usage is None else usage / unit.size
    if unit.minutes and row.minutes == unit.minutes:  # the usual row: it ran as long as its GPU was seen
        return GpuUse(row.name, unit.gpu.uuid, row.sharing, request, usage)
    ran = Fraction(row.minutes) / Fraction(unit.minutes) if unit.minutes else Fraction(0)
    return GpuUse(row.name, unit.gpu.uuid, row.sharing, request * ran, None if usage is None else usage * ran)


def _memory_gb(model: str, row: GpuRow, by: MigBy) -> int:
    """A GPU's memory, from its model's name (``NVIDIA H100 80GB HBM3``); needed to slice by memory."""
    if by is MigBy.COMPUTE:
        return 0
    match = _MEMORY.search(model)
    if match is None:
        raise InvalidInput(
            f"{row.name}: GPU model {model!r} does not say its memory (…80GB), needed by GPU_MIG_BY=memory"
        )
    return int(match[1])


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
    stored = db.fetch_all("hour_gpu_rows", conn, **key)
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
        db.execute(
            "set_gpu_costs",
            conn,
            **key,
            names=names,
            micros=[result.owed[name] for name in names],
            hours=[result.hours[name] for name in names],
        )
        db.execute("clear_idle_gpu_costs", conn, **key)
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
    if missing := next((row.name for row in rows if row.request is None), None):  # an older OpenCost
        raise InvalidInput(f"{missing}: OpenCost sent no gpuAllocation")
