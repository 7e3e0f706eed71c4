"""We test the main flows through a real PgBouncer in transaction pooling mode (Debian's
``pgbouncer``, started for this module in front of the tests' PostgreSQL), with
``DATABASE_POOL=null`` as docs/how-to/pgbouncer.md recommends:

- ``finops migrate`` (the install Job) migrates through it, and a second run finds nothing to do;
- replicas migrating at once serialise on the migrations' transaction-scoped lock and apply each
  migration once; the schema check then passes, and refuses a newer schema by both versions;
- every transaction runs in UTC with the configured ``lock_timeout``/``statement_timeout``, even
  though each server connection starts in America/New_York (the database's default);
- a lease is held by one holder at a time across PgBouncer's server connections;
- ``collect_allocations``, served as Knative runs it, writes an hour's rows and ledger;
- two backfills at once: one measures, the other measures nothing (or is told to call again);
- ``collect_charges`` prices Subscriptions (COPY into a temporary staging table, merge);
- a burst of webhooks, served, stores every event once and every run.

Never skipped: without the ``pgbouncer`` binary the module fails with how to install it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import pytest

from finops.errors import FinOpsError
from infra.kube import KubeClient
from infra.opencost import OpenCostClient
from infra.postgres import Database, apply_migrations, check_schema, connect
from infra.postgres.database import Timeouts
from infra.postgres.leases import Lease
from infra.postgres.migrations import SchemaTooNew, available
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.localstack import Stack, serve_function
from sandbox.postgres import scratch_database
from tests.e2e.conftest import HOOK_TOKEN, TOKEN
from tests.e2e.test_billing_scale import AGG, OFFERING, PINNED, PRICEBOOK, subscription, usage
from tests.e2e.test_on_sync import hook, post
from tests.pgbouncer import pgbouncer
from usecases.backfill import BackfillOptions, BackfillResult, backfill
from usecases.collect_charges.service import collect_charges

SCHEDULED = "2026-11-20T10:07:00Z"
HOURS = [datetime(2026, 11, 20, h, tzinfo=UTC) for h in (7, 8, 9, 10)]


def database_name(dsn: str) -> str:
    return str(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])


@pytest.fixture(scope="module")
def bouncer(pg_server: str) -> Iterator[str]:
    """A DSN template through PgBouncer (transaction pooling): ``.format(database=NAME)``."""
    try:
        context = pgbouncer(pg_server)
        template, _ = context.__enter__()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield template
    finally:
        context.__exit__(None, None, None)


@pytest.fixture(scope="module")
def through(bouncer: str, database_url: str) -> str:
    """The suite's database, through PgBouncer."""
    return bouncer.format(database=database_name(database_url))


@pytest.fixture
def pooled(through: str, db: Database) -> Iterator[Database]:
    """A ``DATABASE_POOL=null`` database through PgBouncer (``db``: tables emptied first)."""
    database = connect(through, pool="null", max_size=8, timeouts=Timeouts(7, 70))
    yield database
    database.close()


def test_migrations_and_the_schema_check_through_pgbouncer(pg_server: str, bouncer: str) -> None:
    with scratch_database(pg_server, prefix="finops_pgb") as direct:
        name = database_name(direct)
        with psycopg.connect(direct, autocommit=True) as conn:  # every server connection starts in New York
            conn.execute(f"ALTER DATABASE \"{name}\" SET timezone TO 'America/New_York'")
        dsn = bouncer.format(database=name)
        dbs = [connect(dsn, pool="null", timeouts=Timeouts(7, 70)) for _ in range(4)]
        try:
            with ThreadPoolExecutor(4) as pool:
                applied = list(pool.map(apply_migrations, dbs))
            assert sorted(v for versions in applied for v in versions) == [m.version for m in available()]
            check_schema(dbs[0])

            def session(_: int) -> tuple[str, ...]:
                with dbs[1].connection() as conn:
                    row = conn.execute(
                        "SELECT current_setting('TimeZone') AS tz, current_setting('lock_timeout') AS lock,"
                        " current_setting('statement_timeout') AS statement, (SELECT count(*) FROM job_runs)::text"
                    ).fetchone()
                assert row is not None
                return tuple(str(v) for v in list(row.values())[:3])

            with ThreadPoolExecutor(8) as pool:
                assert set(pool.map(session, range(40))) == {("UTC", "7s", "70s")}

            with dbs[0].connection() as conn:
                conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (999, 'future', 'x')")
            newest = available()[-1].version
            message = f"the database schema is at version 999, newer than this code knows ({newest:03d})"
            with pytest.raises(SchemaTooNew, match=re.escape(message)):
                check_schema(dbs[2])
            with pytest.raises(SchemaTooNew, match=re.escape(message)):
                apply_migrations(dbs[3])
        finally:
            for db in dbs:
                db.close()


def test_finops_migrate_through_pgbouncer_as_the_install_job_runs_it(pg_server: str, bouncer: str) -> None:
    finops = os.path.join(os.path.dirname(sys.executable), "finops")
    with scratch_database(pg_server, prefix="finops_pgb") as direct:
        env = {**os.environ, "DATABASE_URL": bouncer.format(database=database_name(direct)), "DATABASE_POOL": "null"}
        first = subprocess.run([finops, "migrate"], env=env, capture_output=True, text=True, timeout=120, check=False)
        assert first.returncode == 0, first.stderr
        versions = ", ".join(f"{m.version:03d}" for m in available())
        assert first.stdout.strip() == f"applied migrations: {versions}"
        again = subprocess.run([finops, "migrate"], env=env, capture_output=True, text=True, timeout=120, check=True)
        assert "schema is up to date" in again.stdout


def test_a_lease_has_one_holder_across_server_connections(pooled: Database) -> None:
    first, second = Lease(pooled, "pgbouncer-test", 30), Lease(pooled, "pgbouncer-test", 30)
    assert first.claim()
    assert first.claim()  # a renewal
    with ThreadPoolExecutor(8) as pool:
        assert not any(pool.map(lambda _: second.claim(), range(16)))
    first.release()
    assert second.claim() and not first.claim()
    second.release()


def test_collect_allocations_served_through_pgbouncer(stack: Stack, through: str, db: Database) -> None:
    with serve_function(
        stack,
        "collect_allocations",
        DATABASE_URL=through,
        DATABASE_POOL="null",
        HOURS_LOOKBACK="3",
        OPENCOST_TIMEOUT_SECONDS="5",
        OPENCOST_RETRIES="1",
    ) as url:
        response = httpx.post(
            url, json={"scheduledTime": SCHEDULED}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
        )
    assert response.status_code == 200, response.text
    assert response.json()["hours_written"] == 4
    with db.connection() as conn:
        ledger = {r["hour"]: r["state"] for r in conn.execute("SELECT hour, state FROM allocation_hours")}
        rows = conn.execute("SELECT count(*) AS n FROM provider_allocations WHERE hour = %s", (HOURS[0],)).fetchone()
        run = conn.execute("SELECT outcome FROM job_runs WHERE function = 'collect_allocations'").fetchone()
    assert set(ledger) == set(HOURS) and [ledger[h] == "final" for h in HOURS] == [True, True, True, False]
    assert rows is not None and rows["n"] > 0
    assert run is not None and run["outcome"] == "success"


def test_two_backfills_at_once_through_pgbouncer(
    pooled: Database, db: Database, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> None:
    options = BackfillOptions(
        cluster="test", concurrency=2, budget_seconds=60, deadline_seconds=900, prune_remote=False
    )

    def one(_: int) -> BackfillResult | str:
        try:
            return backfill(pooled, OpenCostClient(opencost.url, retries=0), KubeClient.from_url(kube.url), options)
        except FinOpsError as exc:  # told to call again while the other one holds the lease
            return exc.message

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(one, range(2)))
    measured = sorted(o.measured for o in outcomes if isinstance(o, BackfillResult))
    assert measured in ([0, 4], [4]), outcomes
    with db.connection() as conn:
        records = conn.execute("SELECT measured_on FROM cost_actuals").fetchall()
        leases = conn.execute("SELECT count(*) AS n FROM leases").fetchone()
    assert len(records) == 4 and {r["measured_on"] for r in records} == {"install"}
    assert leases is not None and leases["n"] == 0  # released


def test_collect_charges_through_pgbouncer(pooled: Database, db: Database) -> None:
    usage(db, 3, PINNED.start.replace(hour=6), PINNED.start)
    with (
        sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, *(subscription(i) for i in range(3))]) as kube,
        KubeClient.from_url(kube.url) as client,
    ):
        result = collect_charges(pooled, client, "c", AGG, None, scheduled=PINNED.start, now=PINNED.start)
    assert not result.errors, result.errors
    with db.connection() as conn:
        charges: Any = conn.execute("SELECT count(*) AS n FROM subscription_charges").fetchone()
    assert charges["n"] > 0


def test_a_burst_of_webhooks_through_pgbouncer(stack: Stack, through: str, db: Database) -> None:
    """The webhook's statements with ``DATABASE_POOL=null``: each one transaction with ``SET LOCAL``
    timeouts, every event once, every run."""
    with serve_function(
        stack, "on_sync", DATABASE_URL=through, DATABASE_POOL="null", WEBHOOK_TOKEN=HOOK_TOKEN, WORKERS="2"
    ) as url:
        bodies = [hook(revision=f"bounced{n % 10}") for n in range(30)]  # each event three times
        with ThreadPoolExecutor(30) as pool:
            statuses = list(pool.map(lambda body: post(url, body).status_code, bodies))
    assert statuses == [202] * 30
    with db.connection() as conn:
        stored = conn.execute("SELECT revision FROM sync_events ORDER BY revision").fetchall()
        runs = conn.execute("SELECT counts FROM job_runs WHERE function = 'on_sync' AND trigger = 'argocd'").fetchall()
    assert [r["revision"] for r in stored] == sorted(f"bounced{n}" for n in range(10))
    assert len(runs) == 30 and sum(not r["counts"]["replay"] for r in runs) == 10
