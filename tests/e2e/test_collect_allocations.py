"""We test these aspects of ``collect_allocations``, served by functions-framework over HTTP
against the sandbox OpenCost, the sandbox Kubernetes API and a real PostgreSQL:

- a run writes the lookback hours finalized and the pinned hour unfinalized, stamped with the
  label-marked PriceBook's version, owner labels, and the cluster's idle row;
- every stored per-resource cost is OpenCost's cost plus its adjustment (the test scenario sends
  credits and surcharges);
- a replay gives identical rows and refetches only the unfinalized hour;
- OpenCost failing (500, timeout, malformed JSON) fails the run with 503, a clear error, a
  ``job_runs`` row, and no partial hour; the next run completes what is missing;
- concurrent identical runs do not duplicate;
- bad pings (token, body, CostJob) change nothing; no PriceBook means unpriced rows and ``partial``;
- a ping naming a CostJob records the execution in its status.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e.conftest import Pinger
from usecases.verify import verify

SCHEDULED = "2026-11-20T10:07:00Z"
HOURS = [datetime(2026, 11, 20, h, tzinfo=UTC) for h in (7, 8, 9, 10)]
BUSINESS_COLUMNS = (
    "cluster, namespace, name, hour, entry_kind, team, cost_center, total_cost_micros, cpu_cost_micros, "
    "ram_cost_micros, pv_cost_micros, pricebook_id, currency, is_finalized"
)


def rows(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute(
            f"SELECT {BUSINESS_COLUMNS} FROM provider_allocations ORDER BY hour, namespace, name"
        ).fetchall()


def ledger(db: Database) -> dict[datetime, bool]:
    with db.connection() as conn:
        return {r["hour"]: r["state"] == "final" for r in conn.execute("SELECT hour, state FROM allocation_hours")}


def runs(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute("SELECT * FROM job_runs ORDER BY started_at").fetchall()


def test_a_run_writes_lookback_finalized_and_the_pinned_hour_open(ping: Pinger, db: Database) -> None:
    response = ping({"scheduledTime": SCHEDULED})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["outcome"] == "success" and body["hours_written"] == 4 and body["pricebook"] == "finops/standard"

    assert ledger(db) == {HOURS[0]: True, HOURS[1]: True, HOURS[2]: True, HOURS[3]: False}
    stored = rows(db)
    by_hour = {h: [r for r in stored if r["hour"] == h] for h in HOURS}
    assert all(len(v) == len(by_hour[HOURS[0]]) for v in by_hour.values())
    hour = by_hour[HOURS[0]]
    idle = [r for r in hour if r["entry_kind"] == "idle"]
    assert len(idle) == 1 and idle[0]["namespace"] == "" and idle[0]["total_cost_micros"] > 0
    shop = [r for r in hour if r["namespace"] == "shop"]
    assert len(shop) == 5 and {(r["team"], r["cost_center"]) for r in shop} == {("checkout", "cc-100")}
    assert {r["team"] for r in hour if r["namespace"] == "legacy"} == {None}
    # An unmounted volume arrives without labels; it belongs to its namespace's owner.
    (orphan,) = [r for r in hour if r["entry_kind"] == "unmounted"]
    assert (orphan["namespace"], orphan["team"], orphan["cost_center"]) == ("search", "discovery", "cc-200")
    # The label-marked "standard" book prices every row, not the older unmarked "legacy".
    with db.connection() as conn:
        books = conn.execute("SELECT id, name, cpu_hour FROM pricebooks").fetchall()
    assert [(b["name"], b["cpu_hour"]) for b in books] == [("standard", Decimal("0.031611"))]
    assert {(r["pricebook_id"], r["currency"]) for r in stored} == {(books[0]["id"], "USD")}
    # OpenCost rounds every figure to 5 decimals on its own, so parts and total agree within
    # 5 micros each (4 figures); we store each exactly as sent and never recompute the total.
    web = next(r for r in shop if r["name"].endswith("/app"))
    parts = web["cpu_cost_micros"] + web["ram_cost_micros"] + web["pv_cost_micros"]
    assert abs(web["total_cost_micros"] - parts) <= 20 and web["total_cost_micros"] % 10 == 0
    (run,) = runs(db)
    assert (run["function"], run["outcome"], run["http_status"], run["trigger"]) == (
        "collect_allocations",
        "success",
        200,
        "cron",
    )
    assert run["counts"]["rows_written"] == len(stored)


def test_a_replay_gives_identical_rows_and_refetches_only_the_open_hour(
    ping: Pinger, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    assert ping({"scheduledTime": SCHEDULED}).status_code == 200
    first = rows(db)
    before = len(opencost.requests)
    replay = ping({"scheduledTime": SCHEDULED}).json()
    assert replay["hours_skipped"] == 3 and replay["hours_written"] == 1
    assert len(opencost.requests) - before == 1
    assert rows(db) == first

    # The next hour's run finalizes the hour that was open and opens the next one.
    later = ping({"scheduledTime": "2026-11-20T11:02:00Z"}).json()
    assert later["hours_written"] == 2 and later["hours_skipped"] == 3  # back to the ledger's first hour
    assert ledger(db)[HOURS[3]] is True


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (lambda oc: oc.fail_next(status=500, times=2), "HTTP 500"),
        (lambda oc: oc.delay_next(3.0, times=2), "Timeout"),
        (lambda oc: oc.malformed_next(body=b'{"code": 200, "data": [{"x": {"name": 5'), "documented envelope"),
    ],
    ids=["http-500", "timeout", "malformed-json"],
)
def test_opencost_failures_fail_the_run_and_leave_no_partial_hour(
    ping: Pinger, db: Database, opencost: sandbox_opencost.OpenCostServer, fault: Any, error: str
) -> None:
    fault(opencost)  # a 500 or timeout fails the attempt and its one retry; a 200 is not retried
    response = ping({"scheduledTime": SCHEDULED})
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "60"
    assert error in response.json()["error"] and "OpenCost" in response.json()["error"]
    assert rows(db) == [] and ledger(db) == {}
    (run,) = runs(db)
    assert run["outcome"] == "failed" and run["http_status"] == 503 and error in run["error"]

    # The CronJob's retry completes everything; rows, ledger and rollups agree.
    assert ping({"scheduledTime": SCHEDULED}).json()["hours_written"] == 4
    assert verify(db) == []


def test_concurrent_identical_runs_do_not_duplicate(ping: Pinger, db: Database) -> None:
    assert ping({"scheduledTime": SCHEDULED}).status_code == 200
    expected = rows(db)
    with db.connection() as conn:
        conn.execute(
            "TRUNCATE provider_allocations, allocation_hours, allocation_daily, allocation_dirty_days, job_runs"
        )
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.append(ping({"scheduledTime": SCHEDULED}).status_code))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200, 200, 200]
    assert rows(db) == expected


@pytest.mark.parametrize(
    ("body", "token", "status", "message", "recorded"),
    [
        ({}, "wrong", 401, "bearer token", []),
        ({"scheduledtime": SCHEDULED}, None, 400, "scheduledtime", []),
        ({"scheduledTime": "last tuesday"}, None, 400, "scheduledTime", []),
        # Well-formed but naming nothing: the operator finds it in `finops runs`.
        ({"costJob": {"namespace": "finops", "name": "nope"}}, None, 404, "nope", [("failed", 404)]),
        ({"costJob": {"namespace": "../etc", "name": "x"}}, None, 400, "costJob", []),
    ],
    ids=["bad-token", "unknown-field", "bad-time", "unknown-costjob", "hostile-costjob"],
)
def test_bad_pings_change_nothing(
    ping: Pinger,
    db: Database,
    body: dict[str, Any],
    token: str | None,
    status: int,
    message: str,
    recorded: list[tuple[str, int]],
) -> None:
    response = ping(body, token=token) if token else ping(body)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]
    assert rows(db) == [] and ledger(db) == {}
    assert [(r["outcome"], r["http_status"]) for r in runs(db)] == recorded


def test_oversized_ping_is_refused(collect_url: str, db: Database) -> None:
    import httpx

    response = httpx.post(
        collect_url, content=b"{" + b" " * 70_000 + b"}", headers={"Authorization": "Bearer test-ping-token"}
    )
    assert response.status_code == 413 and rows(db) == []


def test_without_pricebooks_rows_are_stored_unpriced_and_the_run_is_partial(
    ping: Pinger, db: Database, kube: sandbox_kube.KubeServer
) -> None:
    books = kube.store.list("finops.stakater.com/v1alpha1", "pricebooks")
    for book in books:
        kube.store.delete(
            "finops.stakater.com/v1alpha1", "pricebooks", book["metadata"]["namespace"], book["metadata"]["name"]
        )
    try:
        response = ping({"scheduledTime": SCHEDULED})
    finally:
        kube.store.apply_manifests(books)
    assert response.status_code == 200
    assert response.json()["outcome"] == "partial" and "unpriced" in response.json()["warnings"][0]
    stored = rows(db)
    assert stored and {(r["pricebook_id"], r["currency"]) for r in stored} == {(None, None)}
    assert runs(db)[0]["outcome"] == "partial"


def test_an_invalid_active_pricebook_is_named_and_rows_are_kept(
    ping: Pinger, db: Database, kube: sandbox_kube.KubeServer
) -> None:
    original = kube.store.get("finops.stakater.com/v1alpha1", "pricebooks", "finops", "standard")
    assert original is not None
    kube.store.patch(
        "finops.stakater.com/v1alpha1", "pricebooks", "finops", "standard", {"spec": {"rates": {"cpuHour": "-0.5"}}}
    )
    try:
        response = ping({"scheduledTime": SCHEDULED})
    finally:
        kube.store.apply_manifests([original])
    assert response.json()["outcome"] == "partial"
    assert "spec.rates.cpuHour" in response.json()["warnings"][0]
    assert rows(db)


def test_a_ping_naming_a_costjob_records_the_execution(
    ping: Pinger, db: Database, kube: sandbox_kube.KubeServer
) -> None:
    ref = {"namespace": "finops", "name": "allocations"}
    assert ping({"scheduledTime": SCHEDULED, "costJob": ref}).status_code == 200
    status = kube.store.get("finops.stakater.com/v1alpha1", "costjobs", "finops", "allocations")["status"]  # type: ignore[index]
    assert status["lastExecutionStatus"] == "Success" and status["lastSuccessfulExecutionTime"]
    assert status["executionHistory"][0]["status"] == "Success"
    count = len(status["executionHistory"])
    for _ in range(11):
        ping({"scheduledTime": SCHEDULED, "costJob": ref})
    status = kube.store.get("finops.stakater.com/v1alpha1", "costjobs", "finops", "allocations")["status"]  # type: ignore[index]
    assert len(status["executionHistory"]) == 10 > count - 1


def test_a_run_failing_midway_keeps_its_whole_hours_and_the_next_completes(
    ping: Pinger, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    opencost.fail_next(status=502, times=2, after=2)  # hours 07 and 08 succeed; 09 fails twice
    response = ping({"scheduledTime": SCHEDULED})
    assert response.status_code == 503
    assert ledger(db) == {HOURS[0]: True, HOURS[1]: True}
    assert {r["hour"] for r in rows(db)} == {HOURS[0], HOURS[1]}
    assert verify(db) == []  # the failed run still rolled up the day of the hours it wrote
    first_two = rows(db)

    resumed = ping({"scheduledTime": SCHEDULED}).json()
    assert (resumed["hours_skipped"], resumed["hours_written"]) == (2, 2)
    assert ledger(db) == {HOURS[0]: True, HOURS[1]: True, HOURS[2]: True, HOURS[3]: False}
    assert [r for r in rows(db) if r["hour"] in HOURS[:2]] == first_two
    assert verify(db) == []


def test_finops_runs_lists_recent_outcomes_newest_first(ping: Pinger, database_url: str) -> None:
    import os
    import subprocess
    import sys

    ping({"scheduledTime": SCHEDULED})
    ping({"scheduledTime": "2026-11-20T11:00:00Z", "trigger": "manual"})
    finops = os.path.join(os.path.dirname(sys.executable), "finops")
    env = {**os.environ, "DATABASE_URL": database_url}
    out = subprocess.run(
        [finops, "runs", "--function", "collect_allocations", "--limit", "5"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = [line for line in out.splitlines() if "collect_allocations" in line]
    assert len(lines) == 2 and "manual" in lines[0] and "cron" in lines[1] and "success" in lines[0]
    migrate = subprocess.run([finops, "migrate"], env=env, capture_output=True, text=True, check=True).stdout
    assert "up to date" in migrate
    missing = subprocess.run(
        [finops, "runs"],
        env={k: v for k, v in env.items() if k != "DATABASE_URL"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode != 0 and "DATABASE_URL" in missing.stderr


def test_daily_rollups_follow_the_hours_exactly(ping: Pinger, db: Database) -> None:
    def totals() -> tuple[Any, Any]:
        with db.connection() as conn:
            hourly = conn.execute(
                "SELECT namespace, coalesce(team, '') AS team, sum(total_cost_micros) AS micros,"
                " count(DISTINCT hour) AS h FROM provider_allocations GROUP BY 1, 2 ORDER BY 1, 2"
            ).fetchall()
            daily = conn.execute(
                "SELECT namespace, team, sum(total_cost_micros) AS micros, max(hours) AS h"
                " FROM allocation_daily WHERE day = '2026-11-20' GROUP BY 1, 2 ORDER BY 1, 2"
            ).fetchall()
        return hourly, daily

    assert ping({"scheduledTime": SCHEDULED}).status_code == 200
    hourly, daily = totals()
    assert hourly == daily and {r["h"] for r in daily} == {4}
    assert ping({"scheduledTime": "2026-11-20T11:00:00Z"}).status_code == 200  # adds an hour, rewrites one
    hourly, daily = totals()
    assert hourly == daily and {r["h"] for r in daily} == {5}
    with db.connection() as conn:
        (row,) = conn.execute(
            "SELECT billed_core_hours, used_core_hours FROM allocation_daily"
            " WHERE namespace = 'search' AND entry_kind = 'workload'"
        ).fetchall()
    assert row["billed_core_hours"] >= row["used_core_hours"] > 0  # bursting above its request: billed = usage


def test_a_costjobs_timeouts_are_honoured_and_the_no_op_ones_reported(
    ping: Pinger, db: Database, kube: sandbox_kube.KubeServer, opencost: sandbox_opencost.OpenCostServer
) -> None:
    path = ("finops.stakater.com/v1alpha1", "costjobs", "finops", "allocations")
    original = kube.store.get(*path)
    assert original is not None
    kube.store.patch(
        *path,
        {
            "spec": {
                "openCostFetchTimeout": "300ms",
                "databaseInsertTimeout": "3m",
                "databaseViewsRefreshTimeout": "1m",
                "httpClientTimeout": "90s",
            }
        },
    )
    try:
        ok = ping({"scheduledTime": SCHEDULED, "costJob": {"namespace": "finops", "name": "allocations"}}).json()
        assert ok["costjob_timeouts"] == {"openCostFetchTimeout": 0.3, "databaseInsertTimeout": 180}
        assert ok["costjob_timeouts_ignored"] == ["databaseViewsRefreshTimeout", "httpClientTimeout"]
        # OpenCost slower than the CostJob's 300 ms (the function's own timeout is 1 s): the run fails.
        opencost.delay_next(0.6, times=2)
        slow = ping(
            {"scheduledTime": "2026-11-20T11:00:00Z", "costJob": {"namespace": "finops", "name": "allocations"}}
        )
        assert slow.status_code == 503 and "Timeout" in slow.json()["error"]
        status = kube.store.get(*path)["status"]  # type: ignore[index]
        assert status["executionHistory"][0]["status"] == "Failed" and status["lastExecutionStatus"] == "Failed"
    finally:
        kube.store.apply_manifests([original])
        opencost.reset()


def test_stored_costs_include_opencosts_adjustments(
    ping: Pinger, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    import httpx

    from finops.allocations import DEFAULT_AGGREGATION

    assert ping({"scheduledTime": SCHEDULED}).status_code == 200
    window = "2026-11-20T07:00:00Z,2026-11-20T08:00:00Z"
    params = {"window": window, "aggregate": DEFAULT_AGGREGATION, "accumulate": "true", "includeIdle": "true"}
    (sent,) = httpx.get(f"{opencost.url}/allocation", params=params, timeout=30).json(parse_float=Decimal)["data"]
    columns = {
        "cpu": "cpuCost",
        "gpu": "gpuCost",
        "ram": "ramCost",
        "pv": "pvCost",
        "network": "networkCost",
        "lb": "loadBalancerCost",
    }
    with db.connection() as conn:
        stored = {
            r["name"]: r
            for r in conn.execute(
                "SELECT name, " + ", ".join(f"{c}_cost_micros" for c in columns) + ", total_cost_micros"
                " FROM provider_allocations WHERE hour = %s",
                (HOURS[0],),
            )
        }
    assert set(stored) == set(sent)
    signs = set()
    for name, allocation in sent.items():
        for column, field in columns.items():
            cost, adjustment = Decimal(allocation[field]), Decimal(allocation[f"{field}Adjustment"])
            # OpenCost's figures have 5 decimals: (cost + adjustment) x 10^6 is a whole number of micros.
            assert stored[name][f"{column}_cost_micros"] == int((cost + adjustment) * 1_000_000), (name, column)
            signs.add((adjustment > 0) - (adjustment < 0))
        assert stored[name]["total_cost_micros"] == int(Decimal(allocation["totalCost"]) * 1_000_000)
    assert signs == {-1, 0, 1}  # the test scenario's credits and surcharges really are in the data
    # By hand, for cart (0.25 cores at 0.031611, a 10% credit): 7_902.75 - 790.275 micros, as OpenCost
    # rounds each figure to 5 decimals: 7_900 - 790.
    (cart,) = [n for n in sent if "/cart-" in n]
    assert stored[cart]["cpu_cost_micros"] == 7_110
