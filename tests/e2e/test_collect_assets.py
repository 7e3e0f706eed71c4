"""We test these aspects of the hour's assets (``cluster_assets``), collected by
``collect_allocations`` from the sandbox OpenCost into a real PostgreSQL:

- every stored hour has one node asset per node (providerID: the node's name when the scenario
  gives none), its disks (the volumes the allocations' ``pvs`` report, unmounted ones included)
  and its load balancer, and ``allocation_hours.asset_count`` says how many;
- per node and hour: its idle = its asset cost (cpu + ram + gpu + adjustment) - its rows' cpu + ram
  + gpu cost (stored with their adjustments) is not negative, and summed over the nodes it is the
  stored ``__idle__`` row's cpu + ram + gpu, within the JSON's rounding: each figure OpenCost sends
  is rounded to 5 decimals (5 micros), a row's cost + adjustment to 10 micros;
- a replay writes identical assets; a run killed with SIGKILL at every statement of an hour's
  transaction leaves each hour with its rows and assets together or with neither, and the next
  run ends exactly as an uninterrupted one;
- the assets call failing fails the hour like an allocation outage (nothing stored); an OpenCost
  without the assets API (404) stores the hours without assets (``asset_count`` NULL);
- retention deletes the expired hours' assets, emissions and node days in one transaction: a
  failure of any delete leaves all of them for the next run.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e.conftest import Pinger
from tests.e2e.test_hour_ledger import driver

SCHEDULED = "2026-11-20T10:07:00Z"
HOURS = [datetime(2026, 11, 20, h, tzinfo=UTC) for h in (7, 8, 9, 10)]
ROUNDING = 5  # micros: one figure of OpenCost's JSON (5 decimals)


def assets(db: Database, cluster: str = "test") -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT hour, kind, name, provider_id, cpu_cost_micros, ram_cost_micros, gpu_cost_micros,"
            " adjustment_micros, total_cost_micros FROM cluster_assets WHERE cluster = %s ORDER BY hour, kind, name",
            (cluster,),
        ).fetchall()


def asset_counts(db: Database, cluster: str = "test") -> dict[datetime, int | None]:
    with db.connection() as conn:
        rows = conn.execute("SELECT hour, asset_count FROM allocation_hours WHERE cluster = %s", (cluster,))
        return {r["hour"]: r["asset_count"] for r in rows}


def test_each_hour_stores_its_nodes_disks_and_load_balancers(ping: Pinger, db: Database) -> None:
    assert ping({"scheduledTime": SCHEDULED}).json()["outcome"] == "success"
    stored = assets(db)
    for hour in HOURS:
        mine = [(a["kind"], a["name"], a["provider_id"]) for a in stored if a["hour"] == hour]
        assert mine == [
            ("disk", "pvc-old-index", "pvc-old-index"),
            ("disk", "pvc-web-data", "pvc-web-data"),
            ("load_balancer", "search/index-lb", mine[2][2]),
            ("node", "node-a", "node-a"),
            ("node", "node-b", "node-b"),
        ], hour
        assert mine[2][2].startswith("203.0.113.")  # the load balancer's IP
    assert asset_counts(db) == dict.fromkeys(HOURS, 5)
    [lb] = {a["total_cost_micros"] for a in stored if a["kind"] == "load_balancer"}
    assert lb == 30_000  # 0.025 an hour, +20 % adjustment
    for a in (a for a in stored if a["kind"] == "node"):
        parts = a["cpu_cost_micros"] + a["ram_cost_micros"] + a["gpu_cost_micros"] + a["adjustment_micros"]
        assert abs(a["total_cost_micros"] - parts) <= 4 * ROUNDING, a


def test_node_assets_are_the_rows_plus_idle(ping: Pinger, db: Database) -> None:
    assert ping({"scheduledTime": SCHEDULED}).json()["outcome"] == "success"
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT hour, node, entry_kind, count(*) AS n,"
            " sum(coalesce(cpu_cost_micros, 0) + coalesce(ram_cost_micros, 0) + coalesce(gpu_cost_micros, 0)) AS cost"
            " FROM provider_allocations WHERE cluster = 'test' GROUP BY hour, node, entry_kind"
        ).fetchall()
    charged: dict[tuple[datetime, str], tuple[int, int]] = {}
    idle: dict[datetime, int] = {}
    for r in rows:
        if r["entry_kind"] == "idle":
            idle[r["hour"]] = r["cost"]
        elif r["node"]:
            charged[(r["hour"], r["node"])] = (r["cost"], r["n"])
    shares: dict[datetime, int] = defaultdict(int)
    slack: dict[datetime, int] = defaultdict(lambda: 3 * ROUNDING)  # the idle row's three figures
    for a in assets(db):
        if a["kind"] != "node":
            continue
        cost, count = charged[(a["hour"], a["name"])]
        node = a["cpu_cost_micros"] + a["ram_cost_micros"] + a["gpu_cost_micros"] + a["adjustment_micros"]
        tolerance = 4 * ROUNDING + 3 * 2 * ROUNDING * count
        assert node - cost >= -tolerance, a  # a node's idle is never negative in the sandbox
        assert node - cost > 0, a  # nor zero: the test scenario leaves room on both nodes
        shares[a["hour"]] += node - cost
        slack[a["hour"]] += tolerance
    assert sorted(shares) == HOURS == sorted(idle)
    for hour in HOURS:
        assert abs(shares[hour] - idle[hour]) <= slack[hour], (hour, shares[hour], idle[hour], slack[hour])


def test_a_replay_writes_identical_assets(ping: Pinger, db: Database) -> None:
    assert ping({"scheduledTime": SCHEDULED}).json()["outcome"] == "success"
    first = assets(db)
    assert ping({"scheduledTime": SCHEDULED}).json()["outcome"] == "success"  # refetches the open hour
    assert assets(db) == first and asset_counts(db) == dict.fromkeys(HOURS, 5)


def test_failing_assets_fail_the_hour_and_a_missing_api_stores_hours_without_assets(
    ping: Pinger, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    opencost.fail_next(status=503, times=10, path="/assets")
    try:
        failed = ping({"scheduledTime": SCHEDULED})
    finally:
        opencost.reset()
    assert failed.status_code == 503 and "/assets" in failed.json()["error"]
    assert asset_counts(db) == {} and assets(db) == []  # the first hour failed: nothing stored
    opencost.fail_next(status=404, times=10, path="/assets", message="404 page not found")
    try:
        body = ping({"scheduledTime": SCHEDULED}).json()
    finally:
        opencost.reset()
    assert body["outcome"] == "success" and body["hours_written"] == 4
    assert asset_counts(db) == dict.fromkeys(HOURS) and assets(db) == []


def snapshot(db: Database, cluster: str) -> dict[str, Any]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT hour, count(*) AS n, sum(total_cost_micros) AS total FROM provider_allocations"
            " WHERE cluster = %s GROUP BY hour ORDER BY hour",
            (cluster,),
        ).fetchall()
    return {"rows": rows, "assets": assets(db, cluster), "counts": asset_counts(db, cluster)}


def test_a_killed_hour_keeps_rows_and_assets_together(
    db: Database, database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> None:
    scheduled, following = "2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z"
    assert driver(database_url, opencost, kube, "whole", scheduled, lookback=1).returncode == 0
    assert driver(database_url, opencost, kube, "whole", following, lookback=1).returncode == 0
    expected = snapshot(db, "whole")
    assert expected["assets"] and len(expected["counts"]) == 3
    counted = driver(database_url, opencost, kube, "count", scheduled, lookback=1, count=True)
    total = int(counted.stdout.strip())
    # Every fourth statement and the last three (the assets are written last in the hour's
    # transaction, then it commits): each point costs two driver processes, so not every one.
    for point in sorted({*range(1, total + 1, 4), *range(max(1, total - 2), total + 1)}):
        cluster = f"assets-killed-{point}"
        killed = driver(database_url, opencost, kube, cluster, scheduled, lookback=1, kill_at=point)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        state = snapshot(db, cluster)
        stored = {r["hour"] for r in state["rows"]}
        with_assets = {a["hour"] for a in state["assets"]}
        assert stored == with_assets == set(state["counts"]), f"killed before statement {point} of {total}"
        for hour, count in state["counts"].items():
            assert count == sum(1 for a in state["assets"] if a["hour"] == hour), point
        # The next run (a lookback reaching the killed run's first hour, killed before it started).
        assert driver(database_url, opencost, kube, cluster, following, lookback=2).returncode == 0
        assert snapshot(db, cluster) == expected, f"killed before statement {point} of {total}"


def test_assets_expire_with_the_allocations_partitions(db: Database) -> None:
    from usecases.collect_allocations.retention import drop_expired_partitions

    with db.connection() as conn:
        for hour in ("2026-08-31T23:00:00Z", "2026-09-01T00:00:00Z"):
            conn.execute(
                "INSERT INTO cluster_assets (cluster, aggregation, hour, kind, name, provider_id, total_cost_micros)"
                " VALUES ('old', 'pod', %s, 'node', 'n1', 'i-1', 1)",
                (hour,),
            )
    # ALLOCATION_RETENTION_MONTHS=2 in November: August's month is dropped, September's kept.
    drop_expired_partitions(db, 2, datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert [a["hour"] for a in assets(db, "old")] == [datetime(2026, 9, 1, tzinfo=UTC)]


def test_expired_assets_and_emissions_are_deleted_together_or_not_at_all(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from usecases.collect_allocations.retention import drop_expired_partitions

    hour = "2026-08-31T23:00:00Z"
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO cluster_assets (cluster, aggregation, hour, kind, name, provider_id, total_cost_micros)"
            " VALUES ('expiring', 'pod', %s, 'node', 'n1', 'i-1', 1)",
            (hour,),
        )
        conn.execute(
            "INSERT INTO emission_hours (cluster, aggregation, hour, factor_source, asset_count, grams)"
            " VALUES ('expiring', 'pod', %s, 'opencost', 1, 10)",
            (hour,),
        )

    def emissions() -> int:
        with db.connection() as conn:
            found = conn.execute("SELECT count(*) AS n FROM emission_hours WHERE cluster = 'expiring'").fetchone()
        assert found is not None
        return int(found["n"])

    execute = db.execute

    def failing(query: str, /, conn: Any = None, **params: Any) -> int:
        if query == "delete_expired_node_days":
            raise RuntimeError("the run stops here")
        return execute(query, conn, **params)

    now = datetime(2026, 11, 20, 10, tzinfo=UTC)
    monkeypatch.setattr(db, "execute", failing)
    with pytest.raises(RuntimeError, match="the run stops here"):
        drop_expired_partitions(db, 2, now)
    assert len(assets(db, "expiring")) == 1 and emissions() == 1  # rolled back together
    monkeypatch.undo()
    drop_expired_partitions(db, 2, now)
    assert assets(db, "expiring") == [] and emissions() == 0
