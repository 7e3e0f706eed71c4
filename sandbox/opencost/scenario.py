"""The scenario file: one simulated cluster, its prices, and what ran on it.

Validation is strict (unknown keys are errors) and every error names the bad key by its path, e.g.
``workloads[2].containers[0].request.cpu``.

Format (YAML; camelCase keys; prices are decimal strings or numbers)::

    cluster: demo-eu
    retention: 15d              # optional: no data older than now - retention (Prometheus retention)
    dataUntilNow: true          # default: no data after "now" (OpenCost has no future data)
    nodes:                      # capacity and hourly prices; prices default to OpenCost's default.json
      - {name: node-a, cpuCores: 8, ramGiB: 32, gpus: 0, cpuHourly: "0.031611",
         ramGiBHourly: "0.004237", gpuHourly: "0.95", providerID: i-0abc,
         gpuModel: NVIDIA T4, gpuSharing: whole}   # or time-sliced: pods share GPU 0
    namespaces:
      - {name: shop, labels: {team: checkout, cost-center: cc-1234}}
    storage: {gbHourly: "0.00005479452"}      # PV price per GiB-hour
    network: {egressPerGiB: "0.01"}           # price of transferred (egress) bytes
    workloads:
      - namespace: shop
        kind: Deployment        # Deployment|Rollout|StatefulSet|DaemonSet|ReplicaSet|Job|CronJob|Pod
        apiVersion: apps/v1     # optional; required (argoproj.io/v1alpha1) for a Rollout
        name: web
        replicas: 3             # ignored for DaemonSet (one pod per node)
        node: node-a            # optional; default round-robin over nodes
        start: "-6h"            # optional; absent = has always existed (see times below)
        end: null
        labels: {tier: frontend}                  # optional pod labels (app: <name> is always set)
        schedule: {every: 1h, runFor: 15m, offset: 5m}   # CronJob only
        containers:
          - name: app
            request: {cpu: 0.5, ramGiB: 1, gpu: 0}
            limit: {ramGiB: 2}  # optional: pod spec limits (sandbox.cluster); not billed
            usage: {cpu: [0.2, 0.3, 0.7], ramGiB: 0.8, gpu: 0.3}  # cpu/ram: number, or list by hour-of-day % len
        pvs: [{name: pvc-web-data, sizeGiB: 20}]
        loadBalancers: [{name: web-lb, hourly: "0.025"}]
        networkBytesPerHour: {transfer: 1000000, receive: 2000000}   # whole workload, split over pods
        costAdjustment: {cpu: -0.1, pv: 0.05}     # optional: fraction of each cost added as its *CostAdjustment
    unmountedPVs:
      - {namespace: shop, name: pvc-orphan, sizeGiB: 5}   # namespace optional
      - {name: pv-released, sizeGiB: 50}                  # no namespace -> __unmounted__ everywhere
    carbon:                     # optional: serve /assets/carbon (OpenCost's CARBON_ESTIMATES_ENABLED)
      nodes: {node-a: "0.00012"}              # metric tonnes CO2e per hour; unlisted nodes 0
      diskHourly: "0.0000032"                 # per disk
      omit: [node-b]                          # optional: nodes or disks (by name) the answer leaves out

Times (``start``/``end`` of workloads and unmounted PVs) are either absolute (RFC3339 string or a
YAML timestamp; naive means UTC) or relative to *query time*: ``now``, ``-6h``, ``+30m``, ``-2d``,
``-1w``. Relative times count from now truncated to the hour, so answers are stable within an hour
and a demo scenario always has data "in the last 48 hours" whenever it is run.

``costAdjustment`` stands in for OpenCost's reconciliation with the cloud bill: each key (``cpu``,
``gpu``, ``ram``, ``pv``, ``network``, ``loadBalancer``; a fraction between -1 and 1) makes every
allocation of the workload report ``<resource>CostAdjustment = fraction x <resource>Cost``, a credit
when negative. As in OpenCost, ``totalCost`` includes the adjustments and ``*Cost`` does not.

``kind: Rollout`` is an Argo Rollout and, being a custom resource, must also say
``apiVersion: argoproj.io/v1alpha1`` (other kinds may state their apiVersion too). Its pods and
ReplicaSet are named like a Deployment's, and OpenCost reports them as ``controllerKind: rollout``
with the ReplicaSet as controller (see ``sandbox.opencost.naming``). ``sandbox.cluster`` turns a
scenario into Kubernetes objects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

Kind = Literal["Deployment", "Rollout", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"]
API_VERSIONS: dict[str, str] = {
    "Deployment": "apps/v1",
    "Rollout": "argoproj.io/v1alpha1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "Pod": "v1",
}

_DURATION_RE = re.compile(r"^(\d+)(s|m|h|d|w)$")
_RELATIVE_RE = re.compile(r"^([+-])(\d+)(m|h|d|w)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class ScenarioError(ValueError):
    """A scenario file is missing, unreadable or invalid; the message names each bad key."""


@dataclass(frozen=True, slots=True)
class TimeSpec:
    """A point in time: absolute epoch seconds, or an offset from the query-time anchor."""

    absolute: int | None = None
    relative: int | None = None

    @property
    def is_relative(self) -> bool:
        return self.relative is not None

    def resolve(self, anchor: int) -> int:
        """Epoch seconds, given ``anchor`` = query-time now truncated to the hour."""
        if self.absolute is not None:
            return self.absolute
        return anchor + (self.relative or 0)


def parse_duration_seconds(value: object) -> int:
    """``30m``/``1h``/``2d``/``1w`` (or ``45s``) as seconds; used for scenario durations."""
    text = str(value).strip()
    match = _DURATION_RE.match(text)
    if not match or int(match.group(1)) <= 0:
        raise ValueError(f"expected a positive duration like 30m, 1h, 2d or 1w, got {value!r}")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _offset_seconds(value: object) -> int:
    return 0 if str(value).strip() in ("0", "0s", "0m") else parse_duration_seconds(value)


def _time_spec(value: object) -> TimeSpec | None:
    if value is None or isinstance(value, TimeSpec):
        return value
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return TimeSpec(absolute=int(moment.timestamp()))
    if isinstance(value, date):
        return TimeSpec(absolute=int(datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()))
    if isinstance(value, str):
        text = value.strip()
        if text == "now":
            return TimeSpec(relative=0)
        match = _RELATIVE_RE.match(text)
        if match:
            sign = -1 if match.group(1) == "-" else 1
            return TimeSpec(relative=sign * int(match.group(2)) * _UNIT_SECONDS[match.group(3)])
        try:
            return _time_spec(datetime.fromisoformat(text))
        except ValueError:
            pass
    raise ValueError(f"expected an RFC3339 time, 'now' or a relative time like -6h, got {value!r}")


def _price(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise ValueError(f"expected a price as a decimal string or number, got {value!r}")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"expected a price as a decimal string or number, got {value!r}") from None
    if not number.is_finite() or number < 0:
        raise ValueError(f"price must be a finite number >= 0, got {value!r}")
    return float(number)


def _profile(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 0:
        raise ValueError("usage profile list must not be empty")
    return value


Price = Annotated[float, BeforeValidator(_price)]
When = Annotated[TimeSpec | None, BeforeValidator(_time_spec)]
Profile = Annotated[tuple[Annotated[float, Field(ge=0, allow_inf_nan=False)], ...], BeforeValidator(_profile)]
Quantity = Annotated[float, Field(ge=0, allow_inf_nan=False)]


def _alias(name: str) -> str:
    return to_camel(name).replace("Gib", "GiB").replace("Pvs", "PVs").replace("Id", "ID")


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=_alias, populate_by_name=True, arbitrary_types_allowed=True
    )


class Node(_Model):
    name: str = Field(min_length=1)
    cpu_cores: Quantity
    ram_gib: Quantity
    gpus: Quantity = 0
    cpu_hourly: Price = 0.031611
    ram_gib_hourly: Price = 0.004237
    gpu_hourly: Price = 0.95
    provider_id: str | None = None
    gpu_model: str = "NVIDIA A100-SXM4-80GB"  # gpuAllocation.gpuModel of the pods on it
    gpu_sharing: Literal["whole", "time-sliced"] = "whole"  # time-sliced: every pod on GPU 0, isGPUShared


class Namespace(_Model):
    name: str = Field(min_length=1)
    labels: dict[str, str] = Field(default_factory=dict)


class Storage(_Model):
    gb_hourly: Price = 0.00005479452


class Network(_Model):
    egress_per_gib: Price = 0.01


class Carbon(_Model):
    """OpenCost's carbon estimates (its ``CARBON_ESTIMATES_ENABLED``): metric tonnes CO2e per hour
    per node (by name; a node not listed has 0, as OpenCost's for an unknown provider) and per disk."""

    nodes: dict[str, Price] = Field(default_factory=dict)
    disk_hourly: Price = 0
    # Nodes and disks by name whose keys the answer leaves out, as an estimate computed from another
    # fetch of the assets than /assets' (a node added between the two calls) would.
    omit: list[str] = Field(default_factory=list)


class Request(_Model):
    cpu: Quantity = 0
    ram_gib: Quantity = 0
    gpu: Quantity = 0


class Usage(_Model):
    cpu: Profile = (0.0,)
    ram_gib: Profile = (0.0,)
    gpu: Quantity = 0  # DCGM's engine activity: GPUs busy (a fraction of one on a shared GPU)


class Container(_Model):
    name: str = Field(min_length=1)
    request: Request = Field(default_factory=Request)
    limit: Request = Field(default_factory=Request)  # only on the Kubernetes objects; OpenCost ignores limits
    usage: Usage = Field(default_factory=Usage)


class Volume(_Model):
    name: str = Field(min_length=1)
    size_gib: Quantity


class LoadBalancer(_Model):
    name: str = Field(min_length=1)
    hourly: Price = 0.025


Fraction = Annotated[float, Field(ge=-1, le=1, allow_inf_nan=False)]


class CostAdjustment(_Model):
    """Per resource, the fraction of its cost reported as OpenCost's ``*CostAdjustment``."""

    cpu: Fraction = 0
    gpu: Fraction = 0
    ram: Fraction = 0
    pv: Fraction = 0
    network: Fraction = 0
    load_balancer: Fraction = 0


class NetworkBytes(_Model):
    transfer: Quantity = 0
    receive: Quantity = 0


class Schedule(_Model):
    every: Annotated[int, BeforeValidator(parse_duration_seconds)] = 3600
    run_for: Annotated[int, BeforeValidator(parse_duration_seconds)] = 600
    offset: Annotated[int, BeforeValidator(_offset_seconds)] = 0

    @model_validator(mode="after")
    def _fits(self) -> Schedule:
        if self.run_for > self.every:
            raise ValueError("schedule.runFor must not exceed schedule.every")
        return self


class Workload(_Model):
    namespace: str
    kind: Kind
    api_version: str | None = None
    name: str = Field(min_length=1)
    replicas: int = Field(default=1, ge=0)
    node: str | None = None
    start: When = None
    end: When = None
    labels: dict[str, str] = Field(default_factory=dict)
    schedule: Schedule | None = None
    containers: list[Container] = Field(min_length=1)
    pvs: list[Volume] = Field(default_factory=list)
    load_balancers: list[LoadBalancer] = Field(default_factory=list)
    network_bytes_per_hour: NetworkBytes | None = None
    cost_adjustment: CostAdjustment | None = None


class UnmountedPV(_Model):
    name: str = Field(min_length=1)
    namespace: str | None = None
    size_gib: Quantity
    start: When = None
    end: When = None


class Scenario(_Model):
    """A validated scenario. Build it with :func:`load_scenario`, :func:`parse_scenario` or ``synthetic``."""

    cluster: str = Field(min_length=1)
    retention: Annotated[int, BeforeValidator(parse_duration_seconds)] | None = None
    data_until_now: bool = True
    nodes: list[Node] = Field(min_length=1)
    namespaces: list[Namespace] = Field(default_factory=list)
    storage: Storage = Field(default_factory=Storage)
    network: Network = Field(default_factory=Network)
    workloads: list[Workload] = Field(default_factory=list)
    unmounted_pvs: list[UnmountedPV] = Field(default_factory=list)
    carbon: Carbon | None = None  # absent: /assets/carbon answers 404, as OpenCost without carbon estimates

    @property
    def has_relative_times(self) -> bool:
        times = [t for w in self.workloads for t in (w.start, w.end)]
        times += [t for pv in self.unmounted_pvs for t in (pv.start, pv.end)]
        return any(t is not None and t.is_relative for t in times)

    @model_validator(mode="after")
    def _cross_references(self) -> Scenario:
        problems: list[str] = []
        nodes = _unique("nodes", [n.name for n in self.nodes], problems)
        namespaces = _unique("namespaces", [n.name for n in self.namespaces], problems)
        _unique("workloads", [f"{w.namespace}/{w.name}" for w in self.workloads], problems)
        pv_names = [v.name for w in self.workloads for v in w.pvs] + [v.name for v in self.unmounted_pvs]
        _unique("PV names", pv_names, problems)
        for name in self.carbon.nodes if self.carbon else ():
            if name not in nodes:
                problems.append(f"carbon.nodes.{name}: unknown node {name!r}")
        for i, w in enumerate(self.workloads):
            where = f"workloads[{i}]"
            if w.namespace not in namespaces:
                problems.append(f"{where}.namespace: unknown namespace {w.namespace!r} (declare it under namespaces)")
            if w.node is not None and w.node not in nodes:
                problems.append(f"{where}.node: unknown node {w.node!r}")
            if w.kind == "Rollout" and w.api_version is None:
                rollout = API_VERSIONS["Rollout"]
                problems.append(f"{where}.kind: Rollout is a custom resource; declare apiVersion: {rollout}")
            elif w.api_version is not None and w.api_version != API_VERSIONS[w.kind]:
                problems.append(f"{where}.apiVersion: a {w.kind} is {API_VERSIONS[w.kind]}, not {w.api_version!r}")
            if w.schedule is not None and w.kind != "CronJob":
                problems.append(f"{where}.schedule: only a CronJob has a schedule (kind is {w.kind})")
            _unique(f"{where}.containers", [c.name for c in w.containers], problems)
            _unique(f"{where}.loadBalancers", [lb.name for lb in w.load_balancers], problems)
            _check_span(where, w.start, w.end, problems)
        for i, pv in enumerate(self.unmounted_pvs):
            if pv.namespace is not None and pv.namespace not in namespaces:
                problems.append(f"unmountedPVs[{i}].namespace: unknown namespace {pv.namespace!r}")
            _check_span(f"unmountedPVs[{i}]", pv.start, pv.end, problems)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _unique(what: str, names: list[str], problems: list[str]) -> set[str]:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(f"{what}: duplicate name {name!r}")
        seen.add(name)
    return seen


def _check_span(where: str, start: TimeSpec | None, end: TimeSpec | None, problems: list[str]) -> None:
    if start is None or end is None or start.is_relative != end.is_relative:
        return
    if end.resolve(0) <= start.resolve(0):
        problems.append(f"{where}.end: must be after start")


def _format_errors(error: ValidationError, source: str) -> str:
    lines = []
    for item in error.errors():
        path = ""
        for part in item["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        message = str(item["msg"]).removeprefix("Value error, ")
        lines.append(f"{path}: {message}" if path else message)
    return f"{source}: invalid scenario:\n  " + "\n  ".join(lines)


def parse_scenario(data: Mapping[str, Any], *, source: str = "scenario") -> Scenario:
    """Validate an already-parsed scenario document; raises :class:`ScenarioError`."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: the scenario must be a mapping, got {type(data).__name__}")
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as error:
        raise ScenarioError(_format_errors(error, source)) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file; raises :class:`ScenarioError` naming each bad key."""
    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise ScenarioError(f"{file}: cannot read scenario: {error}") from None
    except yaml.YAMLError as error:
        raise ScenarioError(f"{file}: not valid YAML: {error}") from None
    return parse_scenario(data, source=str(file))
