"""An hour of a cluster's GPUs split among its rows (``finops.gpus`` splits one GPU; this plans
the hour): which GPUs there are (OpenCost's node assets or DCGM's inventory, each priced), which
rows ran on each, and each row's request and use as a fraction of it.

GPUs are pooled per node for ``whole`` rows (a pod holding two GPUs is one row with request 2, and
OpenCost does not always say which UUID); a ``mig``, ``hami`` or ``time-sliced`` GPU is split on its
own, by UUID. A row's fraction covers the part of the GPU's time it ran (``minutes``); a MIG slice
is its share of the GPU (``GPU_MIG_BY``: of 7 compute slices, or of 8 memory slices, the GPU's
memory read from its model's name). ``InvalidInput`` names the row or node a plan cannot place.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from finops.errors import InvalidInput
from finops.gpus import GpuBasis, GpuDevice, GpuUse, MigBy, PhysicalGpu, Sharing, mig_fraction, split_gpu_hour
from finops.money import to_micros

UNKNOWN_MODEL = "unknown"
_MEMORY = re.compile(r"(\d+)\s*GB", re.IGNORECASE)


@dataclass(frozen=True)
class GpuOptions:
    """``GPU_BASIS`` and ``GPU_MIG_BY``: how the cluster's GPUs are split."""

    basis: GpuBasis = GpuBasis.REQUEST
    mig_by: MigBy = MigBy.COMPUTE


@dataclass(frozen=True)
class HourGpu:
    """One physical GPU of the hour: its node, its UUID when known, its model and cost."""

    node: str
    uuid: str | None
    model: str | None
    cost_micros: int
    minutes: Decimal = Decimal(60)


def from_devices(devices: Iterable[GpuDevice], rate: Decimal) -> list[HourGpu]:
    """DCGM's GPUs, each priced at ``rate`` per GPU-hour for the minutes it was seen."""
    return [HourGpu(d.node, d.uuid, d.model, to_micros(rate * d.minutes / 60), d.minutes) for d in devices]


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


def plan(rows: Sequence[GpuRow], gpus: Sequence[HourGpu], options: GpuOptions) -> Plan:
    """Split the hour's GPUs among ``rows`` (module docstring). ``InvalidInput`` names the row or
    node when a row cannot be placed on a GPU."""
    by_node: dict[str, list[HourGpu]] = defaultdict(list)
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


def _units(node: str, gpus: list[HourGpu], rows: list[GpuRow]) -> list[_Unit]:
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
