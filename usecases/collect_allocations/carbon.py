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
* **The carbon call fails** otherwise, or its answer lacks a node's or disk's key: the hour fails
  like an OpenCost outage (left as it was, retried by the next run): stored without emissions, a
  final hour would keep the hole for good.
* **No assets** (an OpenCost without the assets API, the Prometheus source): no emissions; the
  operator's emission table for the Prometheus source is not wired yet (docs/how-to/carbon.md).
* **Which rows a node's grams go to**: its workload and unmounted rows whose ``node`` is the node,
  by CPU + RAM + GPU cost, and its idle (``finops.carbon.node_shares``); OpenCost's own ``__idle__``
  row takes nothing (each node's idle line stands for it). The disks' grams go to every non-idle
  row by volume cost, the rest to an idle line without a node.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from finops.carbon import apportion, node_shares, tonnes_to_grams
from finops.errors import InvalidInput, OpenCostUnavailable
from finops.hours import Hour
from finops.money import to_micros
from infra.opencost import Assets, EndpointMissing
from infra.postgres import Database
from infra.postgres.database import Connection

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

_warned: set[str] = set()  # OpenCost URLs already reported as without carbon estimates


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
        if source.base_url not in _warned:
            _warned.add(source.base_url)
            log.warning(
                "OpenCost has no carbon estimates (CARBON_ESTIMATES_ENABLED): hours are stored without emissions",
                extra={"fields": {"opencost": source.base_url, "error": str(exc)}},
            )
        return assets
    keys = [n.key for n in assets.nodes] + [d.key for d in assets.disks]
    missing = [key for key in keys if key not in tonnes]
    if missing:
        raise OpenCostUnavailable(
            f"OpenCost at {source.base_url} answered /assets/carbon without {len(missing)} asset(s) of /assets, "
            f"e.g. {missing[0]!r}"
        )
    return replace(assets, carbon=tonnes)


def store_emissions(db: Database, conn: Connection, key: dict[str, Any], assets: Assets | None) -> None:
    """Inside the hour's transaction, after its rows and assets: replace the hour's emissions."""
    db.execute("delete_hour_emissions", conn, **key)
    if assets is None or assets.carbon is None:
        return
    grams = _asset_grams(assets)
    rows = db.fetch_all("hour_rows_for_emissions", conn, **key)
    db.copy_rows(conn, "asset_emissions", ASSET_COLUMNS, _asset_rows(key, grams))
    db.copy_rows(conn, "allocation_emissions", ROW_COLUMNS, _row_grams(key, assets, grams, rows))
    total = sum(g for _, _, g in grams)
    db.execute("record_emission_hour", conn, **key, factor_source=OPENCOST_FACTORS, asset_count=len(grams), grams=total)


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
    key: dict[str, Any], assets: Assets, grams: list[tuple[str, str, int]], rows: list[dict[str, Any]]
) -> Iterator[tuple[Any, ...]]:
    """Each row's grams (its node's share plus its share of the disks') and each node's idle."""
    per_row: dict[int, int] = defaultdict(int)
    idle: dict[str, int] = defaultdict(int)  # node ('' for the disks') -> grams
    on_node: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        if row["entry_kind"] != "idle" and row["node"]:
            on_node[row["node"]].append(i)
    node_cost: dict[str, int] = defaultdict(int)
    for n in assets.nodes:
        node_cost[n.name] += to_micros(n.cpu_cost) + to_micros(n.ram_cost) + to_micros(n.gpu_cost)
        node_cost[n.name] += to_micros(n.adjustment)
    for kind, name, value in grams:
        if kind != "node":
            continue
        members = on_node.get(name, [])
        parts, rest = node_shares(value, node_cost[name], [rows[i]["compute_micros"] for i in members])
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
