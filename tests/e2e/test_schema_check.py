"""We test what a function's cold start does with the database schema (``MIGRATE_ON_START`` off,
the default: the install Job runs ``finops migrate``):

- a schema newer than the code knows stops the start with one line naming both versions;
- a schema older than the code (a migration pending) starts, and every request answers 503
  saying to run ``finops migrate``; once it has run, the same process serves;
- with ``MIGRATE_ON_START=true`` (the local stack's way), a cold start migrates an empty database.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from infra.postgres import apply_migrations, connect
from infra.postgres.migrations import available
from sandbox.localstack import Stack, functions_framework_command, serve_function
from sandbox.postgres import scratch_database
from tests.e2e.conftest import TOKEN

NEWEST = available()[-1]


@pytest.fixture
def migrated(pg_server: str) -> Iterator[str]:
    with scratch_database(pg_server, prefix="finops_cold") as dsn:
        db = connect(dsn)
        apply_migrations(db)
        db.close()
        yield dsn


def test_a_cold_start_refuses_a_schema_newer_than_the_code(stack: Stack, migrated: str) -> None:
    with psycopg.connect(migrated, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, 'future', 'x')", (NEWEST.version + 1,)
        )
    env = stack.function_env("collect_charges", DATABASE_URL=migrated)
    result = subprocess.run(
        functions_framework_command("collect_charges", 0), env=env, capture_output=True, timeout=60, check=False
    )
    output = result.stdout.decode() + result.stderr.decode()
    assert result.returncode != 0
    assert (
        f"collect_charges cannot start: the database schema is at version {NEWEST.version + 1:03d}, "
        f"newer than this code knows ({NEWEST.version:03d})"
    ) in output


def test_an_older_schema_answers_503_until_migrated(stack: Stack, migrated: str) -> None:
    with psycopg.connect(migrated, autocommit=True) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = %s", (NEWEST.version,))
    with serve_function(stack, "collect_charges", DATABASE_URL=migrated) as url:
        ping = {"Authorization": f"Bearer {TOKEN}"}
        answer = httpx.post(url, json={}, headers=ping, timeout=60)
        assert answer.status_code == 503, answer.text
        assert "run `finops migrate`" in answer.json()["error"]
        assert f"needs {NEWEST.version:03d}" in answer.json()["error"]
        with psycopg.connect(migrated, autocommit=True) as conn:  # as `finops migrate` would
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (NEWEST.version, NEWEST.name, NEWEST.checksum),
            )
        assert httpx.post(url, json={}, headers=ping, timeout=60).status_code != 503


def test_migrate_on_start_migrates_an_empty_database(stack: Stack, pg_server: str) -> None:
    with scratch_database(pg_server, prefix="finops_cold") as dsn:
        with serve_function(stack, "collect_charges", DATABASE_URL=dsn, MIGRATE_ON_START="true") as url:
            assert httpx.get(url + "/healthz").status_code == 200
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        assert row is not None and row[0] == NEWEST.version
