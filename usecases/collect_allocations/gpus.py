"""The hour's GPU split, inside its transaction: each physical GPU's cost shared among the rows that
ran on it by the cluster's GPU basis (``finops.gpus``), and what nobody used kept as one idle line
per GPU model.

The split is done as the hour is copied (``HourGpus``): ``RowBuilder.lines`` holds back the lines
of the hour's few GPU rows while the rest stream into ``COPY``, and at the stream's end they are
split and written, in the same ``COPY``, with their final figures. No row is read back or
rewritten, and the rows held are a GPU row's line each (memory bounded by the hour's GPU rows).

The source's own GPU figures are replaced: OpenCost bills requested whole GPUs times hours (a
HAMi ``gpucores=25`` pod pays a whole GPU, a pod using a tenth of its GPU pays all of it), and its
``__idle__`` line holds the GPUs nobody requested, whatever their model. After the split:

- each GPU row's ``gpu_cost_micros`` is its share, plus OpenCost's ``gpuCostAdjustment`` for the
  row (its reconciliation with the bill, which the node's ``gpuCost`` does not hold) scaled to the
  share, and its ``total_cost_micros`` moves by the difference; ``gpu_busy_hours`` is its measured
  use in GPU-hours; its ``gpu_hours`` are the GPU-hours it is billed for (its part of its GPU's
  hours);
- the source's idle rows lose their GPU cost (``gpu_cost_micros`` 0, the total lowered by it);
- a row ``__idle__/gpu:<model>`` per GPU model holds that model's idle GPU cost and GPU-hours.
  It is an idle row like ``__idle__``, so the chargeback policy's ``idle`` option distributes it
  or keeps it separate, as it does CPU and memory idle.

So the hour's GPU cost is exactly what its GPUs cost (with the rows' adjustments), to the micro:
every GPU's parts add up to it.

Where each GPU's cost comes from (the plan over them: ``finops.gpu_hours``):

- **OpenCost**: the hour's node assets (``gpuCost`` over ``gpuCount``, split evenly to the micro),
  with DCGM's UUIDs and models when ``GPU_FIGURES=prometheus`` (each container's GPU figures from
  Prometheus are then written over OpenCost's first);
- **Prometheus**: DCGM's inventory (``gpu_devices``), each GPU priced at the PriceBook's
  ``gpuHour`` for the minutes it was seen. GPUs no pod used are in the inventory, so their cost is
  idle, not lost.

When the hour cannot be split (its rows are unpriced; a GPU row's node has no GPU in the assets;
OpenCost sent no ``gpuAllocation``; no asset or inventory at all), the source's GPU figures are kept,
``allocation_hours.gpu_basis`` stays NULL and a warning names the reason: never a guess.
"""

from __future__ import annotations

import logging
import operator
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

from finops.allocations import IDLE, Container, EntryKind
from finops.errors import InvalidInput
from finops.gpu_hours import GpuOptions, GpuRow, HourGpu, Plan, from_devices, plan, scaled_adjustment
from finops.gpus import GpuDevice
from finops.hours import Hour
from finops.money import to_micros
from finops.rounding import largest_remainder
from infra.opencost import Allocation, Assets
from infra.postgres import Database
from infra.postgres.copy_text import NULL, unescaped
from infra.postgres.database import Connection
from usecases.collect_allocations.rows import COLUMNS, GPU_COLUMNS, gpu_text

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
    before the transaction and written over the rows' by ``HourGpus.rewrite``."""
    if not isinstance(source, GpuFigures):
        return None
    return source.gpu_figures(hour.start, hour.end, retry_until=retry_until)


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


class HourGpus:
    """The split of one hour's GPUs, done as its rows are copied (``RowBuilder.lines``): ``holds``
    picks the lines to hold back from the stream, ``rewrite`` splits them once the stream is over
    and gives them back with their GPU figures and shares (module docstring), then
    ``write_idle`` adds the GPU idle rows and ``ledger`` says how the hour was split."""

    def __init__(
        self,
        options: GpuOptions,
        *,
        hour: datetime,
        assets: Assets | None,
        devices: list[GpuDevice] | None,
        figures: Mapping[Container, Mapping[str, Any]] | None,
        rates: Mapping[str, Decimal] | None,
        priced: bool,
    ) -> None:
        self.options, self.hour, self.assets, self.devices = options, hour, assets, devices
        self.figures, self.rates, self.priced = figures, rates, priced
        self.plan: Plan | None = None  # None: the hour keeps its source's GPU figures

    def holds(self, a: Allocation, props: Any) -> bool:
        """Whether the split may rewrite this allocation: it has a ``gpuAllocation``, GPU cost,
        GPUs or GPU-hours or, with ``GPU_FIGURES=prometheus``, Prometheus has GPU figures for its
        container (OpenCost's MIG pods carry no GPU). ``rewrite`` picks its rows among them."""
        if any(_gpu_fields(a) if type(a) is not dict else map(a.get, _GPU_FIELDS)):
            return True
        figured = self.figures
        return figured is not None and (props.get("namespace"), props.get("pod"), props.get("container")) in figured

    def rewrite(self, held: list[str]) -> list[str]:
        """The held lines as written: each container's GPU figures from Prometheus over
        OpenCost's, and the hour's GPUs split among the GPU rows (a warning naming the reason when
        the hour cannot be split: its lines are then written as they came)."""
        rows = sorted((_Held(line) for line in held), key=lambda row: row.name)
        if self.figures:
            for row in rows:
                row.take_figures(self.figures)
        stored = [row for row in rows if row.on_gpu]
        assets, devices = self.assets, self.devices
        if stored or (assets and any(node.gpu_count for node in assets.nodes)) or devices:
            try:
                gpu_rows = [GpuRow.of(row.values) for row in stored]
                _check_splittable(gpu_rows, assets, devices, self.rates, self.priced)
                if assets is None:  # the Prometheus source: each GPU DCGM saw, at the PriceBook's rate
                    gpus = from_devices(devices or [], (self.rates or {})["gpuHour"])
                else:  # OpenCost: its node assets, with DCGM's UUIDs when GPU_FIGURES=prometheus
                    gpus = from_assets(assets, devices)
                self.plan = plan(gpu_rows, gpus, self.options)
            except InvalidInput as exc:
                log.warning(
                    f"the hour's GPUs are not split, their cost stays the source's: {exc.message}",
                    extra={"fields": {"hour": str(self.hour)}},
                )
        if (split := self.plan) is not None:
            for row in stored:
                share = split.owed[row.name]
                row.split(share + _adjustment(row.values, share), split.hours[row.name], split.busy[row.name])
            for row in rows:
                if row.idle_with_gpu:  # the source's idle loses its GPUs to the idle rows per model
                    row.split(0, Decimal(0), None)
        return [row.line() for row in rows]

    def write_idle(self, db: Database, conn: Connection, key: dict[str, Any], row_tail: Mapping[str, Any]) -> int:
        """After the hour's rows: one idle row per GPU model (none when the hour was not split)."""
        if self.plan is None:
            return 0
        models = sorted(self.plan.idle)
        return db.execute(
            "insert_gpu_idle",
            conn,
            **key,
            **row_tail,
            names=[f"{IDLE}/gpu:{model}" for model in models],
            models=models,
            micros=[self.plan.idle[model] for model in models],
            hours=[self.plan.idle_hours[model] for model in models],
        )

    @property
    def ledger(self) -> dict[str, str | None]:
        """``allocation_hours.gpu_basis``/``gpu_mig_by``: NULL when the hour was not split."""
        split = self.plan is not None
        return {
            "gpu_basis": self.options.basis.value if split else None,
            "gpu_mig_by": self.options.mig_by.value if split else None,
        }


_GPU_FIELDS = ("gpuAllocation", "gpuCost", "gpuCostAdjustment", "gpuCount", "gpuHours")
_gpu_fields = operator.attrgetter(*_GPU_FIELDS)  # a streamed record's, in one call
WORKLOAD, IDLE_KIND = EntryKind.WORKLOAD.value, EntryKind.IDLE.value
_AT = {column: index for index, column in enumerate(COLUMNS)}
_READ = (  # what the split reads of a held row, by type
    ("text", ("namespace", "name", "entry_kind", "pod", "container", "node", "gpu_model", "gpu_uuid",
              "gpu_sharing", "gpu_profile")),
    ("numeric", ("minutes", "gpu_count", "gpu_hours", "gpu_request_avg", "gpu_usage_avg")),
    ("bigint", ("gpu_cost_micros", "gpu_adjustment_micros", "total_cost_micros")),
    ("boolean", ("gpu_shared",)),
)  # fmt: skip


class _Held:
    """A held row: its line's fields (``COPY`` text, as ``RowBuilder`` validated them), what the
    split reads of them (``values``, typed as a stored row's), and the fields it rewrites."""

    def __init__(self, line: str) -> None:
        self.fields = line[:-1].split("\t")
        self.values: dict[str, Any] = {}
        self._read()

    def _read(self) -> None:
        fields, values = self.fields, self.values
        for kind, columns in _READ:
            for column in columns:
                text = fields[_AT[column]]
                values[column] = None if text == NULL else _typed(kind, text)
        self.name: str = values["name"]

    @property
    def on_gpu(self) -> bool:
        """A workload the split prices: it has GPU figures, GPU cost or GPUs."""
        v = self.values
        return v["entry_kind"] == WORKLOAD and bool(
            v["gpu_request_avg"] is not None or v["gpu_usage_avg"] is not None or v["gpu_uuid"] is not None
            or v["gpu_cost_micros"] or v["gpu_count"]
        )  # fmt: skip

    @property
    def idle_with_gpu(self) -> bool:
        """The source's idle row holding GPU cost or GPU-hours (the split's idle rows replace them)."""
        v = self.values
        return v["entry_kind"] == IDLE_KIND and bool(v["gpu_cost_micros"] or v["gpu_hours"])

    def take_figures(self, figures: Mapping[Container, Mapping[str, Any]]) -> None:
        """A workload's GPU figures from Prometheus replace OpenCost's (kept when it has none)."""
        v = self.values
        found = figures.get((v["namespace"], v["pod"], v["container"]))
        if found is None or v["entry_kind"] != WORKLOAD:
            return
        first = _AT[GPU_COLUMNS[0]]
        self.fields[first : first + len(GPU_COLUMNS)] = gpu_text(found, self.name).split("\t")
        self._read()

    def split(self, micros: int, hours: Decimal, busy: Decimal | None) -> None:
        """Its GPU cost, GPU-hours and measured use by the split; its total moves by the difference
        (a source idle row also loses its GPUs)."""
        fields, v = self.fields, self.values
        if v["total_cost_micros"] is not None:
            fields[_AT["total_cost_micros"]] = str(v["total_cost_micros"] - (v["gpu_cost_micros"] or 0) + micros)
        fields[_AT["gpu_cost_micros"]] = str(micros)
        fields[_AT["gpu_hours"]] = str(hours)
        if v["entry_kind"] == IDLE_KIND:
            fields[_AT["gpu_count"]] = "0"
        fields[_AT["gpu_busy_hours"]] = NULL if busy is None else str(busy)

    def line(self) -> str:
        return "\t".join(self.fields) + "\n"


def _typed(kind: str, text: str) -> Any:
    """A ``COPY`` text field as the value PostgreSQL stores for it."""
    if kind == "text":
        return unescaped(text)
    if kind == "bigint":
        return int(text)
    if kind == "boolean":
        return text == "t"
    return Decimal(text)


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
