"""The database gateway: a process-wide pool and three verbs over named queries.

The pool checks connections before handing them out (a round trip, skipped for a connection used
in the last ``RECENTLY_USED_SECONDS``: under load every checkout would otherwise pay one). A verb
called without a connection runs its one statement in autocommit: atomic on its own, one round
trip instead of three (``BEGIN``, the statement, ``COMMIT``). psycopg exceptions never leave this
module: connection-level failures become ``DatabaseUnavailable`` (503, retry), anything else is a
bug and stays a 500. A ``DatabaseUnavailable`` names the dependency and the cause, never the
address or the credentials. The pool connects in its own threads, so when a request times out
waiting for it, the cause is the last failed connection attempt, which ``_Connection`` remembers.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Self

import psycopg
import psycopg_pool
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from finops.errors import DatabaseUnavailable
from infra.logs import register_secret
from infra.postgres import common
from infra.postgres.common import QUERIES, SESSION, Timeouts, cause_of
from infra.settings import ConfigError

__all__ = ["QUERIES", "Connection", "Database", "Timeouts", "address", "cause_of", "connect"]

Connection = psycopg.Connection[dict[str, Any]]

_failures: dict[str, str] = {}
"""The cause of each DSN's last failed connection attempt, cleared by its next success."""


class _Connection(psycopg.Connection[dict[str, Any]]):
    """A connection that records why connecting failed, for the pool's timeouts to report, and
    when it was last given back to the pool (``last_used``, monotonic seconds)."""

    last_used = 0.0

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        try:
            conn = super().connect(conninfo, **kwargs)
        except psycopg.Error as exc:
            _failures[conninfo] = cause_of(exc)
            raise
        _failures.pop(conninfo, None)
        return conn


@contextmanager
def wrap_errors() -> Iterator[None]:
    """Translate psycopg's connection-level failures into ``DatabaseUnavailable``."""
    try:
        yield
    except psycopg_pool.PoolTimeout as exc:
        raise DatabaseUnavailable(f"PostgreSQL is unavailable: no connection available ({exc})") from exc
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise DatabaseUnavailable(f"PostgreSQL is unavailable: {cause_of(exc)}") from exc


@contextmanager
def _explained(pool: psycopg_pool.ConnectionPool[Connection], timeout: float) -> Iterator[None]:
    """A pool timeout says why: the last connection attempt's failure, or a busy pool."""
    try:
        yield
    except psycopg_pool.PoolTimeout as exc:
        conninfo = pool.conninfo if isinstance(pool.conninfo, str) else ""
        if cause := _failures.get(conninfo):
            raise DatabaseUnavailable(f"PostgreSQL is unavailable: {cause}") from exc
        raise DatabaseUnavailable(
            f"PostgreSQL is unavailable: no connection within {timeout:g} s (the pool's "
            f"{pool.max_size} connections busy, or connecting took longer)"
        ) from exc


def _params(values: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if isinstance(v, dict) else v for k, v in values.items()}


class Database:
    """Named queries on a connection pool."""

    def __init__(
        self,
        pool: psycopg_pool.ConnectionPool[Connection],
        timeouts: Timeouts | None = None,
        *,
        per_transaction: bool = False,
    ) -> None:
        self.pool = pool
        self.timeouts = timeouts or Timeouts()
        self.per_transaction = per_transaction
        """Timeouts set again at the start of every transaction (``SET LOCAL``): behind PgBouncer's
        transaction pooling a session's settings stay on whichever server connection ran them."""

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A connection in a transaction: committed on success, rolled back on error."""
        with wrap_errors(), _explained(self.pool, self.pool.timeout), self.pool.connection() as conn:
            try:
                if self.per_transaction:
                    self.timeouts.set(conn, local=True)
                yield conn
            finally:
                _used(conn)

    @contextmanager
    def _statement(self) -> Iterator[Connection]:
        """A connection for one statement, in autocommit (no ``BEGIN``/``COMMIT`` round trips).
        Behind PgBouncer (``per_transaction``) the timeouts are set per transaction: one is kept."""
        if self.per_transaction:
            with self.connection() as conn:
                yield conn
            return
        with wrap_errors(), _explained(self.pool, self.pool.timeout), self.pool.connection() as conn:
            conn.autocommit = True
            try:
                yield conn
            finally:
                with contextlib.suppress(psycopg.Error):  # a broken connection: the pool drops it
                    conn.autocommit = False
                _used(conn)

    def check(self, timeout: float) -> None:
        """Get a working connection within ``timeout`` seconds, or ``DatabaseUnavailable``. The
        connection counts as just used: the next request takes it without the pool's check (a
        forked worker's first request, after the background connect, saves that round trip)."""
        with wrap_errors(), _explained(self.pool, timeout), self.pool.connection(timeout=timeout) as conn:
            conn.execute("SELECT 1")
            _used(conn)

    def execute(self, query: str, /, conn: Connection | None = None, **params: Any) -> int:
        with self._cursor(conn) as cur:
            cur.execute(QUERIES[query], _params(params))
            return cur.rowcount

    def fetch_one(self, query: str, /, conn: Connection | None = None, **params: Any) -> dict[str, Any] | None:
        with self._cursor(conn) as cur:
            cur.execute(QUERIES[query], _params(params))
            return cur.fetchone()

    def fetch_all(self, query: str, /, conn: Connection | None = None, **params: Any) -> list[dict[str, Any]]:
        with self._cursor(conn) as cur:
            cur.execute(QUERIES[query], _params(params))
            return cur.fetchall()

    def fetch_csv(self, query: str, /, **params: Any) -> bytes:
        """The query's rows as PostgreSQL's CSV (``COPY ... TO STDOUT``: NULL an empty field, an
        empty string ``""``), for a columnar reader: the server formats every value, so no row
        becomes a Python object (``infra.fleet.write_hour``)."""
        statement = f"COPY ({QUERIES[query].strip().rstrip(';')}) TO STDOUT (FORMAT csv)"
        with self._statement() as own, own.cursor() as cur, cur.copy(statement, _params(params)) as copy:
            return b"".join(bytes(chunk) for chunk in copy)

    def copy_rows(self, conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """``COPY`` rows into ``table`` (a trusted identifier of ours, never user input)."""
        count = 0
        with wrap_errors(), conn.cursor() as cur, cur.copy(copy_statement(table, columns)) as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
        return count

    @contextmanager
    def _cursor(self, conn: Connection | None) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        if conn is not None:
            with wrap_errors(), conn.cursor() as cur:
                yield cur
        else:
            with self._statement() as own, own.cursor() as cur:
                yield cur

    def close(self) -> None:
        self.pool.close()


def copy_statement(table: str, columns: Sequence[str]) -> sql.Composed:
    """``COPY table (columns) FROM STDIN``; ``table`` and ``columns`` are trusted identifiers of ours."""
    return sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
    )


def _used(conn: Connection) -> None:
    if isinstance(conn, _Connection):
        conn.last_used = time.monotonic()


def _check_unless_recent(conn: Connection) -> None:
    """The pool's check (a round trip), unless the connection was given back a moment ago."""
    if (
        isinstance(conn, _Connection)
        and time.monotonic() - conn.last_used < common.RECENTLY_USED_SECONDS
        and not conn.broken
    ):
        return
    psycopg_pool.ConnectionPool.check_connection(conn)


def _utc_session(conn: Connection) -> None:
    """``SESSION``'s settings (UTC), on every new connection."""
    for statement in SESSION:
        conn.execute(statement)
    conn.commit()


def address(dsn: str) -> str:
    """Where ``dsn`` points, for a person: ``host:port/database`` (libpq's defaults filled in: the
    local socket, 5432), never the user or the password. A DSN libpq cannot parse is a
    ``ConfigError``, redacted."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise ConfigError(f"DATABASE_URL is not a PostgreSQL URL or connection string: {cause_of(exc)}") from None
    host = str(params.get("host") or params.get("hostaddr") or "the local socket")
    return f"{host}:{params.get('port') or 5432}/{params.get('dbname') or params.get('user') or 'postgres'}"


def connect(
    dsn: str,
    *,
    pool: str = "pool",
    max_size: int = 4,
    timeout: float = 10.0,
    timeouts: Timeouts | None = None,
) -> Database:
    """Open a pool on ``dsn``; it connects lazily, so a down database fails the first request
    with a 503 rather than the cold start. A DSN that is neither a URL nor a conninfo string is
    a ``ConfigError`` here, redacted (libpq quotes the whole string, password included).

    ``timeouts`` (default: 30 s lock, 300 s statement) hold on every connection: set once per
    session on a pool, and per transaction (``SET LOCAL``) with ``pool="null"``, the PgBouncer
    mode, where a session's settings do not follow the client (and never leak onto PgBouncer's
    server connections). ``pool="null"`` also turns psycopg's server-side prepared statements
    off, which transaction pooling cannot carry from one transaction to the next."""
    try:
        password = psycopg.conninfo.conninfo_to_dict(dsn).get("password")
    except psycopg.Error as exc:
        raise ConfigError(f"DATABASE_URL is not a PostgreSQL URL or connection string: {cause_of(exc)}") from None
    register_secret(str(password) if password is not None else None)
    limits = timeouts or Timeouts()
    connection_kwargs: dict[str, Any] = {"row_factory": dict_row, "connect_timeout": max(1, int(timeout))}
    if pool == "null":
        connection_kwargs["prepare_threshold"] = None

    def configure(conn: Connection) -> None:
        if pool != "null":
            limits.set(conn, local=False)
        _utc_session(conn)

    kwargs: dict[str, Any] = {
        "kwargs": connection_kwargs,
        "connection_class": _Connection,
        "configure": configure,
        "timeout": timeout,
        "open": False,
        "check": _check_unless_recent,
        "name": "finops",
    }
    if pool == "null":
        opened: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.NullConnectionPool[Connection](
            dsn, max_size=max_size, **kwargs
        )
    else:
        opened = psycopg_pool.ConnectionPool[Connection](dsn, min_size=0, max_size=max_size, max_idle=300, **kwargs)
    opened.open(wait=False)
    return Database(opened, limits, per_transaction=pool == "null")
