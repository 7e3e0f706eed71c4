"""An hour's emissions (``emission_hours``, ``asset_emissions``, ``allocation_emissions``), stored
with its allocations and assets.

Why in the hour's transaction: a row's grams are its share of its node's by cost, so they are
computed from the rows just written and replaced with them, or not at all; a replay writes the
same grams. The estimates are fetched with the assets, before the transaction (``with_carbon``,
called by ``fetch_assets``), and split inside it (``store_emissions``, one call after
``store_assets``), from the stored rows (owners filled in) and the fetched assets.

Decisions:

* **OpenCost without carbon estimates** (404 on ``/assets/carbon``: ``CARBON_ESTIMATES_ENABLED``
  off): the hour is stored without emissions (no ``emission_hours`` row, so reports say the hour
  is not covered, never 0 g), and a warning is logged once per OpenCost URL and process.
* **The carbon call fails** otherwise: the hour fails like an OpenCost outage (left as it was,
  retried by the next run): stored without emissions, a final hour would keep the hole for good.
* **Its answer lacks a node's or disk's key** of ``/assets``: the hour is stored with its rows and
  costs but without emissions (no ``emission_hours`` row: reports name it as not covered, never a
  total short of that asset), and a warning names the hour and the missing keys. Failing it would
  fail it again on every run (OpenCost answers the same), stalling the cost ledger behind an
  optional feature; a final hour keeps the hole, named, as a node no factor matches does (below).
* **No assets** (an OpenCost without the assets API): no emissions.
* **The Prometheus source** has no assets; with the operator's emission table
  (``CARBON_EMISSION_TABLE``, ``finops.carbon.EmissionTable``) each node of the hour
  (``node_hours``: its minutes, labels and capacity's cost, fetched with the assets by
  ``fetch_table_emissions``) emits the grams of the first factor matching its labels for its
  minutes, rounded once; the factor's source and region (the table's, else the node's region label)
  are stored with it. Its grams are split as OpenCost's are (below), the node's cost being its
  allocatable capacity's as the source prices it. There are no disks' grams (the table has nodes
  only). Without the table: no emissions.
* **A node no factor matches** (an instance type missing from the table, labels kube-state-metrics
  does not export): the hour is stored without emissions (reports name it as not covered, never a
  total short of that node) and a warning names each such node with its instance type; adding a
  line to the table covers the hours collected from then on.
* **The table is for the Prometheus source only**: the settings refuse it with
  ``ALLOCATION_SOURCE=opencost``, whose own estimates (``/assets/carbon``) are its emissions. One
  cluster's hours are never a mix of two factor sources, and a 404 never switches to the table.
* **Which rows a node's grams go to**: its workload and unmounted rows whose ``node`` is the node,
  by CPU + RAM + GPU cost, and its idle (``finops.carbon.node_shares``); OpenCost's own ``__idle__``
  row takes nothing (each node's idle line stands for it). The disks' grams go to every non-idle
  row by volume cost, the rest to an idle line without a node.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from finops.carbon import INSTANCE_TYPE_LABELS, EmissionTable, apportion, node_labels, node_shares, tonnes_to_grams
from finops.errors import InvalidInput, OpenCostUnavailable
from finops.hours import Hour
from finops.labels import sanitize_label_key
from finops.money import to_micros
from infra.opencost import Assets, EndpointMissing
from infra.postgres import Database
from infra.postgres.database import Connection
from infra.prometheus.nodes import NodeHour
from usecases.collect_allocations.optional_apis import OptionalApi

log = logging.getLogger(__name__)

OPENCOST_FACTORS = "opencost"  # OpenCost's Cloud Carbon Footprint coefficients
IDLE_NAME = "__idle__"
ASSET_COLUMNS = ("cluster", "aggregation", "hour", "kind", "name", "grams", "factor_source", "region")
ROW_COLUMNS = (
    "cluster",
    "aggregation",
    "hour",
    "namespace",
    "name",
    "node",
    "entry_kind",
    "controller_kind",
    "controller",
    "pod",
    "team",
    "cost_center",
    "grams",
)

_NO_CARBON = OptionalApi(
    "OpenCost has no carbon estimates (CARBON_ESTIMATES_ENABLED): hours are stored without emissions"
)


@runtime_checkable
class CarbonSource(Protocol):
    """A source that also answers OpenCost's carbon estimates (``OpenCostClient``)."""

    base_url: str

    def carbon(self, start: datetime, end: datetime, *, retry_until: float | None = ...) -> Any: ...


def with_carbon(
    source: object, hour: Hour, assets: Assets | None, *, retry_until: float | None = None
) -> Assets | None:
    """``assets`` with the hour's estimates when the source has them (module docstring)."""
    if assets is None or not isinstance(source, CarbonSource):
        return assets
    try:
        tonnes = source.carbon(hour.start, hour.end, retry_until=retry_until)
    except EndpointMissing as exc:
        _NO_CARBON.missing(source.base_url, exc)
        return assets
    keys = [n.key for n in assets.nodes] + [d.key for d in assets.disks]
    missing = sorted({key for key in keys if key not in tonnes})
    if missing:
        log.warning(
            "OpenCost at %s answered /assets/carbon without %s of /assets: hour %s stored without emissions",
            source.base_url,
            ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""),
            f"{hour.start:%Y-%m-%dT%H:%MZ}",
            extra={"fields": {"opencost": source.base_url, "hour": hour.start.isoformat(), "assets": missing}},
        )
        return assets
    return replace(assets, carbon=tonnes)


@runtime_checkable
class NodeInventory(Protocol):
    """A source that lists the hour's nodes itself (``PrometheusAllocations``)."""

    def node_hours(self, start: datetime, end: datetime, *, retry_until: float | None = ...) -> list[NodeHour]: ...


@dataclass(frozen=True)
class NodeGrams:
    """A node's grams in the hour by the operator's table, and what they are split by."""

    name: str
    grams: int
    factor_source: str
    region: str | None
    cost_micros: int  # its capacity's CPU + RAM + GPU cost (0: unpriced, all grams to idle)


@dataclass(frozen=True)
class TableEmissions:
    """The hour's nodes by the operator's table; ``unmatched`` names those no factor matches."""

    factor_source: str
    nodes: tuple[NodeGrams, ...]
    unmatched: tuple[str, ...] = ()


def fetch_table_emissions(
    source: object, hour: Hour, table: EmissionTable | None, *, retry_until: float | None = None
) -> TableEmissions | None:
    """The hour's nodes' grams by ``table``, from a source that lists its nodes; None without a
    table or such a source. Fetched before the transaction, like the assets."""
    if table is None or not isinstance(source, NodeInventory):
        return None
    found, unmatched = [], []
    for node in source.node_hours(hour.start, hour.end, retry_until=retry_until):
        match = table.node_hour(node.labels, node.minutes)
        if match is None:
            unmatched.append(f"{node.name} ({_instance_type(node.labels)})")
            continue
        cost = 0 if node.cost is None else to_micros(node.cost)
        found.append(NodeGrams(node.name, match.grams, match.source, match.region, cost))
    return TableEmissions(table.source, tuple(found), tuple(unmatched))


def _instance_type(labels: Mapping[str, str]) -> str:
    keyed = node_labels(labels)
    value = next((keyed[k] for k in map(sanitize_label_key, INSTANCE_TYPE_LABELS) if keyed.get(k)), None)
    return f"instance type {value}" if value else "no instance-type label exported by kube-state-metrics"


def store_emissions(
    db: Database, conn: Connection, key: dict[str, Any], assets: Assets | None, table: TableEmissions | None = None
) -> None:
    """Inside the hour's transaction, after its rows and assets: replace the hour's emissions, by
    the operator's table when it is given, else by OpenCost's estimates (module docstring)."""
    db.execute("delete_hour_emissions", conn, **key)
    if table is not None:
        _store_table(db, conn, key, table)
        return
    if assets is None or assets.carbon is None:
        return
    grams = _asset_grams(assets)
    rows = db.fetch_all("hour_rows_for_emissions", conn, **key)
    db.copy_rows(conn, "asset_emissions", ASSET_COLUMNS, _asset_rows(key, grams))
    db.copy_rows(conn, "allocation_emissions", ROW_COLUMNS, _row_grams(key, _node_costs(assets), grams, rows))
    total = sum(g for _, _, g in grams)
    db.execute("record_emission_hour", conn, **key, factor_source=OPENCOST_FACTORS, asset_count=len(grams), grams=total)


def _store_table(db: Database, conn: Connection, key: dict[str, Any], table: TableEmissions) -> None:
    if table.unmatched:
        log.warning(
            "no factor of CARBON_EMISSION_TABLE matches %s: hour %s stored without emissions",
            ", ".join(table.unmatched),
            f"{key['hour']:%Y-%m-%dT%H:%MZ}",
            extra={"fields": {"hour": key["hour"].isoformat(), "nodes": list(table.unmatched)}},
        )
        return
    grams = [("node", n.name, n.grams) for n in table.nodes]
    rows = db.fetch_all("hour_rows_for_emissions", conn, **key)
    head = (key["cluster"], key["aggregation"], key["hour"])
    factors = ((*head, "node", n.name, n.grams, n.factor_source, n.region) for n in table.nodes)
    db.copy_rows(conn, "asset_emissions", ASSET_COLUMNS, factors)
    costs = {n.name: n.cost_micros for n in table.nodes}
    db.copy_rows(conn, "allocation_emissions", ROW_COLUMNS, _row_grams(key, costs, grams, rows))
    total = sum(n.grams for n in table.nodes)
    db.execute(
        "record_emission_hour", conn, **key, factor_source=table.factor_source, asset_count=len(grams), grams=total
    )


def _node_costs(assets: Assets) -> dict[str, int]:
    """Each node's CPU + RAM + GPU cost with its adjustment, micros; two of one name summed."""
    node_cost: dict[str, int] = defaultdict(int)
    for n in assets.nodes:
        node_cost[n.name] += to_micros(n.cpu_cost) + to_micros(n.ram_cost) + to_micros(n.gpu_cost)
        node_cost[n.name] += to_micros(n.adjustment)
    return node_cost


def _asset_grams(assets: Assets) -> list[tuple[str, str, int]]:
    """(kind, name, grams) of each node and disk; two assets of one name are summed."""
    assert assets.carbon is not None
    summed: dict[tuple[str, str], int] = defaultdict(int)
    try:
        for kind, items in (("node", assets.nodes), ("disk", assets.disks)):
            for asset in items:
                summed[(kind, asset.name)] += tonnes_to_grams(assets.carbon[asset.key], f"{asset.key}.co2e")
    except InvalidInput as exc:
        raise OpenCostUnavailable(f"OpenCost answered /assets/carbon with {exc}") from exc
    return [(kind, name, grams) for (kind, name), grams in sorted(summed.items())]


def _asset_rows(key: dict[str, Any], grams: list[tuple[str, str, int]]) -> Iterator[tuple[Any, ...]]:
    head = (key["cluster"], key["aggregation"], key["hour"])
    for kind, name, value in grams:
        yield (*head, kind, name, value, OPENCOST_FACTORS, None)


def _row_grams(
    key: dict[str, Any], node_cost: Mapping[str, int], grams: Sequence[tuple[str, str, int]], rows: list[dict[str, Any]]
) -> Iterator[tuple[Any, ...]]:
    """Each row's grams (its node's share plus its share of the disks') and each node's idle."""
    per_row: dict[int, int] = defaultdict(int)
    idle: dict[str, int] = defaultdict(int)  # node ('' for the disks') -> grams
    on_node: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        if row["entry_kind"] != "idle" and row["node"]:
            on_node[row["node"]].append(i)
    for kind, name, value in grams:
        if kind != "node":
            continue
        members = on_node.get(name, [])
        parts, rest = node_shares(value, node_cost.get(name, 0), [rows[i]["compute_micros"] for i in members])
        for i, part in zip(members, parts, strict=True):
            per_row[i] += part
        idle[name] += rest
    disks = sum(value for kind, _, value in grams if kind == "disk")
    holders = [i for i, row in enumerate(rows) if row["entry_kind"] != "idle"]
    parts, rest = apportion(disks, [rows[i]["pv_micros"] for i in holders], 0)
    for i, part in zip(holders, parts, strict=True):
        per_row[i] += part
    idle[""] += rest
    head = (key["cluster"], key["aggregation"], key["hour"])
    for i in sorted(per_row):
        row = rows[i]
        if per_row[i]:
            yield (
                *head,
                row["namespace"],
                row["name"],
                row["node"],
                row["entry_kind"],
                row["controller_kind"],
                row["controller"],
                row["pod"],
                row["team"],
                row["cost_center"],
                per_row[i],
            )
    for node, value in sorted(idle.items()):
        if value:
            yield (*head, "", IDLE_NAME, node, "idle", None, None, None, "", "", value)
