"""We test these aspects of the schema and its migrations:

- every migration applies to an empty database and a second run applies nothing;
- replicas starting at once serialise on the advisory lock and apply each migration once;
- an edited, already-applied migration is refused by name;
- the month partitions of provider_allocations are created on demand, once, even under a race;
- retention drops only the partitions of months that ended before the cutoff;
- PriceBook rates: 008 turns the old micros into exact numeric currency units (and charge unit
  prices into numeric), and rates are stored and read back exactly, however many decimals.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from finops.errors import FinOpsError
from finops.pricebooks import parse_pricebook
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
    from usecases.collect_allocations.retention import drop_expired_partitions

    for moment in ("2026-08-15", "2026-09-01", "2026-10-31", "2026-11-29"):
        db.execute("ensure_allocation_partition", hour=datetime.fromisoformat(moment).replace(tzinfo=UTC))
    now = datetime(2026, 11, 29, 10, tzinfo=UTC)
    dropped = drop_expired_partitions(db, 2, now)  # and any older month other tests left in the database
    assert "provider_allocations_202608" in dropped
    assert max(dropped) == "provider_allocations_202608"  # September ended within the two months kept
    assert drop_expired_partitions(db, 2, now) == []
    with db.connection() as conn:
        left = {
            r["relname"]
            for r in conn.execute("SELECT relname FROM pg_class WHERE relname LIKE 'provider_allocations_%'")
        }
    assert {"provider_allocations_202609", "provider_allocations_202610", "provider_allocations_202611"} <= left
    assert "provider_allocations_202608" not in left


def test_exact_rates_are_backfilled_from_micros(pg_server: str) -> None:
    with scratch_database(pg_server, prefix="finops_mig") as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        for migration in available():
            if migration.version < 8:
                conn.execute(migration.sql)
        conn.execute(
            "INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode,"
            " cpu_hour_micros, spot_cpu_hour_micros, ram_gb_hour_micros, spot_ram_gb_hour_micros,"
            " pv_gb_hour_micros, gpu_hour_micros, network_gib_micros)"
            " VALUES ('c', 'finops', 'standard', 'u', 'old', 'USD', 'currency', 31611, 0, 4000, 1, 55, 1800000, 90000)"
        )
        (exact_rates,) = [m for m in available() if m.version == 8]
        conn.execute(exact_rates.sql)
        rates = conn.execute(
            "SELECT cpu_hour, spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour, network_gib"
            " FROM pricebooks"
        ).fetchone()
        assert rates is not None
        assert [str(rate) for rate in rates] == [
            "0.031611",
            "0.000000",
            "0.004000",
            "0.000001",
            "0.000055",
            "1.800000",
            "0.090000",
        ]
        types: dict[str, str] = dict(
            conn.execute(
                "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns"
                " WHERE table_name IN ('pricebooks', 'subscription_charges')"
            ).fetchall()
        )
        assert not [column for column in types if column.endswith("_hour_micros") or column.endswith("_gib_micros")]
        assert types["pricebooks.ram_gb_hour"] == types["subscription_charges.unit_price_micros"] == "numeric"


def test_pricebook_rates_are_stored_and_read_back_exactly(db: Database) -> None:
    rates = {
        "cpuHour": "0.0000004",
        "ramGbHour": "0.00005479452",
        "gpuHour": "999999999999.999999999999999",
        "pvGbHour": "0.000000000000001",
        "networkGiB": "0.10",
    }
    book = parse_pricebook(
        {"metadata": {"namespace": "finops", "name": "exact", "uid": "u"}, "spec": {"currency": "USD", "rates": rates}}
    )
    version: dict[str, Any] = {
        "cluster": "c",
        "namespace": book.namespace,
        "name": book.name,
        "uid": book.uid,
        "fingerprint": book.fingerprint,
        "currency": book.currency,
        "valuation_mode": book.valuation_mode,
        "source": "pricebook",
        **book.rates,
    }
    row = db.fetch_one("upsert_pricebook", **version)
    assert row is not None
    with db.connection() as conn:
        stored = conn.execute(
            "SELECT cpu_hour, ram_gb_hour, gpu_hour, pv_gb_hour, network_gib, spot_cpu_hour FROM pricebooks"
            " WHERE id = %s",
            (row["id"],),
        ).fetchone()
    assert stored is not None
    assert [f"{stored[column]:f}" for column in ("cpu_hour", "ram_gb_hour", "gpu_hour", "pv_gb_hour")] == [
        "0.0000004",
        "0.00005479452",
        "999999999999.999999999999999",
        "0.000000000000001",
    ]
    assert (stored["network_gib"], stored["spot_cpu_hour"]) == (Decimal("0.1"), 0)
