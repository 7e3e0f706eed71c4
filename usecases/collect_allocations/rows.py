"""OpenCost-shaped allocations to ``provider_allocations`` rows (the column order of ``COLUMNS``).

The allocations come from OpenCost or from the Prometheus source (``prometheus_source``), which
answers in OpenCost's shape; ``source`` records which one on every row."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from finops.allocations import IDLE, UNALLOCATED, UNMOUNTED, EntryKind, entry_kind
from finops.errors import InvalidInput, OpenCostUnavailable
from finops.labels import owner_label
from finops.money import MAX_MICROS, cost_micros
from infra.opencost import Allocation
from infra.opencost.stream import gpu_values, quantities_text
from infra.postgres.copy_text import NULL, escaped

GPU_COLUMNS = (
    "gpu_request_avg",
    "gpu_usage_avg",
    "gpu_shared",
    "gpu_device",
    "gpu_model",
    "gpu_uuid",
    "gpu_sharing",
    "gpu_profile",
)
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
    *GPU_COLUMNS,
    "gpu_adjustment_micros",  # the GPU split keeps it on the row (usecases.collect_allocations.gpus)
    "gpu_busy_hours",  # set by the GPU split; NULL as the source sends it
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
        self.owner_key = owner_label_key
        self.cost_center_key = cost_center_label_key
        self._tail = (pricebook_id, currency, finalized, collected_at, source)  # the row's last columns
        self._owners: dict[str, tuple[str | None, str | None]] = {}
        self._unowned: set[str] = set()
        # lines(): the text of the columns fixed for the hour, and the tabs and backslashes a line has
        self._prefix = f"{escaped(self.cluster)}\t"
        self._middle = f"\t{escaped(self.aggregation)}\t{self.hour}\t"
        self._suffix = "\t".join(
            (
                NULL if pricebook_id is None else str(pricebook_id),
                NULL if currency is None else escaped(currency),
                "t" if finalized else "f",
                str(collected_at),
                escaped(source),
            )
        )
        self._times: dict[tuple[datetime | None, datetime | None], str] = {}
        self._tabs = len(COLUMNS) - 1
        self._slashes = (self._prefix + self._middle + self._suffix + _UNSPLIT).count("\\")

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

    def stream(self, entries: Iterable[tuple[str, Allocation]]) -> Iterator[tuple[Any, ...]]:
        """``rows`` in one pass over ``(key, allocation)`` pairs (the models' dicts) as they are
        parsed, holding none: a row of a namespace whose labels have not arrived yet is written
        without an owner, and ``late_owners()`` then gives the owners those rows take
        (``fill_hour_owners``), so the stored hour equals ``rows``' (the first labelled entry of a
        namespace decides). The collector writes ``lines``; these rows, adapted by psycopg, are
        the reference its tests compare the lines with."""
        row = self._row
        for name, a, _, _, owners in self._walk(entries):
            yield row(name, a, owners)

    def lines(
        self,
        entries: Iterable[tuple[str, Allocation]],
        hold: Hold | None = None,
        then: Callable[[list[str]], Iterable[str]] | None = None,
    ) -> Iterator[str]:
        """``stream``'s rows as lines of ``COPY``'s text format (``infra.postgres.copy_text``),
        storing the same values (``tests/integration/test_allocation_copy_text.py``) without
        psycopg's per-value adaptation: a streamed quantity is its JSON text, a cost's micros and
        a dict's ``Decimal`` their ``str`` (PostgreSQL parses a number's text to the same numeric,
        scale included); the columns fixed for the hour are formatted once. A quantity that is
        not a number, or a number that is not finite (``"NaN"``, ``"Infinity"`` sent as strings),
        refuses the hour with ``OpenCostUnavailable`` naming the allocation's field.

        The lines of the allocations ``hold`` picks are held back, and once every other line is
        yielded, ``then`` gives the lines written in their place (the GPU split rewrites the
        hour's GPU rows, which it can only do once it has them all)."""
        line = self._line
        held: list[str] = []
        for name, a, props, namespace, owners in self._walk(entries):
            if hold is not None and hold(a, props):
                held.append(line(name, a, props, namespace, owners))
            else:
                yield line(name, a, props, namespace, owners)
        yield from held if then is None else then(held)

    def _walk(self, entries: Iterable[tuple[str, Allocation]]) -> Iterator[tuple[str, Allocation, Any, Any, OwnerMap]]:
        """``(name, allocation, its properties, its namespace, the owners so far)`` of each entry."""
        owners: dict[str, tuple[str | None, str | None]] = {}
        self._owners, self._unowned = owners, set()
        for key, a in entries:
            props = a.get("properties") or {}
            namespace = props.get("namespace")
            if namespace and namespace not in owners:
                labels = props.get("namespaceLabels")
                if labels:
                    owners[namespace] = (owner_label(labels, self.owner_key), owner_label(labels, self.cost_center_key))
                elif namespace not in SENTINELS:
                    self._unowned.add(namespace)
            yield a.get("name") or key, a, props, namespace, owners

    def _line(self, name: str, a: Allocation, props: Any, namespace: str | None, owners: OwnerMap) -> str:
        """``_row`` as a text line. Its text values are checked all at once on the joined line
        (as many tabs as columns, as many backslashes as NULLs, no line break); a value holding
        any of them is escaped, on that rare row only."""
        namespace = namespace or ""
        if namespace in SENTINELS:
            namespace = ""
        team, cost_center = owners.get(namespace, (None, None))
        places: tuple[Any, ...]
        c: tuple[Any, ...]
        if isinstance(a, dict):
            places = tuple(props.get(f) for f in _PLACES)
            c = tuple(a.get(f) for f in _COSTS)
            numbers = "\t".join(map(str, (a.get(f) for f in _QUANTITIES)))
            if "a" in numbers or "I" in numbers:  # NaN, sNaN, Infinity: never in a finite number's str
                raise OpenCostUnavailable(_not_finite(name, a))
            numbers = numbers.replace("None", NULL)
        else:  # a streamed record: its quantities are their JSON text (stream.Quantity)
            places, c = _places(props), _costs(a)
            # An hour's allocations share a few (start, end) pairs: formatting a datetime costs
            # 1 us, a lookup 50 ns. Equal datetimes are the same instant, which is what is stored.
            times = self._times.get(key := (a.start, a.end))
            if times is None:
                if len(self._times) > _TIMES_KEPT:
                    self._times.clear()
                start, end = key
                times = self._times[key] = f"{NULL if start is None else start}\t{NULL if end is None else end}\t"
            numbers = times + quantities_text(a, name)
        try:  # round() of a NaN cost raises ValueError, of an infinite one OverflowError; sNaN InvalidOperation
            micros = "\t".join(
                map(
                    str,
                    (
                        _micros(c[0], c[1]),
                        _micros(c[2], c[3]),
                        _micros(c[4], c[5]),
                        _micros(c[6], c[7]),
                        _micros(c[8], c[9]),
                        _micros(c[10], c[11]),
                        _micros(c[12]),
                        _micros(c[13]),
                        _micros(c[14]),
                    ),
                )
            )
            gpu_adjustment = _micros(c[3])
        except (ValueError, ArithmeticError):
            raise OpenCostUnavailable(_not_finite(name, a)) from None
        except InvalidInput:  # cost_micros: beyond what a bigint column holds
            raise OpenCostUnavailable(_too_large(name, a)) from None
        if "None" in micros:
            micros = micros.replace("None", NULL)
        numbers = f"{numbers}\t{micros}"
        nulls = numbers.count("\\")
        kind = entry_kind(name).value if "__" in name else _WORKLOAD
        gpu = gpu_text(a.get("gpuAllocation"), name)
        nulls += gpu.count("\\")
        adjustment = NULL if gpu_adjustment is None else str(gpu_adjustment)
        nulls += adjustment == NULL
        texts = (*places, team, cost_center)
        nulls += texts.count(None)
        p = [NULL if v is None else v for v in texts]
        line = (
            f"{self._prefix}{namespace}\t{name}{self._middle}{kind}\t{p[0]}\t{p[1]}\t{p[2]}\t{p[3]}\t{p[4]}"
            f"\t{numbers}\t{p[5]}\t{p[6]}\t{self._suffix}\t{gpu}\t{adjustment}{_UNSPLIT}\n"
        )
        if (
            line.count("\t") == self._tabs
            and line.count("\\") == self._slashes + nulls
            and line.find("\n") == len(line) - 1
            and "\r" not in line
        ):
            return line
        p = [NULL if v is None else escaped(v) for v in texts]  # a text value to escape
        return (
            f"{self._prefix}{escaped(namespace)}\t{escaped(name)}{self._middle}{kind}\t{p[0]}\t{p[1]}\t{p[2]}"
            f"\t{p[3]}\t{p[4]}\t{numbers}\t{p[5]}\t{p[6]}\t{self._suffix}\t{gpu}\t{adjustment}{_UNSPLIT}\n"
        )

    def late_owners(self) -> dict[str, tuple[str | None, str | None]]:
        """After ``stream``: the owners of namespaces that had rows written before their labels."""
        owners = {ns: self._owners.get(ns, (None, None)) for ns in sorted(self._unowned)}
        return {ns: owner for ns, owner in owners.items() if owner != (None, None)}

    def _row(self, name: str, a: Allocation, owners: Mapping[str, tuple[str | None, str | None]]) -> tuple[Any, ...]:
        props = a.get("properties") or {}
        namespace = props.get("namespace") or ""
        if namespace in SENTINELS:
            namespace = ""
        team, cost_center = owners.get(namespace, (None, None))
        places: tuple[Any, ...] = tuple(props.get(f) for f in _PLACES)
        quantities: tuple[Any, ...] = tuple(a.get(f) for f in _QUANTITIES)
        costs: tuple[Any, ...] = tuple(a.get(f) for f in _COSTS)
        return (
            self.cluster,
            namespace,
            name,
            self.aggregation,
            self.hour,
            # Every special entry's key holds "__" (__idle__, __unmounted__): most rows skip the split.
            entry_kind(name).value if "__" in name else _WORKLOAD,
            *places,
            *quantities,
            _micros(costs[0], costs[1]),  # cpu
            _micros(costs[2], costs[3]),  # gpu
            _micros(costs[4], costs[5]),  # ram
            _micros(costs[6], costs[7]),  # pv
            _micros(costs[8], costs[9]),  # network
            _micros(costs[10], costs[11]),  # load balancers
            _micros(costs[12]),  # shared
            _micros(costs[13]),  # external
            _micros(costs[14]),  # total
            team,
            cost_center,
            *self._tail,
            *gpu_values(a.get("gpuAllocation"), name),
            _micros(costs[3]),  # the GPU's cost adjustment, kept by the split
            None,  # gpu_busy_hours
        )


# The allocation's fields in the order of their columns (controller_kind .. node, data_start ..
# network_receive_bytes, then each cost with its adjustment: *_cost_micros).
_PLACES = ("controllerKind", "controller", "pod", "container", "node")
_QUANTITIES = (
    "start",
    "end",
    "minutes",
    "cpuCores",
    "cpuCoreRequestAverage",
    "cpuCoreUsageAverage",
    "cpuCoreHours",
    "ramBytes",
    "ramByteRequestAverage",
    "ramByteUsageAverage",
    "ramByteHours",
    "gpuCount",
    "gpuHours",
    "pvBytes",
    "pvByteHours",
    "networkTransferBytes",
    "networkReceiveBytes",
)
_COSTS = (
    "cpuCost",
    "cpuCostAdjustment",
    "gpuCost",
    "gpuCostAdjustment",
    "ramCost",
    "ramCostAdjustment",
    "pvCost",
    "pvCostAdjustment",
    "networkCost",
    "networkCostAdjustment",
    "loadBalancerCost",
    "loadBalancerCostAdjustment",
    "sharedCost",
    "externalCost",
    "totalCost",
)
_WORKLOAD = EntryKind.WORKLOAD.value
_places, _costs = operator.attrgetter(*_PLACES), operator.attrgetter(*_COSTS)


OwnerMap = Mapping[str, tuple[str | None, str | None]]
Hold = Callable[[Allocation, Any], bool]  # (allocation, its properties): keep its line back
_TIMES_KEPT = 4096  # (start, end) texts remembered by lines()


_NO_GPU_TEXT = "\t".join([NULL] * len(GPU_COLUMNS))
_UNSPLIT = f"\t{NULL}"  # gpu_busy_hours


def gpu_text(gpu: Any, name: str) -> str:
    """``gpu_values`` in ``COPY``'s text format, text escaped."""
    if not gpu:
        return _NO_GPU_TEXT
    values = gpu_values(gpu, name)
    return "\t".join(
        NULL
        if v is None
        else ("t" if v else "f")
        if isinstance(v, bool)
        else escaped(v)
        if isinstance(v, str)
        else str(v)
        for v in values
    )


def _not_finite(name: str, a: Allocation) -> str:
    """The refusal of a number that is not finite, naming the first such field."""
    for field in (*_QUANTITIES[2:], *_COSTS):
        value = a.get(field)
        if isinstance(value, Decimal) and not value.is_finite():
            return f"OpenCost answered /allocation with {name}.{field}: {value}, not a finite number"
    return f"OpenCost answered /allocation with {name}: a number that is not finite"


def _too_large(name: str, a: Allocation) -> str:
    """The refusal of a cost too large to store, naming the first such field."""
    for field in _COSTS:
        value = a.get(field)
        if isinstance(value, Decimal) and abs(round(value.scaleb(6))) > MAX_MICROS:
            return f"OpenCost answered /allocation with {name}.{field}: {value}, too large to store in micros"
    return f"OpenCost answered /allocation with {name}: a cost too large to store in micros"


def _micros(amount: Decimal | None, adjustment: Decimal | None = None) -> int | None:
    """``cost_micros``, with its most frequent case first: nothing spent (no GPU, network, load
    balancer...), about half of an allocation's costs; then ``cost_micros``' own arithmetic
    inlined for Decimals (a hot path: 9 calls a row), the function itself for anything else and
    to refuse an amount too large."""
    if not amount and not adjustment:
        return None if amount is None else 0
    if amount is None:
        return None
    total = amount + adjustment if adjustment else amount
    if type(total) is not Decimal:
        return cost_micros(amount, adjustment)
    micros = round(total.scaleb(6))
    return micros if -MAX_MICROS <= micros <= MAX_MICROS else cost_micros(amount, adjustment)
