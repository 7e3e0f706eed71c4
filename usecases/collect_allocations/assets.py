"""An hour's assets (nodes, disks, load balancers: ``cluster_assets``), stored with its allocations.

Why with the allocations: a node's idle is its asset cost minus what its allocations were charged;
assets from one fetch and allocations from another would not add up. So the hour's assets are
fetched with its answer, before the transaction (``fetch_assets``), and written inside it
(``store_assets``, their count on the ledger entry): replaced together with the rows or not at
all. An hour answered with no allocations keeps its rows and its assets as they were.

Decisions:

* **The assets call fails** (after the client's retries and deadline): the hour fails like an
  OpenCost outage (``OpenCostUnavailable``, the hour left as it was, the next run retries it).
  Stored without assets, a final hour would keep a hole in the reconciliation that nothing fills.
* **OpenCost without the assets API** (404, ``EndpointMissing``): the hour is stored without
  assets, ``allocation_hours.asset_count`` NULL, and a warning is logged once per OpenCost URL
  and process (not once per hour).
* **The Prometheus source** stores no assets (``asset_count`` NULL): its capacity query sums
  allocatable capacity over the cluster, not per node.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from finops.hours import Hour
from finops.money import to_micros
from infra.opencost import Assets, EndpointMissing
from infra.postgres import Database
from infra.postgres.database import Connection
from usecases.collect_allocations.carbon import with_carbon
from usecases.collect_allocations.optional_apis import OptionalApi

COLUMNS = (
    "cluster",
    "aggregation",
    "hour",
    "kind",
    "name",
    "provider_id",
    "cpu_cores",
    "ram_bytes",
    "gpu_count",
    "bytes",
    "cpu_cost_micros",
    "ram_cost_micros",
    "gpu_cost_micros",
    "adjustment_micros",
    "total_cost_micros",
)

_NO_ASSETS = OptionalApi(
    "OpenCost has no assets API: hours are stored without assets (allocation_hours.asset_count NULL)"
)


@runtime_checkable
class AssetSource(Protocol):
    """A source that also answers OpenCost's assets (``OpenCostClient``)."""

    base_url: str

    def assets(self, start: datetime, end: datetime, *, retry_until: float | None = ...) -> Assets: ...


def fetch_assets(source: object, hour: Hour, *, retry_until: float | None = None) -> Assets | None:
    """The hour's assets; None when the source has none (Prometheus, an OpenCost answering 404).
    Any other failure propagates: the hour fails (module docstring)."""
    if not isinstance(source, AssetSource):
        return None
    try:
        assets = source.assets(hour.start, hour.end, retry_until=retry_until)
    except EndpointMissing as exc:
        _NO_ASSETS.missing(source.base_url, exc)
        return None
    return with_carbon(source, hour, assets, retry_until=retry_until)  # and its emissions (``carbon``)


def asset_rows(assets: Assets, cluster: str, aggregation: str, hour: datetime) -> Iterator[tuple[Any, ...]]:
    """``cluster_assets`` rows (``COLUMNS``' order); costs rounded half-even to micros."""
    head = (cluster, aggregation, hour)
    for n in assets.nodes:
        yield (
            *head,
            "node",
            n.name,
            n.provider_id,
            n.cpu_cores,
            n.ram_bytes,
            n.gpu_count,
            None,
            to_micros(n.cpu_cost),
            to_micros(n.ram_cost),
            to_micros(n.gpu_cost),
            to_micros(n.adjustment),
            to_micros(n.total_cost),
        )
    for d in assets.disks:
        yield (*head, "disk", d.name, d.provider_id, None, None, None, d.bytes, 0, 0, 0, *_costs(d))
    for lb in assets.load_balancers:
        yield (*head, "load_balancer", lb.name, lb.provider_id, None, None, None, None, 0, 0, 0, *_costs(lb))


def _costs(asset: Any) -> tuple[int, int]:
    return to_micros(asset.adjustment), to_micros(asset.total_cost)


def store_assets(db: Database, conn: Connection, key: dict[str, Any], assets: Assets | None) -> None:
    """Inside the hour's transaction: replace the hour's assets and record how many (NULL: none
    were fetched, and the hour keeps no assets from an earlier fetch either)."""
    db.execute("delete_hour_assets", conn, **key)
    count = None
    if assets is not None:
        count = db.copy_rows(conn, "cluster_assets", COLUMNS, asset_rows(assets, **key))
    db.execute("record_hour_assets", conn, **key, asset_count=count)
