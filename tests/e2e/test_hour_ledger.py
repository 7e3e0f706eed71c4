"""We test these aspects of the hour ledger (``collect_allocations`` against the sandbox OpenCost
and Kubernetes API and a real PostgreSQL):

- a run killed with SIGKILL at any of many points, then the next runs, leaves every table (rows,
  ledger, rollups) exactly as an uninterrupted run's, and ``finops verify`` finds nothing;
- an outage longer than ``HOURS_LOOKBACK``: the next run fetches every hour OpenCost still has,
  gives up the older ones as lost with the reason (in the outcome and ``finops runs``), and no
  hour is final without data;
- an hour OpenCost answers empty stays open and is retried, and is lost only after the grace;
- ``finops collect --from/--to`` loads a range resumably and idempotently;
- the hourly ping stops starting hours once ``COLLECT_BUDGET_SECONDS`` is spent and answers
  ``remaining``; the next pings continue until nothing remains;
- ``finops verify`` finds a rollup or ledger that disagrees with the rows.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e.collect_driver import run_driver
from tests.e2e.conftest import Pinger
from usecases.verify import verify

FINOPS = str(Path(sys.executable).with_name("finops"))
# The killed run catches up 20:00 (open) to 02:00 across a UTC day boundary, so a kill can
# separate a day's hours from its rollup.
EARLIER = "2026-11-20T20:00:00Z"
SCHEDULED = "2026-11-21T03:00:00Z"
NEXT = "2026-11-21T04:00:00Z"


@pytest.fixture(scope="module")
def collector(stack: Any) -> Iterator[Callable[..., Pinger]]:
    """``collect_allocations`` served with extra settings, one process per distinct set."""
    from sandbox.localstack import serve_function

    served: dict[tuple[tuple[str, str], ...], str] = {}
    with contextlib.ExitStack() as started:

        def serve(**env: str) -> Pinger:
            key = tuple(sorted(env.items()))
            if key not in served:
                served[key] = started.enter_context(serve_function(stack, "collect_allocations", **env))
            return Pinger(served[key])

        yield serve


def driver(database_url: str, opencost: Any, kube: Any, cluster: str, scheduled: str, **flags: Any) -> Any:
    """One collector run in a process of its own (``tests/e2e/collect_driver.py``)."""
    env = {**os.environ, "DATABASE_URL": database_url, "OPENCOST_URL": opencost.url, "KUBE_API_URL": kube.url}
    return run_driver(env, "--cluster", cluster, "--scheduled", scheduled, **flags)


def snapshot(db: Database, cluster: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every table the collector writes, for one cluster, without what differs by run."""
    queries = {
        "rows": "SELECT namespace, name, hour, entry_kind, team, cost_center, total_cost_micros, cpu_cost_micros,"
        " ram_cost_micros, currency, is_finalized FROM provider_allocations WHERE cluster = %s"
        " ORDER BY hour, namespace, name",
        "ledger": "SELECT hour, state, row_count, currency, reason FROM allocation_hours"
        " WHERE cluster = %s ORDER BY hour",
        "rollups": "SELECT day, namespace, entry_kind, team, cost_center, currency, hours, total_cost_micros,"
        " cpu_cost_micros, billed_core_hours, used_gib_hours FROM allocation_daily WHERE cluster = %s"
        " ORDER BY day, namespace, entry_kind, team, cost_center",
        "dirty": "SELECT day FROM allocation_dirty_days WHERE cluster = %s",
    }
    with db.connection() as conn:
        return {name: [tuple(r.values()) for r in conn.execute(sql, (cluster,))] for name, sql in queries.items()}


def test_a_run_killed_at_any_point_ends_as_an_uninterrupted_one(
    db: Database, database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> None:
    for scheduled in (EARLIER, SCHEDULED, NEXT):
        assert driver(database_url, opencost, kube, "clean", scheduled).returncode == 0
    expected = snapshot(db, "clean")
    assert expected["rows"] and expected["rollups"] and not expected["dirty"]
    assert driver(database_url, opencost, kube, "count", EARLIER).returncode == 0
    counted = driver(database_url, opencost, kube, "count", SCHEDULED, count=True)
    total = int(counted.stdout.strip())
    # Spread over the whole run: pricing, every other part of an hour's transaction, the day marks,
    # the rollups at the end (the last statements), and the very last one. Each point costs three
    # driver processes (about 7 s of CPU), so not every statement.
    points = sorted({2, 4, 7, 9, 11, total // 2, total - 3, total})
    for point in points:
        cluster = f"killed-{point}"
        assert driver(database_url, opencost, kube, cluster, EARLIER).returncode == 0
        killed = driver(database_url, opencost, kube, cluster, SCHEDULED, kill_at=point)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        # The CronJob's next hourly run (the killed one is not retried: the worst case).
        assert driver(database_url, opencost, kube, cluster, NEXT).returncode == 0
        assert verify(db, cluster) == [], point
        assert snapshot(db, cluster) == expected, f"killed before statement {point} of {total}"


def ledger_states(db: Database) -> dict[datetime, tuple[str, str | None]]:
    with db.connection() as conn:
        return {r["hour"]: (r["state"], r["reason"]) for r in conn.execute("SELECT * FROM allocation_hours")}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def test_an_outage_longer_than_the_lookback_is_caught_up_and_older_hours_are_lost(ping: Pinger, db: Database) -> None:
    # HOURS_LOOKBACK=3 (the fixture). First run: 07..09 final, 10 open.
    assert ping({"scheduledTime": "2026-11-20T10:00:00Z"}).status_code == 200
    # 30 hours later: every hour since is fetched, although far beyond the lookback.
    after = ping({"scheduledTime": "2026-11-21T16:00:00Z"}).json()
    assert after["outcome"] == "success", after
    states = ledger_states(db)
    hours = [at("2026-11-20T07:00Z") + timedelta(hours=n) for n in range(34)]
    assert sorted(states) == hours
    assert {states[h][0] for h in hours[:-1]} == {"final"} and states[hours[-1]][0] == "open"
    assert after["hours_written"] == 31 and after["hours_lost"] == 0
    assert verify(db) == []


def test_hours_opencost_no_longer_has_are_lost_with_the_reason(collector: Any, db: Database, database_url: str) -> None:
    history_ping = collector(HOURS_LOOKBACK="3", OPENCOST_HISTORY_HOURS="12", OPENCOST_RETRIES="1")
    # OPENCOST_HISTORY_HOURS=12: a run 30 hours after the last one can only fetch 12 of them.
    assert history_ping({"scheduledTime": "2026-11-20T10:00:00Z"}).status_code == 200
    body = history_ping({"scheduledTime": "2026-11-21T16:00:00Z"}).json()
    assert body["outcome"] == "partial" and body["hours_lost"] == 18  # 10:00 (was open) .. 03:00
    assert body["lost"] == "2026-11-20T10:00Z..2026-11-21T03:00Z"
    assert "18 hour(s) lost" in body["warnings"][0] and "OPENCOST_HISTORY_HOURS (12 h)" in body["warnings"][0]
    states = ledger_states(db)
    assert {states[at("2026-11-21T03:00Z")][0], states[at("2026-11-20T10:00Z")][0]} == {"lost"}
    assert states[at("2026-11-21T04:00Z")][0] == "final"
    # Nothing lost is final, nothing without data is final.
    with db.connection() as conn:
        empty_final = conn.execute(
            "SELECT count(*) AS n FROM allocation_hours WHERE state = 'final' AND row_count = 0"
        ).fetchone()
    assert empty_final is not None and empty_final["n"] == 0
    env = {**os.environ, "DATABASE_URL": database_url}
    runs = subprocess.run(
        [FINOPS, "runs", "--function", "collect_allocations"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "hours_lost=18" in runs and "partial" in runs
    # Settled hours are not asked for again; the lost ones stay lost.
    again = history_ping({"scheduledTime": "2026-11-21T17:00:00Z"}).json()
    assert again["hours_lost"] == 0 and again["hours_written"] == 2


EMPTY = b'{"code": 200, "status": "success", "data": [{}]}'


def test_an_empty_answer_stays_open_and_is_lost_only_after_the_grace(
    collector: Any, ping: Pinger, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    grace_ping = collector(HOURS_LOOKBACK="3", EMPTY_HOUR_GRACE_HOURS="720")
    # EMPTY_HOUR_GRACE_HOURS=720: an hour of 2026-11-20 is still within its grace today.
    opencost.malformed_next(body=EMPTY, times=1)  # the oldest hour (07:00) answers empty once
    first = grace_ping({"scheduledTime": "2026-11-20T10:00:00Z"}).json()
    assert first["outcome"] == "partial" and first["hours_empty"] == 1 and first["hours_lost"] == 0, first
    assert "answered empty" in first["warnings"][-1]
    states = ledger_states(db)
    assert states[at("2026-11-20T07:00Z")] == ("open", "OpenCost answered no allocations (retried by the next run)")
    # Retried by the next run, which gets data: final.
    grace_ping({"scheduledTime": "2026-11-20T11:00:00Z"})
    assert ledger_states(db)[at("2026-11-20T07:00Z")][0] == "final"
    # With the default grace (6 h after the hour), an hour of 2026-11-20 answered empty is lost at
    # once; the rows it had (11:00 was open, with rows) are kept: no data is lost.
    opencost.malformed_next(body=EMPTY, times=1)
    body = ping({"scheduledTime": "2026-11-20T13:00:00Z"}).json()
    states = ledger_states(db)
    assert states[at("2026-11-20T11:00Z")][0] == "lost" and body["hours_lost"] == 1
    assert "after the hour ended" in (states[at("2026-11-20T11:00Z")][1] or "")
    with db.connection() as conn:
        kept = conn.execute(
            "SELECT count(*) AS n FROM provider_allocations WHERE hour = '2026-11-20T11:00Z'"
        ).fetchone()
    assert kept is not None and kept["n"] > 0
    assert verify(db) == []


def test_finops_collect_loads_a_range_resumably(
    db: Database, database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "OPENCOST_URL": opencost.url,
        "KUBE_API_URL": kube.url,
        "CLUSTER_ID": "history",
        "OPENCOST_RETRIES": "0",
    }
    argv = [FINOPS, "collect", "--from", "2026-11-01", "--to", "2026-11-03"]
    opencost.fail_next(status=500, times=1, after=20)  # the first load fails midway
    failed = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert failed.returncode != 0 and "500" in failed.stderr
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "written=28, skipped=20, empty=0, lost=0"  # resumed where it stopped
    states = {h: s for h, (s, _) in ledger_states(db).items()}
    assert len(states) == 48 and set(states.values()) == {"final"}
    before = snapshot(db, "history")
    again = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert again.stdout.strip() == "written=0, skipped=48, empty=0, lost=0"
    assert snapshot(db, "history") == before and not before["dirty"]
    assert verify(db, "history") == []


def test_finops_verify_finds_rollups_and_ledgers_that_disagree_with_the_rows(
    ping: Pinger, db: Database, database_url: str
) -> None:
    assert ping({"scheduledTime": "2026-11-20T10:00:00Z"}).status_code == 200
    env = {**os.environ, "DATABASE_URL": database_url}
    ok = subprocess.run([FINOPS, "verify"], env=env, capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and "agree" in ok.stderr
    with db.connection() as conn:
        conn.execute("UPDATE allocation_daily SET total_cost_micros = total_cost_micros + 1 WHERE namespace = 'shop'")
        conn.execute("DELETE FROM provider_allocations WHERE hour = '2026-11-20T08:00Z' AND namespace = 'search'")
    bad = subprocess.run([FINOPS, "verify"], env=env, capture_output=True, text=True, check=False)
    assert bad.returncode == 4  # a failed check
    assert "2026-11-20T08:00Z: ledger says final" in bad.stdout
    assert "'shop'" in bad.stdout and "stale in allocation_daily" in bad.stdout


def test_a_history_load_through_the_ping_is_bounded_and_resumed_until_nothing_remains(
    collector: Any, db: Database, database_url: str
) -> None:
    pinger = collector(COLLECT_BUDGET_SECONDS="0.001")  # every invocation writes one hour
    budget_url = pinger.url
    bad = pinger({"from": "2026-11-02T00:00:00Z"})
    assert bad.status_code == 400 and "to: required" in bad.json()["error"]
    first = pinger({"from": "2026-11-02T00:00:00Z", "to": "2026-11-02T06:00:00Z"}).json()
    assert (first["hours_written"], first["remaining"], first["outcome"]) == (1, 5, "partial")
    assert "time budget spent" in first["warnings"][-1]
    env = {**os.environ, "DATABASE_URL": database_url, "PING_TOKEN": "test-ping-token"}
    argv = [FINOPS, "collect", "--url", budget_url, "--from", "2026-11-02", "--to", "2026-11-02T06:00:00Z"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "written=5, skipped=1, empty=0, lost=0"
    assert [s for s, _ in ledger_states(db).values()] == ["final"] * 6
    assert verify(db) == []


def test_the_hourly_ping_is_bounded_by_the_budget_and_the_next_pings_finish(collector: Any, db: Database) -> None:
    pinger = collector(COLLECT_BUDGET_SECONDS="0.001")  # a budget spent at once: one hour per call
    ping = {"scheduledTime": "2026-11-20T10:00:00Z"}  # HOURS_LOOKBACK=5: 05..09, then 10 (open)
    first = pinger(ping).json()
    assert (first["hours_written"], first["remaining"], first["outcome"]) == (1, 5, "partial"), first
    assert "time budget spent: 5 hour(s) remain" in first["warnings"][-1]
    assert [s for s, _ in ledger_states(db).values()] == ["final"]  # the rest stays unsettled
    answers = [pinger(ping).json() for _ in range(5)]
    assert [a["remaining"] for a in answers] == [4, 3, 2, 1, 0]
    assert answers[-1]["outcome"] == "success" and answers[-1]["warnings"] == []
    states = ledger_states(db)
    assert len(states) == 6 and states[at("2026-11-20T10:00:00Z")][0] == "open"
    assert {s for hour, (s, _) in states.items() if hour < at("2026-11-20T10:00:00Z")} == {"final"}
    assert verify(db) == []


def test_a_report_rebuilds_the_days_a_killed_run_left_marked(ping: Pinger, db: Database, database_url: str) -> None:
    assert ping({"scheduledTime": "2026-11-20T10:00:00Z"}).status_code == 200
    with db.connection() as conn:  # as a run killed between an hour's commit and the rollup
        conn.execute("UPDATE allocation_daily SET total_cost_micros = 0 WHERE namespace = 'shop'")
        conn.execute(
            "INSERT INTO allocation_dirty_days SELECT DISTINCT cluster, aggregation, day FROM allocation_daily"
        )
    assert verify(db) != []
    env = {**os.environ, "DATABASE_URL": database_url}
    report = subprocess.run(
        [FINOPS, "report", "unlabelled", "--month", "2026-11", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert report.returncode == 0, report.stderr
    assert verify(db) == []
