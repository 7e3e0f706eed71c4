"""We test the database side of the webhook's 202 (one round trip) and the gateway it goes through
(``infra.postgres.database``: psycopg's pool) on a real PostgreSQL:

- a new webhook stores its sync event and its run's ``job_runs`` row in one transaction (one
  statement), the run's counts completed with the event's id and ``replay``;
- a replay finds the stored event and records its own run;
- a webhook the statement refuses raises the driver's error and stores neither its event nor its run;
- many threads at once: every event once, every run recorded, one new webhook per event;
- a replay's stored event is found through the unique key's index, never by scanning the table
  (the statement's cost must not grow with the events stored);
- a webhook racing an uncommitted twin (same event) falls back: the twin's event, run not recorded;
- a run recorded early that fails afterwards has its row replaced by the failure;
- a verb without a connection runs in autocommit and gives the connection back in transaction mode;
- a named query through the pool: dict rows, a ``dict`` parameter stored as ``jsonb``, ``fetch_one``
  of nothing is None, ``execute`` counts the rows;
- sessions run with the configured timeouts; behind PgBouncer (``pool="null"``) they hold for the
  statement's transaction only, and no statement is prepared (a session prepares the ones it runs
  often);
- a statement PostgreSQL refuses leaves the pooled connection usable, in either mode;
- the pool checks a connection idle longer than ``RECENTLY_USED_SECONDS`` before handing it out
  (one the server killed is replaced), and not one used a moment ago (its use fails once), nor one
  ``Database.check`` has just checked (a forked worker's first request after its background
  connect);
- a server that is not there is a 503 naming the cause, without the address or the credentials; a
  malformed DSN is a configuration error without the password; a caller waits at most the pool's
  timeout for a connection another thread holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from typing import Any

import psycopg
import psycopg_pool
import pytest
from psycopg.types.json import Jsonb

from finops.errors import DatabaseUnavailable, InvalidInput
from infra.postgres import Database, common, connect
from infra.postgres.common import QUERIES, Timeouts
from infra.settings import ConfigError
from tests.net import refused_port
from usecases.appcost import syncs
from usecases.appcost.syncs import SyncEvent, accept, accept_recorded
from usecases.runs import Run, record_of, recorded_run


def event(revision: str = "abc123") -> SyncEvent:
    return SyncEvent(
        cluster="test",
        app_namespace="argocd",
        app_name="web",
        project="default",
        destination_namespace="shop",
        revision=revision,
        finished_at=datetime(2026, 11, 29, 10, tzinfo=UTC),
        resources=[{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"}],
    )


def webhook_run() -> Run:
    run = Run(function="on_sync", cluster="test", trigger="argocd", http_status=202)
    run.counts = {"app": "argocd:web", "revision": "abc123"}
    return run


def job_run(db: Database, run_id: str) -> dict[str, Any] | None:
    with db.connection() as conn:
        return conn.execute("SELECT *, xmin::text AS tx FROM job_runs WHERE run_id = %s", (run_id,)).fetchone()


def test_a_new_webhook_stores_its_event_and_its_run_in_one_transaction(db: Database) -> None:
    run = webhook_run()
    event_id, status, new, recorded = accept_recorded(db, event(), record_of(run))
    assert (status, new, recorded) == ("pending", True, True)
    row = job_run(db, run.run_id)
    assert row is not None
    assert (row["outcome"], row["http_status"], row["trigger"]) == ("success", 202, "argocd")
    assert row["counts"] == {"app": "argocd:web", "revision": "abc123", "sync_event": event_id, "replay": False}
    with db.connection() as conn:
        stored = conn.execute("SELECT xmin::text AS tx FROM sync_events WHERE id = %s", (event_id,)).fetchone()
    assert stored is not None and stored["tx"] == row["tx"]


def test_a_replay_finds_the_stored_event_and_records_its_own_run(db: Database) -> None:
    first_id, _, _, _ = accept_recorded(db, event(), record_of(webhook_run()))
    again = webhook_run()
    event_id, status, new, recorded = accept_recorded(db, event(), record_of(again))
    assert (event_id, status, new, recorded) == (first_id, "pending", False, True)
    row = job_run(db, again.run_id)
    assert row is not None and row["counts"]["replay"] is True and row["counts"]["sync_event"] == first_id


def test_a_webhook_the_statement_refuses_raises_the_drivers_error_and_stores_nothing(db: Database) -> None:
    bad = {**record_of(webhook_run()), "outcome": "not-an-outcome"}  # job_runs' CHECK refuses it
    with pytest.raises(psycopg.errors.CheckViolation):  # a 500: a bug, not a 503
        accept_recorded(db, event(), bad)
    assert job_run(db, bad["run_id"]) is None
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM sync_events").fetchone() == {"n": 0}
    assert accept_recorded(db, event(), record_of(webhook_run()))[1:] == ("pending", True, True)


def test_many_concurrent_webhooks_store_every_event_once_and_every_run(db: Database) -> None:
    runs = [webhook_run() for _ in range(60)]
    results: dict[int, tuple[int, str, bool, bool]] = {}

    def call(n: int) -> None:
        results[n] = accept_recorded(db, event(f"r{n % 20}"), record_of(runs[n]))
        if not results[n][3]:  # a twin was committing the same event: the edge records the run, as here
            runs[n].counts.update(sync_event=results[n][0], replay=True)
            db.execute("insert_job_run", **record_of(runs[n]))

    threads = [threading.Thread(target=call, args=(n,)) for n in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 60
    by_revision: dict[int, set[int]] = {}
    for n, (event_id, _, _, _) in results.items():
        by_revision.setdefault(n % 20, set()).add(event_id)
    assert all(len(ids) == 1 for ids in by_revision.values())
    assert sum(new for _, _, new, _ in results.values()) == 20  # one new webhook per event
    with db.connection() as conn:
        row = conn.execute("SELECT count(*) AS n FROM sync_events").fetchone()
        replays = conn.execute("SELECT count(*) AS n FROM job_runs WHERE (counts->>'replay')::boolean").fetchone()
    assert row is not None and row["n"] == 20
    assert replays is not None and replays["n"] == 40


def test_a_replays_stored_event_is_found_by_index_not_by_scanning_the_table(db: Database) -> None:
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO sync_events (cluster, app_namespace, app_name, destination_namespace, revision, finished_at)"
            " SELECT 'test', 'argocd', 'app-' || n, 'shop', 'r', now() FROM generate_series(1, 5000) AS n"
        )
        conn.execute("ANALYZE sync_events")
    params = {**syncs._row(event()), "resources": Jsonb(syncs._row(event())["resources"])}
    with db.connection() as conn:
        plan = conn.execute(
            f"EXPLAIN {QUERIES['accept_sync_webhook']}", {**params, "run": syncs._json(record_of(webhook_run()))}
        ).fetchall()
        conn.rollback()
    text = "\n".join(row["QUERY PLAN"] for row in plan)
    assert "Seq Scan on sync_events" not in text, text
    assert "Index Scan using sync_events_cluster_app_namespace_app_name_revision" in text, text


def test_a_webhook_racing_an_uncommitted_twin_falls_back_without_recording(db: Database, database_url: str) -> None:
    twin = psycopg.connect(database_url)
    try:
        twin.execute(
            "INSERT INTO sync_events (cluster, app_namespace, app_name, destination_namespace, revision, finished_at)"
            " VALUES ('test', 'argocd', 'web', 'shop', 'abc123', %s)",
            (datetime(2026, 11, 29, 10, tzinfo=UTC),),
        )
        run = webhook_run()
        result: list[tuple[int, str, bool, bool]] = []
        racer = threading.Thread(target=lambda: result.append(accept_recorded(db, event(), record_of(run))))
        racer.start()
        deadline = time.monotonic() + 30
        while not _waiting_on_a_lock(database_url):  # the racer's insert waits for the twin's transaction
            assert time.monotonic() < deadline, "the racing insert never waited for its twin"
            time.sleep(0.01)
        twin.commit()
        racer.join(30)
    finally:
        twin.close()
    ((event_id, status, new, recorded),) = result
    assert (status, new, recorded) == ("pending", False, False)
    assert accept(db, event())[0] == event_id
    assert job_run(db, run.run_id) is None  # the edge records it (recorded False)


def _waiting_on_a_lock(dsn: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return row is not None and row[0] > 0


def test_a_run_recorded_early_that_fails_afterwards_is_replaced_by_the_failure(db: Database) -> None:
    with pytest.raises(InvalidInput), recorded_run("on_sync", "test") as run:
        run.db, run.http_status, run.counts = db, 202, {"app": "argocd:web"}
        _, _, _, run.recorded = accept_recorded(db, event(), record_of(run))
        raise InvalidInput("something after the statement failed")
    row = job_run(db, run.run_id)
    assert row is not None
    assert (row["outcome"], row["http_status"]) == ("failed", 400)
    assert row["error"] == "something after the statement failed"


def test_a_verb_without_a_connection_autocommits_and_gives_it_back_in_transaction_mode(database_url: str) -> None:
    db = connect(database_url, max_size=1)
    try:
        run = webhook_run()
        db.execute("insert_job_run", **record_of(run))
        with db.connection() as conn:
            assert conn.autocommit is False
            status = conn.execute("SELECT 1").fetchone()
            assert status is not None and conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        with psycopg.connect(database_url) as other:
            assert other.execute("SELECT 1 FROM job_runs WHERE run_id = %s", (run.run_id,)).fetchone() is not None
    finally:
        db.close()


def _kill_pooled_connection(db: Database, database_url: str) -> None:
    with db.connection() as conn:
        pid = conn.info.backend_pid
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_connection_idle_for_a_while_is_checked_and_replaced_if_dead(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common, "RECENTLY_USED_SECONDS", 0.0)  # every connection counts as idle
    db = connect(database_url, max_size=1)
    try:
        _kill_pooled_connection(db, database_url)
        db.fetch_one("recent_job_runs", function=None, limit=1)  # no error: checked, replaced
        with db.connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
    finally:
        db.close()


def test_a_connection_used_a_moment_ago_is_not_checked_so_a_dead_one_fails_once(database_url: str) -> None:
    db = connect(database_url, max_size=1)
    try:
        _kill_pooled_connection(db, database_url)
        with pytest.raises(DatabaseUnavailable):
            db.fetch_one("recent_job_runs", function=None, limit=1)
        with db.connection() as conn:  # the pool dropped the broken connection
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
    finally:
        db.close()


def test_a_connection_just_checked_is_handed_out_without_another_check(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = connect(database_url, max_size=1)
    try:
        db.check(10)
        checked: list[object] = []
        monkeypatch.setattr(psycopg_pool.ConnectionPool, "check_connection", staticmethod(checked.append))
        db.fetch_one("recent_job_runs", function=None, limit=1)
        assert checked == []
    finally:
        db.close()


SETTINGS = """SELECT current_setting('TimeZone') AS zone, current_setting('statement_timeout') AS statement,
                     current_setting('lock_timeout') AS lock"""


def a_run(outcome: str = "success") -> dict[str, Any]:
    run = Run(function="on_sync", cluster="test", trigger="argocd", http_status=202, outcome=outcome)
    run.counts = {"app": "argocd:web", "nested": {"list": [1, "two", None]}, "replay": False}
    return record_of(run)


def test_a_named_query_reads_dict_rows_and_stores_a_dict_as_jsonb(db: Database) -> None:
    record = a_run()
    assert db.execute("insert_job_run", **record) == 1
    row = db.fetch_one("recent_job_runs", function="on_sync", limit=5)
    assert row is not None and row["counts"] == record["counts"] and str(row["run_id"]) == record["run_id"]
    assert db.fetch_all("recent_job_runs", function="on_sync", limit=5) == [row]
    assert db.fetch_one("recent_job_runs", function="nobody", limit=5) is None
    assert db.fetch_all("recent_job_runs", function="nobody", limit=5) == []


@pytest.mark.parametrize("pool", ["pool", "null"])
def test_sessions_run_with_the_configured_timeouts_behind_pgbouncer_per_transaction(
    database_url: str, pool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(common.QUERIES, "test_settings", SETTINGS)
    with closing(connect(database_url, pool=pool, max_size=1, timeouts=Timeouts(7, 70))) as db:
        row = db.fetch_one("test_settings")
        assert row == {"zone": "UTC", "statement": "70s", "lock": "7s"}
        with db.connection() as conn:
            assert db.fetch_one("test_settings", conn) == {"zone": "UTC", "statement": "70s", "lock": "7s"}
            conn.commit()  # behind PgBouncer the next transaction may run on another server connection
            after = conn.execute(SETTINGS).fetchone()
        assert after is not None and after["zone"] == "UTC"
        assert (after["statement"], after["lock"]) == (("70s", "7s") if pool == "pool" else ("0", "0"))


@pytest.mark.parametrize("pool", ["pool", "null"])
def test_a_session_prepares_the_queries_it_runs_often_but_not_behind_pgbouncer(
    database_url: str, pool: str, db: Database
) -> None:
    with closing(connect(database_url, pool=pool, max_size=1)) as one, one.connection() as conn:
        for _ in range(6):  # psycopg prepares a query on its fifth run in a session
            assert one.fetch_all("recent_job_runs", conn, function=None, limit=1) == []
        prepared = conn.execute("SELECT count(*) AS n FROM pg_prepared_statements").fetchone()
    assert prepared == {"n": 0 if pool == "null" else 1}


@pytest.mark.parametrize("pool", ["pool", "null"])
def test_a_refused_statement_is_the_drivers_error_and_the_connection_stays_usable(
    database_url: str, db: Database, pool: str
) -> None:
    with closing(connect(database_url, pool=pool, max_size=1)) as one:
        with pytest.raises(psycopg.errors.CheckViolation):  # job_runs' CHECK on the outcome
            one.execute("insert_job_run", **a_run("not-an-outcome"))
        assert one.execute("insert_job_run", **a_run()) == 1
    assert len(db.fetch_all("recent_job_runs", function="on_sync", limit=5)) == 1


def test_a_missing_server_is_a_503_without_address_or_credentials() -> None:
    with refused_port() as port:
        db = connect(f"postgresql://finops:hunter2-secret@127.0.0.1:{port}/nowhere", max_size=1, timeout=2)
        try:
            calls: list[Callable[[], object]] = [
                lambda: db.check(2),
                lambda: db.fetch_one("recent_job_runs", function=None, limit=1),
            ]
            for call in calls:
                with pytest.raises(DatabaseUnavailable) as raised:
                    call()
                message = raised.value.message
                assert message.startswith("PostgreSQL is unavailable: ") and "refused" in message
                assert "hunter2" not in message and "127.0.0.1" not in message and str(port) not in message
        finally:
            db.close()


def test_a_malformed_dsn_is_a_configuration_error_without_the_password() -> None:
    with pytest.raises(ConfigError) as raised:
        connect("host=db password=hunter2-secret port='unterminated")
    assert "DATABASE_URL" in str(raised.value) and "hunter2" not in str(raised.value)


def test_a_caller_waits_at_most_the_timeout_for_the_connection_another_holds(database_url: str) -> None:
    quick = connect(database_url, max_size=1, timeout=0.2)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with quick.connection():
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        with pytest.raises(DatabaseUnavailable, match=r"no connection within 0\.2 s"):
            quick.fetch_one("recent_job_runs", function=None, limit=1)
    finally:
        release.set()
        holder.join(30)
        quick.close()
