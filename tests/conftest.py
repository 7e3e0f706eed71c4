"""Shared fixtures: a real PostgreSQL for every test that needs one.

The server is ``DATABASE_URL`` when set, otherwise an embedded one started for the session;
never skipped. Each session gets its own scratch database (migrated once), and each test starts
from empty tables.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from infra.postgres import Database, apply_migrations, connect
from sandbox.postgres import embedded_postgres, scratch_database

TABLES = (
    "job_runs, provider_allocations, allocation_hours, pricebooks, cost_actuals, sync_events, "
    "backfill_progress, backfill_namespaces, allocation_daily, cloud_costs, subscription_charges, "
    "subscription_versions, offering_versions"
)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
    else:
        with embedded_postgres() as dsn:
            yield dsn


@pytest.fixture(scope="session")
def database_url(pg_server: str) -> Iterator[str]:
    with scratch_database(pg_server, prefix="finops_test") as dsn:
        db = connect(dsn)
        apply_migrations(db)
        db.close()
        yield dsn


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = connect(database_url, max_size=8)
    with database.connection() as conn:
        conn.execute(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    yield database
    database.close()
