"""We test these aspects of the schema and its migrations:

- every migration applies to an empty database and a second run applies nothing;
- replicas starting at once serialise on the advisory lock and apply each migration once;
- an edited, already-applied migration is refused by name;
- the month partitions of provider_allocations are created on demand, once, even under a race;
- retention drops only the partitions of months that ended before the cutoff.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import psycopg
import pytest

from finops.errors import FinOpsError
from infra.postgres import Database, apply_migrations, connect
from infra.postgres.migrations import available
from sandbox.postgres import scratch_database


def test_migrations_apply_once_even_when_replicas_race(pg_server: str) -> None:
    with scratch_database(pg_server, prefix="finops_mig") as dsn:
        dbs = [connect(dsn) for _ in range(4)]
        with ThreadPoolExecutor(4) as pool:
            applied = list(pool.map(apply_migrations, dbs))
        assert sorted(v for versions in applied for v in versions) == [m.version for m in available()]
        assert apply_migrations(dbs[0]) == []
        with dbs[0].connection() as conn:
            tables = {r["tablename"] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname='public'")}
        assert {"job_runs", "pricebooks", "provider_allocations", "allocation_hours", "schema_migrations"} <= tables
        for db in dbs:
            db.close()


def test_an_edited_migration_is_refused(pg_server: str) -> None:
    with scratch_database(pg_server, prefix="finops_mig") as dsn:
        db = connect(dsn)
        apply_migrations(db)
        with db.connection() as conn:
            conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
        with pytest.raises(FinOpsError, match=r"001_foundation\.sql was edited"):
            apply_migrations(db)
        db.close()


def test_partitions_are_created_on_demand_under_a_race(database_url: str) -> None:
    def ensure(_: int) -> str:
        with psycopg.connect(database_url) as conn:
            row = conn.execute("SELECT finops_ensure_allocation_partition('2031-07-15T10:00:00Z')").fetchone()
            assert row is not None
            return str(row[0])

    with ThreadPoolExecutor(4) as pool:
        names = set(pool.map(ensure, range(8)))
    assert names == {"provider_allocations_203107"}


def test_retention_drops_only_months_that_ended_before_the_cutoff(db: Database) -> None:
    from functions.collect_allocations.service import drop_expired_partitions

    for moment in ("2026-08-15", "2026-09-01", "2026-10-31", "2026-11-29"):
        db.execute("ensure_allocation_partition", hour=datetime.fromisoformat(moment).replace(tzinfo=UTC))
    now = datetime(2026, 11, 29, 10, tzinfo=UTC)
    assert drop_expired_partitions(db, 2, now) == ["provider_allocations_202608"]
    assert drop_expired_partitions(db, 2, now) == []
    with db.connection() as conn:
        left = {
            r["relname"]
            for r in conn.execute("SELECT relname FROM pg_class WHERE relname LIKE 'provider_allocations_%'")
        }
    assert {"provider_allocations_202609", "provider_allocations_202610", "provider_allocations_202611"} <= left
    assert "provider_allocations_202608" not in left
