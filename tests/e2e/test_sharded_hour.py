"""We test these aspects of an hour fetched in namespace batches (``OPENCOST_SHARD_*``), against
the sandbox OpenCost over HTTP (2,000 containers in 40 namespaces) and a real PostgreSQL:

- a sharded hour's rows equal a single request's, column for column (idle from the cluster-level
  query, owners, costs), whether every hour is sharded or only one whose answer outgrows
  ``OPENCOST_SHARD_ABOVE_BYTES``; the batches really carry the namespace filter;
- an OpenCost that ignores ``filter`` (versions before 1.115) is detected: the hour is refused with
  one line naming the batch and the foreign namespace, and keeps its previous rows and state;
- a batch failing (HTTP 500 after its retries, or a bad field found while its rows are being
  written, after two batches were copied) leaves the hour with its previous rows and state.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import NotFound, OpenCostUnavailable
from infra.opencost import OpenCostClient
from infra.postgres import Database
from sandbox.opencost.server import FilterIgnoringApp, OpenCostApp, OpenCostServer
from sandbox.opencost.synthetic import synthetic
from usecases.collect_allocations.answers import ShardOptions
from usecases.collect_allocations.service import CollectOptions, collect_range

if TYPE_CHECKING:
    pass

HOUR = datetime(2026, 1, 5, 10, tzinfo=UTC)
NOW = HOUR + timedelta(minutes=30)  # the hour is still running: written open, so it may be rewritten
CLOCK = datetime(2026, 1, 6, tzinfo=UTC)  # the sandbox has the whole hour's data
NAMESPACES = 40
PER_BATCH = 8  # 5 batches; requests: namespaces, idle, then batch 1..5


class NoKube:
    """No PriceBook CRD objects: rows are stored unpriced (pricing is not what is tested here)."""

    def list_objects(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return []

    def get_object(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise NotFound("no FinOpsProvider")


@pytest.fixture(scope="module")
def opencost() -> Iterator[OpenCostServer]:
    app = OpenCostApp(synthetic(2000, namespaces=NAMESPACES), clock=lambda: CLOCK)
    with OpenCostServer(app) as server:
        yield server


@pytest.fixture(scope="module")
def ignoring() -> Iterator[OpenCostServer]:
    app = FilterIgnoringApp(synthetic(2000, namespaces=NAMESPACES), clock=lambda: CLOCK)
    with OpenCostServer(app) as server:
        yield server


def collect_hour(db: Database, server: OpenCostServer, cluster: str, shards: ShardOptions) -> None:
    options = CollectOptions(cluster, DEFAULT_AGGREGATION, 0, "team", "cost-center", shards=shards)
    client = OpenCostClient(server.url, retries=1, backoff=0.01)
    try:
        result = collect_range(
            db, client, NoKube(), options, start=HOUR, end=HOUR + timedelta(hours=1), now=NOW, run_id=str(uuid.uuid4())
        )
    finally:
        client.close()
    assert result.hours_written, result.warnings


def table(db: Database, cluster: str) -> list[tuple[Any, ...]]:
    """Every column of every row of the cluster's hour except ``cluster`` itself."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT * FROM provider_allocations WHERE cluster = %s ORDER BY namespace, name", (cluster,)
        ).fetchall()
    return [tuple(v for k, v in r.items() if k != "cluster") for r in rows]


def state(db: Database, cluster: str) -> tuple[Any, ...]:
    with db.connection() as conn:
        row = conn.execute(
            "SELECT state, row_count, run_id FROM allocation_hours WHERE cluster = %s", (cluster,)
        ).fetchone()
    assert row is not None
    return tuple(row.values())


@pytest.mark.parametrize(
    "shards", [ShardOptions(PER_BATCH, 0), ShardOptions(PER_BATCH, 10_000)], ids=["always", "above-10kB"]
)
def test_a_sharded_hour_equals_a_single_request(db: Database, opencost: OpenCostServer, shards: ShardOptions) -> None:
    collect_hour(db, opencost, "single", ShardOptions())
    opencost.reset()
    collect_hour(db, opencost, "sharded", shards)
    single, sharded = table(db, "single"), table(db, "sharded")
    assert len(single) == 2000 + 1  # every container and the cluster's idle
    assert sharded == single
    assert {r[0] for r in single if r[0]} == {f"ns-{i:03d}" for i in range(NAMESPACES)}
    filters = [r["filter"] for r in opencost.requests if "filter" in r]
    assert len(filters) == NAMESPACES // PER_BATCH
    assert filters[0] == "namespace:" + ",".join(f'"ns-{i:03d}"' for i in range(PER_BATCH))
    aggregates = [r["aggregate"] for r in opencost.requests]
    assert "namespace" in aggregates and "cluster" in aggregates
    if shards.above_bytes:  # the single request was tried first and abandoned past 10 kB
        assert aggregates[0] == DEFAULT_AGGREGATION and "filter" not in opencost.requests[0]


def test_an_opencost_ignoring_the_filter_is_refused(
    db: Database, opencost: OpenCostServer, ignoring: OpenCostServer
) -> None:
    collect_hour(db, opencost, "old", ShardOptions())
    before, ledger = table(db, "old"), state(db, "old")
    with pytest.raises(OpenCostUnavailable) as refused:
        collect_hour(db, ignoring, "old", ShardOptions(PER_BATCH, 0))
    message = str(refused.value)
    assert "\n" not in message and "ignored the namespace filter" in message
    assert "namespace batch 1 of 5" in message and "'ns-008'" in message
    assert table(db, "old") == before and state(db, "old") == ledger


def bad_field_answer() -> bytes:
    """A valid envelope whose one allocation names a cost that is not a number."""
    allocation = {"name": "ns-016/x", "properties": {"namespace": "ns-016"}, "totalCost": "lots"}
    return json.dumps({"code": 200, "status": "success", "data": [{"ns-016/x": allocation}]}).encode()


@pytest.mark.parametrize("failure", ["http-500", "bad-field"])
def test_a_failure_in_batch_3_keeps_the_previous_rows(db: Database, opencost: OpenCostServer, failure: str) -> None:
    collect_hour(db, opencost, "kept", ShardOptions())
    before, ledger = table(db, "kept"), state(db, "kept")
    # Requests: the namespaces, idle, batch 1, batch 2, then batch 3 fails.
    if failure == "http-500":
        opencost.fail_next(status=500, times=2, after=4)  # the attempt and its one retry
    else:
        opencost.malformed_next(bad_field_answer(), after=4)  # found while batches 1-2 are copied
    with pytest.raises(OpenCostUnavailable) as failed:
        collect_hour(db, opencost, "kept", ShardOptions(PER_BATCH, 0))
    expected = "HTTP 500" if failure == "http-500" else "totalCost"
    assert expected in str(failed.value)
    assert table(db, "kept") == before and state(db, "kept") == ledger
    opencost.reset()
