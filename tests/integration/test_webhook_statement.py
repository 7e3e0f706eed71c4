"""We test the database side of the webhook's 202 (one round trip) on a real PostgreSQL, through
the webhook's own gateway (``infra.postgres.lean``, psycopg2) and the pooled one (psycopg) alike:

- a new webhook stores its sync event and its run's ``job_runs`` row in one transaction (one
  statement), the run's counts completed with the event's id and ``replay``;
- a replay finds the stored event and records its own run;
- concurrent webhooks stored as a group (group commit): one transaction for all, each distinct
  event once, the group's second webhook of an event a replay, every run recorded with its event;
  a webhook the group's statement refuses fails alone, the others are stored;
- many threads at once, through the group commit: every event once, every run recorded;
- a replay's stored event is found through the unique key's index, never by scanning the table
  (the statement's cost must not grow with the events stored);
- a webhook racing an uncommitted twin (same event) falls back: the twin's event, run not recorded;
- a run recorded early that fails afterwards has its row replaced by the failure;
- a verb without a connection runs in autocommit and gives the connection back in transaction mode;
- the pool checks a connection idle longer than ``RECENTLY_USED_SECONDS`` before handing it out
  (one the server killed is replaced), and not one used a moment ago (its use fails once), nor one
  ``Database.check`` has just checked (a forked worker's first request after its background
  connect).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import psycopg_pool
import pytest

from finops.errors import DatabaseUnavailable, InvalidInput
from infra.postgres import Database, common, connect
from infra.postgres.common import QUERIES, Statements
from infra.postgres.lean import LeanDatabase
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


@pytest.fixture(params=["lean", "pooled"])
def gateway(request: pytest.FixtureRequest, db: Database, database_url: str) -> Iterator[Statements]:
    """The webhook's statements through ``infra.postgres.lean`` (as served), or the pool (``db``)."""
    if request.param == "pooled":
        yield db
        return
    lean = LeanDatabase(database_url)
    yield lean
    lean.close()


def job_run(db: Database, run_id: str) -> dict[str, Any] | None:
    with db.connection() as conn:
        return conn.execute("SELECT *, xmin::text AS tx FROM job_runs WHERE run_id = %s", (run_id,)).fetchone()


def test_a_new_webhook_stores_its_event_and_its_run_in_one_transaction(gateway: Statements, db: Database) -> None:
    run = webhook_run()
    event_id, status, new, recorded = accept_recorded(gateway, event(), record_of(run))
    assert (status, new, recorded) == ("pending", True, True)
    row = job_run(db, run.run_id)
    assert row is not None
    assert (row["outcome"], row["http_status"], row["trigger"]) == ("success", 202, "argocd")
    assert row["counts"] == {"app": "argocd:web", "revision": "abc123", "sync_event": event_id, "replay": False}
    with db.connection() as conn:
        stored = conn.execute("SELECT xmin::text AS tx FROM sync_events WHERE id = %s", (event_id,)).fetchone()
    assert stored is not None and stored["tx"] == row["tx"]


def test_a_replay_finds_the_stored_event_and_records_its_own_run(gateway: Statements, db: Database) -> None:
    first_id, _, _, _ = accept_recorded(gateway, event(), record_of(webhook_run()))
    again = webhook_run()
    event_id, status, new, recorded = accept_recorded(gateway, event(), record_of(again))
    assert (event_id, status, new, recorded) == (first_id, "pending", False, True)
    row = job_run(db, again.run_id)
    assert row is not None and row["counts"]["replay"] is True and row["counts"]["sync_event"] == first_id


def test_a_group_of_webhooks_is_stored_by_one_statement_each_event_once(gateway: Statements, db: Database) -> None:
    runs = [webhook_run() for _ in range(4)]
    items = [(event("r1"), record_of(runs[0])), (event("r2"), record_of(runs[1]))]
    items += [(event("r1"), record_of(runs[2])), (event("r3"), record_of(runs[3]))]
    accepted = syncs._accept_group(gateway, items)
    assert all(isinstance(a, tuple) for a in accepted)
    ids = [a[0] for a in accepted if isinstance(a, tuple)]
    assert ids[0] == ids[2] and len({ids[0], ids[1], ids[3]}) == 3
    new = [a[2] for a in accepted if isinstance(a, tuple)]
    assert new == [True, True, False, True]  # the group's second webhook of r1 is a replay
    assert {a[1:4:2] for a in accepted if isinstance(a, tuple)} == {("pending", True)}  # status, recorded
    rows = [job_run(db, run.run_id) for run in runs]
    assert [(r["counts"]["sync_event"], r["counts"]["replay"]) for r in rows if r] == [
        (ids[0], False),
        (ids[1], False),
        (ids[0], True),
        (ids[3], False),
    ]
    with db.connection() as conn:
        stored = conn.execute("SELECT revision, xmin::text AS tx FROM sync_events ORDER BY id").fetchall()
    assert [r["revision"] for r in stored] == ["r1", "r2", "r3"]
    assert {r["tx"] for r in stored} | {r["tx"] for r in rows if r} == {stored[0]["tx"]}  # one transaction


def test_a_webhook_the_groups_statement_refuses_fails_alone(gateway: Statements, db: Database) -> None:
    good, bad = webhook_run(), webhook_run()
    bad_record = {**record_of(bad), "outcome": "not-an-outcome"}  # job_runs' CHECK refuses it
    accepted = syncs._accept_group(gateway, [(event("r1"), record_of(good)), (event("r2"), bad_record)])
    assert isinstance(accepted[0], tuple) and accepted[0][1:] == ("pending", True, True)
    assert type(accepted[1]).__name__ == "CheckViolation"  # the driver's error, raised to its caller alone
    assert job_run(db, good.run_id) is not None and job_run(db, bad.run_id) is None
    with db.connection() as conn:
        assert [r["revision"] for r in conn.execute("SELECT revision FROM sync_events").fetchall()] == ["r1"]


def test_a_webhook_whose_fallback_fails_fails_alone(gateway: Statements, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group's event committed by another process after the statement's snapshot is read back
    alone (``accept``); if that read fails, only its webhook fails: the others are committed."""
    real = gateway.fetch_all

    def twin_committed_r2(query: str, /, **params: Any) -> list[dict[str, Any]]:
        rows = real(query, **params)
        return [{**r, "id": None} if r["n"] == 1 else r for r in rows]  # as if r2's twin had won

    def unavailable(db: Statements, event: SyncEvent) -> tuple[int, str, bool]:
        raise DatabaseUnavailable("PostgreSQL is unavailable: gone")

    monkeypatch.setattr(gateway, "fetch_all", twin_committed_r2)
    monkeypatch.setattr(syncs, "accept", unavailable)
    good, other = webhook_run(), webhook_run()
    accepted = syncs._accept_group(gateway, [(event("r1"), record_of(good)), (event("r2"), record_of(other))])
    assert isinstance(accepted[0], tuple) and accepted[0][1:] == ("pending", True, True)
    assert isinstance(accepted[1], DatabaseUnavailable)


def test_many_concurrent_webhooks_store_every_event_once_and_every_run(gateway: Statements, db: Database) -> None:
    runs = [webhook_run() for _ in range(60)]
    results: dict[int, tuple[int, str, bool, bool]] = {}

    def call(n: int) -> None:
        results[n] = accept_recorded(gateway, event(f"r{n % 20}"), record_of(runs[n]))

    threads = [threading.Thread(target=call, args=(n,)) for n in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 60
    by_revision: dict[int, set[int]] = {}
    for n, (event_id, _, _, recorded) in results.items():
        assert recorded
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
    items = [(event(f"r{n}"), record_of(webhook_run())) for n in range(3)]
    events = syncs._json([{"n": n, **syncs._row(e)} for n, (e, _) in enumerate(items)])
    runs = syncs._json([{"event": n, "first": True, **r} for n, (_, r) in enumerate(items)])
    with db.connection() as conn:
        plan = conn.execute(f"EXPLAIN {QUERIES['accept_sync_webhooks']}", {"events": events, "runs": runs}).fetchall()
        conn.rollback()
    text = "\n".join(row["QUERY PLAN"] for row in plan)
    assert "Seq Scan on sync_events" not in text, text
    assert "Index Scan using sync_events_cluster_app_namespace_app_name_revision" in text, text


def test_a_webhook_racing_an_uncommitted_twin_falls_back_without_recording(
    gateway: Statements, db: Database, database_url: str
) -> None:
    twin = psycopg.connect(database_url)
    try:
        twin.execute(
            "INSERT INTO sync_events (cluster, app_namespace, app_name, destination_namespace, revision, finished_at)"
            " VALUES ('test', 'argocd', 'web', 'shop', 'abc123', %s)",
            (datetime(2026, 11, 29, 10, tzinfo=UTC),),
        )
        run = webhook_run()
        result: list[tuple[int, str, bool, bool]] = []
        racer = threading.Thread(target=lambda: result.append(accept_recorded(gateway, event(), record_of(run))))
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


def test_a_run_recorded_early_that_fails_afterwards_is_replaced_by_the_failure(
    gateway: Statements, db: Database
) -> None:
    with pytest.raises(InvalidInput), recorded_run("on_sync", "test") as run:
        run.db, run.http_status, run.counts = gateway, 202, {"app": "argocd:web"}
        _, _, _, run.recorded = accept_recorded(gateway, event(), record_of(run))
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
