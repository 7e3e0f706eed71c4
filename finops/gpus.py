"""What each workload owes for the GPUs it ran on: one physical GPU's cost for an hour split among
the workloads that used it, and the unused rest kept as that GPU model's idle, to the micro.

OpenCost bills a GPU as requested whole GPUs times hours: a pod that used a tenth of its GPU pays
for all of it, and a fractional request (HAMi's ``gpucores=25``) is billed as a whole GPU. Here
every physical GPU (its UUID) is priced once, and its hour's cost ``C`` (integer micros) is split:

- each workload on it gets a **fraction** of the GPU by the cluster's **basis**: its request
  (``request``: what it reserved, OpenCost's rule), its measured use (``usage``: DCGM's engine
  activity), or the larger of the two (``max``, the rule for CPU and memory);
- what a workload requested depends on how the GPU is shared:

  - ``whole``: the GPU is the workload's alone; its request is 1 of it (``finops.gpu_hours``
    pools a node's whole GPUs of a model: a request of 1 GPU is then its part of the pool, for the
    minutes it ran);
  - ``mig``: a MIG slice (``nvidia.com/mig-1g.10gb``) is its share of the physical GPU by compute
    slices (1 of 7) or by memory slices (1 of 8), as the policy says; its measured use is a share
    of the slice, so of the GPU it is use x slice;
  - ``hami``: HAMi's ``gpucores`` (percent of the GPU's cores) or ``gpumem`` (of its memory) is the
    fraction requested, never a whole GPU;
  - ``time-sliced``: every pod sharing the GPU asks for "one GPU" that is a turn on the same one,
    so a request says nothing of its share: the GPU is split by **measured use** among its pods,
    whatever the basis;

- the fractions of one GPU add up to at most 1: when they add up to more (``max`` with use above
  the reservation, HAMi's cores oversubscribed), each is scaled down in proportion, since a GPU
  cannot cost more than its price;
- the rest, ``C x (1 - sum of fractions)``, is the GPU's **idle**, a line per GPU model, which the
  policy's idle option distributes or keeps, as CPU and memory idle;
- the exact shares (rational micros) are rounded once, by largest remainder over the workloads
  and the idle together (``finops.rounding``), so they add up to ``C`` exactly.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction

from finops.errors import InvalidInput
from finops.rounding import apportion


class GpuBasis(StrEnum):
    REQUEST = "request"
    USAGE = "usage"
    MAX = "max"


class Sharing(StrEnum):
    WHOLE = "whole"
    MIG = "mig"
    HAMI = "hami"
    TIME_SLICED = "time-sliced"


class MigBy(StrEnum):
    COMPUTE = "compute"  # a 1g slice is 1 of the GPU's 7 compute slices
    MEMORY = "memory"  # a 1g.10gb slice is 1 of its 8 memory slices


COMPUTE_SLICES = 7
MEMORY_SLICES = 8
# MIG-capable GPUs whose slices are not 7 of compute and 8 of memory (A100, H100, H200, B200 are)
_SLICES = {re.compile(r"\bA30\b"): (4, 4)}
_MIG = re.compile(r"(?:nvidia\.com/mig-)?(?P<compute>[1-7])g\.(?P<memory>\d+)gb(?:\+me)?")


def mig_slices(model: str) -> tuple[int, int]:
    """A MIG-capable GPU model's compute and memory slices: 7 and 8, or 4 and 4 for an A30."""
    return next((slices for pattern, slices in _SLICES.items() if pattern.search(model)), (7, 8))


def mig_fraction(profile: str, by: MigBy, gpu_memory_gb: int, model: str = "") -> Fraction:
    """The share of the physical GPU a MIG ``profile`` (``nvidia.com/mig-3g.40gb``, ``3g.40gb``, or
    with the media extensions, ``1g.10gb+me``) holds: its compute slices of the model's (7; 4 on an
    A30), or its memory of ``gpu_memory_gb`` in the model's memory slices (8: 10 GB of an 80 GB
    A100/H100; 4 on an A30)."""
    match = _MIG.fullmatch(profile)
    if match is None:
        raise InvalidInput(f"MIG profile {profile!r} is not <n>g.<m>gb (nvidia.com/mig-1g.10gb)")
    compute_slices, memory_slices = mig_slices(model)
    if by is MigBy.COMPUTE:
        compute = Fraction(int(match["compute"]), compute_slices)
        if compute > 1:
            raise InvalidInput(f"MIG profile {profile!r} is more than the {compute_slices} compute slices of {model}")
        return compute
    if gpu_memory_gb <= 0 or gpu_memory_gb % memory_slices:
        raise InvalidInput(f"GPU memory {gpu_memory_gb} GB is not {memory_slices} memory slices of whole gigabytes")
    slices = Fraction(int(match["memory"]), gpu_memory_gb // memory_slices)
    if slices.denominator != 1 or not 1 <= slices <= memory_slices:
        raise InvalidInput(f"MIG profile {profile!r} is not whole memory slices of a {gpu_memory_gb} GB GPU")
    return slices / memory_slices


@dataclass(frozen=True)
class PhysicalGpu:
    """One GPU for one hour: its UUID, model and what the hour of it costs (micros)."""

    uuid: str
    model: str
    cost_micros: int


@dataclass(frozen=True)
class GpuDevice:
    """A physical GPU a source saw during an hour (the Prometheus source's inventory, from DCGM's
    exporter): the GPUs no workload used are seen too, so their cost is idle, not lost."""

    uuid: str
    model: str
    node: str
    minutes: Decimal  # how long in the hour it was seen (at most 60)


@dataclass(frozen=True)
class GpuUse:
    """One workload's hour on a physical GPU: what it requested of the GPU (a fraction: 1 for a
    whole GPU for the whole hour, 1/7 for a 1g MIG slice, 0.25 for HAMi's ``gpucores=25``; any
    number for a time-sliced replica, which is not used) and what it used of the whole GPU (a
    fraction of the hour's engine activity; None when not measured)."""

    key: str  # the allocation (namespace/controller/pod/container)
    uuid: str
    sharing: Sharing
    request: Fraction
    usage: Fraction | None


@dataclass(frozen=True)
class GpuSplit:
    """An hour's GPU cost: micros per workload, and per GPU model the idle part. For GPU-hours,
    the exact parts: ``billed`` per workload (of its GPU) and ``unused`` per GPU (by UUID)."""

    owed: dict[str, int]
    idle: dict[str, int]
    billed: dict[str, Fraction] = field(default_factory=dict)
    unused: dict[str, Fraction] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.owed.values()) + sum(self.idle.values())


def fraction_of(use: GpuUse, basis: GpuBasis) -> Fraction:
    """What ``use`` is billed of its GPU before the GPU's fractions are capped at 1."""
    usage = use.usage
    if use.sharing is Sharing.TIME_SLICED:
        return usage or Fraction(0)  # split by measured use, whatever the basis
    if basis is GpuBasis.REQUEST:
        return use.request
    if usage is None:  # no DCGM figure for it: nothing measured is nothing used
        usage = Fraction(0)
    return usage if basis is GpuBasis.USAGE else max(use.request, usage)


def split_gpu_hour(gpus: Iterable[PhysicalGpu], uses: Iterable[GpuUse], basis: GpuBasis) -> GpuSplit:
    """Split each GPU's hour among its uses (module docstring); every GPU's parts add up to its cost
    to the micro. A use on an unknown GPU, or a fraction outside [0, 1], is an ``InvalidInput``."""
    by_uuid: dict[str, list[GpuUse]] = defaultdict(list)
    known = {gpu.uuid: gpu for gpu in gpus}
    for use in uses:
        if use.uuid not in known:
            raise InvalidInput(f"{use.key}: GPU {use.uuid} is not among the hour's GPUs")
        for name, value in (("request", use.request), ("usage", use.usage)):
            if value is not None and not 0 <= value.numerator <= value.denominator:
                raise InvalidInput(f"{use.key}: GPU {name} {value} is not a fraction of one GPU")
        by_uuid[use.uuid].append(use)
    owed: dict[str, int] = defaultdict(int)
    idle: dict[str, int] = defaultdict(int)
    billed: dict[str, Fraction] = defaultdict(Fraction)
    unused: dict[str, Fraction] = {}
    for uuid, gpu in sorted(known.items()):
        mine = sorted(by_uuid.get(uuid, []), key=lambda use: use.key)
        parts, whole = _parts([fraction_of(use, basis) for use in mine])
        # the idle last: ties go to the workloads
        rounded = apportion([gpu.cost_micros * part for part in parts], whole, gpu.cost_micros)
        for use, micros, part in zip(mine, rounded, parts, strict=False):
            owed[use.key] += micros
            billed[use.key] += Fraction(part, whole)
        idle[gpu.model] += rounded[-1]
        unused[uuid] = Fraction(parts[-1], whole)
    return GpuSplit(dict(owed), dict(idle), dict(billed), unused)


def _parts(fractions: Sequence[Fraction]) -> tuple[list[int], int]:
    """Each use's part of the GPU and, last, the idle part, as numerators over one denominator
    (returned second): scaled down to the whole GPU when they add up to more."""
    whole = math.lcm(*(f.denominator for f in fractions))
    parts = [f.numerator * (whole // f.denominator) for f in fractions]
    used = sum(parts)
    if used > whole:
        return [*parts, 0], used
    return [*parts, whole - used], whole
