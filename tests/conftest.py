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

# Every table of the schema but the migrations' own (a new table is emptied without a list to keep).
TABLES = """SELECT string_agg(format('%I', tablename), ', ') FROM pg_tables
            WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'
              AND tablename NOT LIKE 'provider_allocations_%'"""


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
        tables = conn.execute(TABLES).fetchone()
        assert tables is not None
        conn.execute(f"TRUNCATE {next(iter(tables.values()))} RESTART IDENTITY CASCADE")
    yield database
    database.close()


# Dummy credentials and no profile or endpoint from the machine: S3 tests can only reach moto.
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}
AWS_UNSET = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[str]:
    """moto's S3 server over HTTP on a free port (one per session); yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    with pytest.MonkeyPatch.context() as patch:
        for key, value in AWS_ENV.items():
            patch.setenv(key, value)
        for key in AWS_UNSET:
            patch.delenv(key, raising=False)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


# The longest files, longest first (as a full run's JUnit report timed them: a month loaded, a
# demo run, a browser, kill-and-resume or property tests): collected first, so that `make test`'s
# `--dist loadfile` starts them first instead of possibly leaving one to run alone at the end.
LONGEST_FIRST = (
    "tests/e2e/test_bill_reconciliation.py",
    "tests/e2e/test_ui_extension.py",
    "tests/e2e/test_fleet_reports.py",
    "tests/e2e/test_secrets.py",
    "tests/e2e/test_opencost_pricing.py",
    "tests/e2e/test_fleet_files.py",
    "tests/e2e/test_doctor.py",
    "tests/e2e/test_prometheus_source.py",
    "tests/e2e/test_cli_input.py",
    "tests/e2e/test_tutorial.py",
    "tests/e2e/test_on_sync_properties.py",
    "tests/e2e/test_cost_api_contract.py",
    "tests/e2e/test_hour_ledger.py",
    "tests/e2e/test_report_coverage.py",
    "tests/e2e/test_budgets.py",
    "tests/e2e/test_on_sync.py",
    "tests/e2e/test_daily_history.py",
    "tests/e2e/test_gpu_chargeback.py",
    "tests/e2e/test_reports.py",
    "tests/e2e/test_cli_errors.py",
    "tests/e2e/test_rightsizing.py",
    "tests/e2e/test_pgbouncer.py",
    "tests/e2e/test_focus_gpu_carbon.py",
    "tests/e2e/test_collect_charges.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest as collected
