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

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from typing import Any

from finops.errors import InvalidInput
from finops.gpus import GpuBasis, GpuDevice, GpuUse, MigBy, PhysicalGpu, Sharing, mig_fraction, split_gpu_hour
from finops.money import to_micros
from finops.rounding import apportion

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
    """The split of one hour: per row name its micros, GPU-hours and busy GPU-hours (its measured
    use, in GPUs x hours; None: not measured), and per model the idle micros and GPU-hours."""

    owed: dict[str, int]
    hours: dict[str, Decimal]
    busy: dict[str, Decimal | None]
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
    uses = [[_use(row, unit, options) for row in unit.rows] for unit in units]  # each unit's, in its rows' order
    split = split_gpu_hour([unit.gpu for unit in units], [use for mine in uses for use in mine], options.basis)
    hours: dict[str, Decimal] = {}
    busy: dict[str, Decimal | None] = {}
    idle_hours: dict[str, Decimal] = defaultdict(Decimal)
    for unit, mine in zip(units, uses, strict=True):  # each unit's GPU-hours, split as its cost was, rounded once
        scale = unit.minutes / 60 / _HOURS  # a whole part of the unit, in 10^-10 GPU-hours
        parts = [split.billed[row.name] * scale for row in unit.rows] + [split.unused[unit.gpu.uuid] * scale]
        whole = math.lcm(*(part.denominator for part in parts))
        rounded = apportion([part.numerator * (whole // part.denominator) for part in parts], whole, round(scale))
        for row, tenths in zip(unit.rows, rounded, strict=False):
            hours[row.name] = _decimal(tenths)
        idle_hours[unit.gpu.model] += _decimal(rounded[-1])
        for use in mine:  # measured use in GPU-hours (a MIG slice's is of its slice: use x slice)
            busy[use.key] = None if use.usage is None else _decimal(round(use.usage * scale))
    return Plan(split.owed, hours, busy, split.idle, dict(idle_hours))


_HOURS = Fraction(1, 10**10)  # GPU-hours are stored to 10 decimals, far below what a report shows


def _decimal(tenths: int) -> Decimal:
    return Decimal(tenths).scaleb(-10)


def scaled_adjustment(adjustment: int, share: int, original: int) -> int:
    """OpenCost's ``gpuCostAdjustment`` (its reconciliation with the bill, sized against its own
    whole-GPU ``gpuCost``, ``original``) scaled to the row's ``share`` of its GPU, rounded half-even
    to micros: a 20 % discount stays 20 % of what the row now pays, never more than it pays."""
    if not original or not adjustment:
        return adjustment
    return round(Fraction(adjustment * share, original))


@dataclass
class _Unit:
    """What one split is over: a shared GPU (by UUID), or a node's pool of whole GPUs of a model."""

    gpu: PhysicalGpu
    gpu_minutes: Decimal  # its GPUs' minutes seen, added up (a pool of 2 GPUs for the hour: 120)
    rows: list[GpuRow]

    @cached_property
    def minutes(self) -> Fraction:
        return Fraction(self.gpu_minutes)


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
        units.append(_Unit(PhysicalGpu(uuid, model, gpu.cost_micros), gpu.minutes, mine))
    whole = [row for row in rows if row.sharing is Sharing.WHOLE]
    pools: dict[str | None, list[HourGpu]] = defaultdict(list)  # the free GPUs, a pool per model
    for gpu in free:
        pools[gpu.model].append(gpu)
    if not pools and whole:
        raise InvalidInput(f"{whole[0].name}: holds a whole GPU, but every GPU of node {node} is shared")
    for kind, pool in sorted(pools.items(), key=lambda item: item[0] or ""):
        mine = whole if len(pools) == 1 else [row for row in whole if row.model == kind]
        name = kind or next((row.model for row in whole or rows if row.model), None) or UNKNOWN_MODEL
        uuid = f"node:{node}" if len(pools) == 1 else f"node:{node}:{kind}"
        cost = sum(g.cost_micros for g in pool)
        units.append(_Unit(PhysicalGpu(uuid, name, cost), sum((g.minutes for g in pool), Decimal(0)), mine))
    if len(pools) > 1 and (stray := [row for row in whole if row.model not in pools]):
        raise InvalidInput(f"{stray[0].name}: its GPU model {stray[0].model!r} is none of node {node}'s")
    return units


def _use(row: GpuRow, unit: _Unit, options: GpuOptions) -> GpuUse:
    """The row's request and use as fractions of its unit: GPUs x the minutes it ran, over the
    unit's GPU-minutes (at most all of it: a pod seen a minute longer than its GPU is not more)."""
    request, usage = Fraction(row.request or 0), None if row.usage is None else Fraction(row.usage)
    if row.sharing is Sharing.MIG:
        if not row.profile:
            raise InvalidInput(f"{row.name}: a mig GPU row has no gpuProfile")
        memory = _memory_gb(unit.gpu.model, row, options.mig_by)
        slice_ = mig_fraction(row.profile, options.mig_by, memory, unit.gpu.model)
        request, usage = request * slice_, None if usage is None else usage * slice_
    if not unit.gpu_minutes:
        request, usage = _NONE, None if usage is None else _NONE
    elif row.minutes != unit.gpu_minutes:  # else it ran for all of its unit's time
        ran = Fraction(row.minutes) / unit.minutes
        request, usage = request * ran, None if usage is None else usage * ran
    return GpuUse(
        row.name,
        unit.gpu.uuid,
        row.sharing,
        min(request, _WHOLE),
        None if usage is None else min(usage, _WHOLE),
    )


_NONE, _WHOLE = Fraction(0), Fraction(1)


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
