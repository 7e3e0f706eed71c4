"""We test the webhook's gateway (``infra.postgres.lean``: one psycopg2 connection) on a real
PostgreSQL, against the contract of the pooled one (``infra.postgres.database``):

- the same named query gives the same rows through both (a ``dict`` stored as ``jsonb``, dict rows;
  uuids, decimals, dates, intervals, json and arrays read as psycopg reads them), ``fetch_one`` of
  nothing is None, ``execute`` counts the rows;
- its session is in UTC with the configured timeouts, even when the DSN asks for another zone;
  behind PgBouncer (``per_transaction``) the timeouts hold for the statement's transaction only;
- a statement PostgreSQL refuses raises the driver's error (a 500: a bug) and leaves the
  connection usable, its transaction rolled back (its statement prepared all the same);
- each query is prepared once per session (planned once), never behind PgBouncer; a new
  connection prepares again;
- a connection idle a while is checked before use and replaced if the server killed it; one used
  a moment ago is not checked, so its use fails once with a 503 and the next one reconnects;
- a server that is not there is a 503 naming the cause, without the address or the credentials;
  a malformed DSN is a configuration error without the password; a caller waits at most the
  connect timeout for the connection another thread holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime

import psycopg
import psycopg2.errors
import pytest

from finops.errors import DatabaseUnavailable
from infra.postgres import Database, common
from infra.postgres.common import Timeouts
from infra.postgres.lean import LeanDatabase
from infra.settings import ConfigError
from tests.net import refused_port
from usecases.runs import Run, record_of

SETTINGS = """SELECT current_setting('TimeZone') AS zone, current_setting('DateStyle') AS style,
                     current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock,
                     timestamptz '2026-10-25 01:00:00+00' AS moment"""
TYPES = """SELECT uuid '5f0c4a9e-8a4b-4c6e-9a43-2d7e0c9b1f10' AS id,
                  ARRAY[uuid '00000000-0000-4000-8000-000000000001', NULL] AS ids,
                  1.10::numeric AS exact, date '2026-11-30' AS day, interval '90 minutes' AS span,
                  '{"a": [1, 2.5]}'::jsonb AS doc, ARRAY['x', NULL] AS texts, NULL::text AS nothing"""


@pytest.fixture
def lean(db: Database, database_url: str) -> Iterator[LeanDatabase]:
    """On the emptied tables of ``db``."""
    gateway = LeanDatabase(database_url, timeouts=Timeouts(7, 70))
    yield gateway
    gateway.close()


@pytest.fixture
def settings_query(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(common.QUERIES, "test_settings", SETTINGS)
    monkeypatch.setitem(common.QUERIES, "test_types", TYPES)


def a_run(outcome: str = "success") -> dict[str, object]:
    run = Run(function="on_sync", cluster="test", trigger="argocd", http_status=202, outcome=outcome)
    run.counts = {"app": "argocd:web", "nested": {"list": [1, "two", None]}, "replay": False}
    return record_of(run)


def in_session(lean: LeanDatabase, sql: str) -> list[tuple[object, ...]]:
    """``sql``'s rows in the lean gateway's session, outside any statement of its own."""
    with lean._held(5), lean._connection().cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def session_setting(lean: LeanDatabase, name: str) -> str:
    ((value,),) = in_session(lean, f"SHOW {name}")
    return str(value)


def test_a_named_query_gives_the_same_rows_through_both_gateways(
    lean: LeanDatabase, db: Database, settings_query: None
) -> None:
    record = a_run()
    assert lean.execute("insert_job_run", **record) == 1
    mine = lean.fetch_one("recent_job_runs", function="on_sync", limit=5)
    pooled = db.fetch_one("recent_job_runs", function="on_sync", limit=5)
    assert mine is not None and mine == pooled
    assert mine["counts"] == record["counts"]
    assert lean.fetch_all("recent_job_runs", function="on_sync", limit=5) == db.fetch_all(
        "recent_job_runs", function="on_sync", limit=5
    )
    assert lean.fetch_one("test_types") == db.fetch_one("test_types")  # uuids, decimals, dates, json, arrays
    assert lean.fetch_one("recent_job_runs", function="nobody", limit=5) is None
    assert lean.fetch_all("recent_job_runs", function="nobody", limit=5) == []


def test_the_session_is_utc_with_the_configured_timeouts(database_url: str, settings_query: None, db: Database) -> None:
    sep = "&" if "?" in database_url else "?"
    with closing(
        LeanDatabase(f"{database_url}{sep}options=-c%20TimeZone%3DEurope/Paris", timeouts=Timeouts(7, 70))
    ) as lean:
        row = lean.fetch_one("test_settings")
    assert row is not None
    assert (row["zone"], row["style"], row["statement"], row["lock"]) == ("UTC", "ISO, YMD", "70s", "7s")
    assert row["moment"] == datetime(2026, 10, 25, 1, tzinfo=UTC) and row["moment"].utcoffset().total_seconds() == 0


def test_behind_pgbouncer_the_timeouts_hold_for_the_statements_transaction_only(
    database_url: str, settings_query: None, db: Database
) -> None:
    with closing(LeanDatabase(database_url, timeouts=Timeouts(7, 70), per_transaction=True)) as lean:
        row = lean.fetch_one("test_settings")
        assert row is not None and (row["zone"], row["statement"], row["lock"]) == ("UTC", "70s", "7s")
        assert session_setting(lean, "statement_timeout") != "70s"
        assert session_setting(lean, "lock_timeout") != "7s"
        record = a_run()
        lean.execute("insert_job_run", **record)  # committed: another session reads it
        with psycopg.connect(database_url) as other:
            assert other.execute("SELECT 1 FROM job_runs WHERE run_id = %s", (record["run_id"],)).fetchone()


@pytest.mark.parametrize("per_transaction", [False, True])
def test_a_refused_statement_is_the_drivers_error_and_the_connection_stays_usable(
    database_url: str, db: Database, per_transaction: bool
) -> None:
    with closing(LeanDatabase(database_url, per_transaction=per_transaction)) as lean:
        with pytest.raises(psycopg2.errors.CheckViolation):  # job_runs' CHECK on the outcome
            lean.execute("insert_job_run", **a_run("not-an-outcome"))
        assert session_setting(lean, "transaction_isolation")  # idle, not in a failed transaction
        assert lean.execute("insert_job_run", **a_run()) == 1
    assert len(db.fetch_all("recent_job_runs", function="on_sync", limit=5)) == 1


def prepared(lean: LeanDatabase) -> set[str]:
    return {str(name) for (name,) in in_session(lean, "SELECT name FROM pg_prepared_statements")}


@pytest.mark.parametrize("per_transaction", [False, True])
def test_a_session_prepares_each_query_once_but_not_behind_pgbouncer(
    database_url: str, db: Database, per_transaction: bool
) -> None:
    with closing(LeanDatabase(database_url, per_transaction=per_transaction)) as lean:
        for _ in range(3):
            assert lean.fetch_all("recent_job_runs", function=None, limit=1) == []
        assert prepared(lean) == (set() if per_transaction else {"finops_recent_job_runs"})


def _kill(lean: LeanDatabase, database_url: str) -> None:
    """Kill the connection's server process, after it has prepared ``recent_job_runs``."""
    assert lean.fetch_one("recent_job_runs", function=None, limit=1) is None
    with lean._held(5):
        pid = lean._connection().get_backend_pid()
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_connection_idle_a_while_is_checked_and_replaced_if_dead(
    lean: LeanDatabase, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _kill(lean, database_url)
    monkeypatch.setattr(common, "RECENTLY_USED_SECONDS", 0.0)  # every connection counts as idle
    assert lean.fetch_one("recent_job_runs", function=None, limit=1) is None  # no error: checked, replaced


def test_a_connection_used_a_moment_ago_is_not_checked_so_a_dead_one_fails_once(
    lean: LeanDatabase, database_url: str
) -> None:
    _kill(lean, database_url)
    with pytest.raises(DatabaseUnavailable, match=r"^PostgreSQL is unavailable: "):
        lean.fetch_one("recent_job_runs", function=None, limit=1)
    assert lean.fetch_one("recent_job_runs", function=None, limit=1) is None  # reconnected


def test_a_missing_server_is_a_503_without_address_or_credentials() -> None:
    with refused_port() as port:
        lean = LeanDatabase(f"postgresql://finops:hunter2-secret@127.0.0.1:{port}/nowhere", timeout=2)
        calls: list[Callable[[], object]] = [
            lambda: lean.check(2),
            lambda: lean.fetch_one("recent_job_runs", function=None, limit=1),
        ]
        for call in calls:
            with pytest.raises(DatabaseUnavailable) as raised:
                call()
            message = raised.value.message
            assert message.startswith("PostgreSQL is unavailable: ") and "refused" in message
            assert "hunter2" not in message and "127.0.0.1" not in message and str(port) not in message


def test_a_malformed_dsn_is_a_configuration_error_without_the_password() -> None:
    with pytest.raises(ConfigError) as raised:
        LeanDatabase("host=db password=hunter2-secret port='unterminated")
    assert "DATABASE_URL" in str(raised.value) and "hunter2" not in str(raised.value)


def test_a_caller_waits_at_most_the_timeout_for_the_connection_another_holds(lean: LeanDatabase) -> None:
    quick = LeanDatabase(lean._dsn, timeout=0.2)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with quick._held(5):
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
