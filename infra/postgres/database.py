"""The database gateway: a process-wide pool and three verbs over named queries.

The pool is created closed and opened explicitly (psycopg's advice), checks connections before
handing them out, and recycles them. ``DATABASE_POOL=null`` uses a ``NullConnectionPool`` for
PgBouncer or very many replicas. psycopg exceptions never leave this module: connection-level
failures become ``DatabaseUnavailable`` (503, retry), anything else is a bug and stays a 500.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, LiteralString, cast

import psycopg
import psycopg_pool
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from finops.errors import DatabaseUnavailable

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def _load_queries() -> dict[str, LiteralString]:
    text = importlib.resources.files("infra.postgres").joinpath("queries.sql").read_text()
    parts = _HEADER.split(text)
    return {name: cast(LiteralString, body.strip()) for name, body in zip(parts[1::2], parts[2::2], strict=True)}


QUERIES = _load_queries()

Connection = psycopg.Connection[dict[str, Any]]


@contextmanager
def wrap_errors() -> Iterator[None]:
    """Translate psycopg's connection-level failures into ``DatabaseUnavailable``."""
    try:
        yield
    except psycopg_pool.PoolTimeout as exc:
        raise DatabaseUnavailable(f"PostgreSQL: no connection available ({exc})") from exc
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise DatabaseUnavailable(f"PostgreSQL is unavailable: {exc}".strip()) from exc


def _params(values: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if isinstance(v, dict) else v for k, v in values.items()}


class Database:
    """Named queries on a connection pool."""

    def __init__(self, pool: psycopg_pool.ConnectionPool[Connection]) -> None:
        self.pool = pool

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A connection in a transaction: committed on success, rolled back on error."""
        with wrap_errors(), self.pool.connection() as conn:
            yield conn

    def check(self, timeout: float) -> None:
        """Get a working connection within ``timeout`` seconds, or ``DatabaseUnavailable``."""
        with wrap_errors(), self.pool.connection(timeout=timeout) as conn:
            conn.execute("SELECT 1")

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

    def copy_rows(self, conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """``COPY`` rows into ``table`` (a trusted identifier of ours, never user input)."""
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
        )
        count = 0
        with wrap_errors(), conn.cursor() as cur, cur.copy(statement) as copy:
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
            with self.connection() as own, own.cursor() as cur:
                yield cur

    def close(self) -> None:
        self.pool.close()


def connect(dsn: str, *, pool: str = "pool", max_size: int = 4, timeout: float = 10.0) -> Database:
    """Open a pool on ``dsn``; it connects lazily, so a down database fails the first request
    with a 503 rather than the cold start."""
    kwargs: dict[str, Any] = {
        "kwargs": {"row_factory": dict_row, "connect_timeout": max(1, int(timeout))},
        "timeout": timeout,
        "open": False,
        "check": psycopg_pool.ConnectionPool.check_connection,
        "name": "finops",
    }
    if pool == "null":
        opened: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.NullConnectionPool(
            dsn, max_size=max_size, **kwargs
        )
    else:
        opened = psycopg_pool.ConnectionPool(dsn, min_size=0, max_size=max_size, max_idle=300, **kwargs)
    opened.open(wait=False)
    return Database(opened)
