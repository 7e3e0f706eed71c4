"""We test these aspects of the schema's safety and retention:

- two migration files with one number, or a ``.sql`` file not named ``NNN_name.sql``, are refused
  by name before anything runs; the shipped migrations are numbered 1..N without gaps;
- the schema check: no schema and a pending migration say to run ``finops migrate``; a version
  the code does not know is refused; an exact schema passes;
- month partitions are bounded in UTC and dropped by their UTC end whatever the session's TimeZone
  (America/New_York: the old functions kept a month too long and were an hour off across DST);
- retention deletes a cluster's old job runs, closed sync events and superseded records in
  bounded batches, never an open event, an application's latest record or another cluster's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from infra.postgres import Database, apply_migrations, check_schema, connect
from infra.postgres.migrations import MigrationError, SchemaBehind, SchemaTooNew, available
from sandbox.postgres import scratch_database
from usecases.collect_allocations.retention import RowRetention, delete_expired_rows


def test_two_migrations_with_one_number_are_refused(tmp_path: Path) -> None:
    for name in ("001_first.sql", "002_b.sql", "002_a.sql", "README.md"):
        (tmp_path / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"migrations share a number: 002_a\.sql and 002_b\.sql \(renumber one\)"):
        available(tmp_path)
    (tmp_path / "002_b.sql").unlink()
    assert [m.file for m in available(tmp_path)] == ["001_first.sql", "002_a.sql"]
    (tmp_path / "3_loose.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"3_loose\.sql is not named NNN_name\.sql"):
        available(tmp_path)


def test_the_shipped_migrations_are_numbered_without_gaps() -> None:
    versions = [m.version for m in available()]
    assert versions == list(range(1, len(versions) + 1))


def test_the_schema_check(pg_server: str) -> None:
    with scratch_database(pg_server, prefix="finops_check") as dsn:
        db = connect(dsn)
        try:
            with pytest.raises(SchemaBehind, match=r"no schema: run `finops migrate`"):
                check_schema(db)
            apply_migrations(db)
            check_schema(db)
            newest = available()[-1]
            with db.connection() as conn:
                conn.execute("DELETE FROM schema_migrations WHERE version = %s", (newest.version,))
            with pytest.raises(SchemaBehind, match=rf"this code needs {newest.version:03d}: run `finops migrate`"):
                check_schema(db)
            with db.connection() as conn:
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, 'edited')",
                    (newest.version, newest.name),
                )
            with pytest.raises(MigrationError, match=rf"{newest.file} was edited after it was applied"):
                check_schema(db)
        finally:
            db.close()


def test_an_unknown_or_newer_version_is_refused(pg_server: str) -> None:
    with scratch_database(pg_server, prefix="finops_check") as dsn:
        db = connect(dsn)
        try:
            apply_migrations(db)
            with db.connection() as conn:
                conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (500, 'future', 'x')")
            with pytest.raises(SchemaTooNew, match=r"at version 500, newer than this code knows"):
                check_schema(db)
            with pytest.raises(SchemaTooNew):
                apply_migrations(db)  # `finops migrate` from an older image
        finally:
            db.close()


@pytest.fixture
def new_york(pg_server: str) -> Iterator[psycopg.Connection[Any]]:
    """A migrated scratch database, and a plain session on it in America/New_York."""
    with scratch_database(pg_server, prefix="finops_tz") as dsn:
        db = connect(dsn)
        apply_migrations(db)
        db.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET TIME ZONE 'America/New_York'")
            yield conn


def bounds(conn: psycopg.Connection[Any]) -> dict[str, str]:
    conn.execute("SET TIME ZONE 'UTC'")
    try:
        return {
            name: bound
            for name, bound in conn.execute(
                "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i"
                " JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'provider_allocations'::regclass"
            )
        }
    finally:
        conn.execute("SET TIME ZONE 'America/New_York'")


def test_partitions_are_bounded_and_dropped_in_utc_under_another_time_zone(
    new_york: psycopg.Connection[Any],
) -> None:
    conn = new_york
    for moment in ("2026-09-15T12:00:00Z", "2026-10-31T23:30:00Z", "2026-11-15T12:00:00Z", "2027-03-31T23:30:00Z"):
        conn.execute("SELECT finops_ensure_allocation_partition(%s)", (datetime.fromisoformat(moment),))
    assert bounds(conn) == {
        "provider_allocations_202609": "FOR VALUES FROM ('2026-09-01 00:00:00+00') TO ('2026-10-01 00:00:00+00')",
        "provider_allocations_202610": "FOR VALUES FROM ('2026-10-01 00:00:00+00') TO ('2026-11-01 00:00:00+00')",
        "provider_allocations_202611": "FOR VALUES FROM ('2026-11-01 00:00:00+00') TO ('2026-12-01 00:00:00+00')",
        "provider_allocations_202703": "FOR VALUES FROM ('2027-03-01 00:00:00+00') TO ('2027-04-01 00:00:00+00')",
    }
    # Exactly at October's UTC end: September and October go, November stays.
    dropped = [r[0] for r in conn.execute("SELECT finops_drop_allocation_partitions('2026-11-01T00:00:00Z')")]
    assert dropped == ["provider_allocations_202609", "provider_allocations_202610"]
    # One second before November's UTC end (still November 30th, 19:00 in New York): it stays.
    assert not list(conn.execute("SELECT finops_drop_allocation_partitions('2026-11-30T23:59:59Z')"))
    assert [r[0] for r in conn.execute("SELECT finops_drop_allocation_partitions('2026-12-01T00:00:00Z')")] == [
        "provider_allocations_202611"
    ]
    assert set(bounds(conn)) == {"provider_allocations_202703"}


NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def _run(conn: Any, cluster: str, days_ago: int) -> None:
    started = NOW - timedelta(days=days_ago)
    conn.execute(
        "INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms, outcome,"
        " http_status) VALUES (gen_random_uuid(), 'collect_allocations', %s, 'ping', %s, %s, 1, 'success', 200)",
        (cluster, started, started),
    )


def _event(conn: Any, cluster: str, app: str, days_ago: int, status: str) -> int:
    at = NOW - timedelta(days=days_ago)
    row = conn.execute(
        "INSERT INTO sync_events (cluster, app_namespace, app_name, destination_namespace, revision, finished_at,"
        " status, received_at) VALUES (%s, 'argocd', %s, 'shop', %s, %s, %s, %s) RETURNING id",
        (cluster, app, f"r{days_ago}", at, status, at),
    ).fetchone()
    return int(row["id"])


def _record(conn: Any, cluster: str, app: str, days_ago: int, event: int | None = None) -> None:
    at = NOW - timedelta(days=days_ago)
    conn.execute(
        "INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,"
        " sync_event_id, measured_at, window_start, window_end, measured_hours, cost_micros, monthly_micros,"
        " breakdown) VALUES (%s, 'argocd', %s, 'shop', %s, 'namespace', %s, %s, %s, %s, 1, 1, 720, '{}')",
        (cluster, app, "sync" if event else "install", event, at, at - timedelta(hours=1), at),
    )


def test_retention_deletes_old_rows_in_batches_and_keeps_what_is_still_needed(db: Database) -> None:
    with db.connection() as conn:
        for days in (200, 120, 91, 10, 1):
            _run(conn, "c", days)
        _run(conn, "other", 200)
        closed_old = _event(conn, "c", "web", 100, "measured")
        failed_old = _event(conn, "c", "web", 95, "failed")
        pending_old = _event(conn, "c", "web", 150, "pending")
        measuring_old = _event(conn, "c", "web", 140, "measuring")
        kept_by_record = _event(conn, "c", "solo", 300, "measured")
        recent = _event(conn, "c", "web", 5, "measured")
        other = _event(conn, "other", "web", 300, "measured")
        _record(conn, "c", "web", 500)  # superseded, old: deleted
        _record(conn, "c", "web", 450, closed_old)  # superseded, old: deleted, then its event can go
        _record(conn, "c", "web", 3, recent)  # web's latest
        _record(conn, "c", "solo", 600)  # superseded by the one below, old: deleted
        _record(conn, "c", "solo", 500, kept_by_record)  # solo's latest, however old: kept (and its event)
        _record(conn, "other", "web", 900)
        _record(conn, "other", "web", 800)
    retention = RowRetention(job_runs_days=90, sync_events_days=90, cost_actuals_days=400, batch_rows=1)
    deleted = delete_expired_rows(db, "c", retention, NOW)
    assert deleted == {"job_runs": 3, "cost_actuals": 3, "sync_events": 2}
    with db.connection() as conn:
        runs = [r["cluster"] for r in conn.execute("SELECT cluster FROM job_runs ORDER BY started_at")]
        events = {r["id"] for r in conn.execute("SELECT id FROM sync_events")}
        records = {(r["cluster"], r["app_name"], r["measured_at"]) for r in conn.execute("SELECT * FROM cost_actuals")}
    assert runs == ["other", "c", "c"]
    assert events == {pending_old, measuring_old, kept_by_record, recent, other}
    assert failed_old not in events and closed_old not in events
    assert records == {
        ("c", "web", NOW - timedelta(days=3)),
        ("c", "solo", NOW - timedelta(days=500)),
        ("other", "web", NOW - timedelta(days=900)),
        ("other", "web", NOW - timedelta(days=800)),
    }
    assert delete_expired_rows(db, "c", retention, NOW) == {}
    assert delete_expired_rows(db, "c", RowRetention(), NOW) == {}  # 0 keeps all
