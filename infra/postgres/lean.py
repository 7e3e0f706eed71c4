"""The webhook's gateway: the verbs of ``infra.postgres.database`` on one psycopg2 connection.

Why a second driver: ``on_sync`` scales to zero, so the first Argo CD webhook after a quiet
spell waits for a cold start, and importing psycopg (3) and its pool was most of what that start
added to a hello-world function's (about 130 ms of 250 on the project's machine; psycopg2
imports in about 20). The 202 needs one statement per group of concurrent webhooks
(``infra.group_commit``), and the group runs one at a time per process: one connection, no
pool. The measurement the webhook triggers, and every other function, keep psycopg; an
``on_sync`` worker imports it when its first measurement arrives.

The contract is ``Database``'s (``infra.postgres.common.Statements``), checked against it by
``tests/integration/test_lean_database.py``: named queries, dict rows, a ``dict`` parameter
stored as ``jsonb``, each verb one statement in autocommit, or behind PgBouncer
(``per_transaction``) in a transaction that sets the timeouts with ``SET LOCAL``; outside
PgBouncer each query is prepared once per session (``_execute_prepared``). Sessions are in UTC
with the configured timeouts. A connection unused for ``RECENTLY_USED_SECONDS`` is checked
(a round trip) and replaced when dead, one idle for ``MAX_IDLE_SECONDS`` is replaced.
Connection-level failures become ``DatabaseUnavailable`` (503) naming the cause without the
address or the credentials; any other error is a bug and stays a 500. A caller waits at most
``timeout`` seconds for the connection (another thread connecting, or running its statement).
"""

from __future__ import annotations

import functools
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg2
import psycopg2.extensions

from finops.errors import DatabaseUnavailable
from infra.logs import register_secret
from infra.postgres import common
from infra.postgres.common import QUERIES, SESSION, Timeouts, cause_of, malformed_dsn

T = TypeVar("T")
Cursor = psycopg2.extensions.cursor

MAX_IDLE_SECONDS = 300.0  # as the pool's max_idle


class LeanDatabase:
    """Named queries on one connection, opened on first use and again after it breaks."""

    def __init__(
        self, dsn: str, *, timeout: float = 10.0, timeouts: Timeouts | None = None, per_transaction: bool = False
    ) -> None:
        try:
            password = psycopg2.extensions.parse_dsn(dsn).get("password")
        except psycopg2.Error as exc:
            raise malformed_dsn(exc) from None
        register_secret(password)
        self._dsn = dsn
        self.timeout = timeout
        self.timeouts = timeouts or Timeouts()
        self.per_transaction = per_transaction
        self._lock = threading.Lock()
        self._conn: psycopg2.extensions.connection | None = None
        self._statements: set[str] = set()  # the queries prepared in the connection's session
        self._used = 0.0

    def execute(self, query: str, /, **params: Any) -> int:
        return self._run(query, params, lambda cur: cur.rowcount)

    def fetch_one(self, query: str, /, **params: Any) -> dict[str, Any] | None:
        return self._run(query, params, lambda cur: next(iter(_rows(cur, cur.fetchmany(1))), None))

    def fetch_all(self, query: str, /, **params: Any) -> list[dict[str, Any]]:
        return self._run(query, params, lambda cur: _rows(cur, cur.fetchall()))

    def check(self, timeout: float) -> None:
        """A working connection within ``timeout`` seconds, or ``DatabaseUnavailable``; it counts
        as just used (the first request after a worker's background connect takes it unchecked)."""
        with self._held(timeout):
            self._connection()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _run(self, query: str, params: dict[str, Any], result: Callable[[Cursor], T]) -> T:
        values = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in params.items()}
        with self._held(self.timeout):
            conn = self._connection()
            try:
                with conn.cursor() as cur:
                    if self.per_transaction:
                        conn.autocommit = False
                        self.timeouts.set_local(cur)
                        cur.execute(QUERIES[query], values)
                    else:
                        self._execute_prepared(cur, query, values)
                    out = result(cur)
                if self.per_transaction:
                    conn.commit()
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
                self._drop()
                raise DatabaseUnavailable(f"PostgreSQL is unavailable: {cause_of(exc)}") from exc
            except BaseException:
                if self.per_transaction and not conn.closed:
                    conn.rollback()
                raise
            finally:
                if self.per_transaction and not conn.closed:
                    conn.autocommit = True
            self._used = time.monotonic()
            return out

    def _execute_prepared(self, cur: Cursor, query: str, values: dict[str, Any]) -> None:
        """``query`` as a prepared statement of this session, prepared with its first use in the
        same round trip. PostgreSQL then plans it once, not at every webhook: psycopg prepares a
        query it runs often, and psycopg2 never does (its parameters are written into the text).
        Not behind PgBouncer, whose transaction pooling cannot keep a session's statements."""
        name = f"finops_{query}"
        prepare, arguments = _prepared(query)
        if query in self._statements:
            cur.execute(f"EXECUTE {name}{arguments}", values)
            return
        try:
            cur.execute(f"PREPARE {name} AS {prepare}; EXECUTE {name}{arguments}", values)
        except psycopg2.DatabaseError as exc:
            if not isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError):
                cur.execute("SELECT 1 FROM pg_prepared_statements WHERE name = %s", (name,))
                if cur.fetchone():  # prepared, then the execution failed: no second PREPARE
                    self._statements.add(query)
            raise
        self._statements.add(query)

    @contextmanager
    def _held(self, timeout: float) -> Iterator[None]:
        """The connection's lock, or ``DatabaseUnavailable`` after ``timeout`` seconds."""
        if not self._lock.acquire(timeout=timeout):
            raise DatabaseUnavailable(
                f"PostgreSQL is unavailable: no connection within {timeout:g} s (another request "
                "held the webhook's connection, connecting or running its statement)"
            )
        try:
            yield
        finally:
            self._lock.release()

    def _connection(self) -> psycopg2.extensions.connection:
        """The open connection (the lock held): checked when idle a while, else a new one."""
        idle = time.monotonic() - self._used
        if self._conn is not None and (self._conn.closed or idle >= MAX_IDLE_SECONDS):
            self._drop()
        if self._conn is not None and idle >= common.RECENTLY_USED_SECONDS:
            try:
                with self._conn.cursor() as cur:
                    cur.execute("SELECT 1")
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                self._drop()
        if self._conn is None:
            try:
                self._conn = self._connect()
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
                raise DatabaseUnavailable(f"PostgreSQL is unavailable: {cause_of(exc)}") from exc
        self._used = time.monotonic()
        return self._conn

    def _connect(self) -> psycopg2.extensions.connection:
        conn = psycopg2.connect(self._dsn, connect_timeout=max(1, int(self.timeout)))
        try:
            for caster in _UUIDS:
                psycopg2.extensions.register_type(caster, conn)
            conn.autocommit = True
            with conn.cursor() as cur:
                if not self.per_transaction:
                    self.timeouts.set_session(cur)
                for statement in SESSION:
                    cur.execute(statement)
        except BaseException:
            conn.close()
            raise
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._statements.clear()


_PARAMETER = re.compile(r"%\((\w+)\)s")


@functools.cache
def _prepared(query: str) -> tuple[str, str]:
    """``query``'s text to ``PREPARE`` (each distinct ``%(name)s`` a ``$n``) and the arguments of
    its ``EXECUTE``, in that order, as psycopg2 parameters: ``"(%(a)s, %(b)s)"``, or empty."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    text = _PARAMETER.sub(number, QUERIES[query].rstrip().removesuffix(";"))
    return text, f"({', '.join(f'%({n})s' for n in names)})" if names else ""


def _uuid(value: str | bytes | None, _: Cursor) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(value if isinstance(value, str) else value.decode())


_UUID = psycopg2.extensions.new_type((2950,), "UUID", _uuid)
_UUIDS = (_UUID, psycopg2.extensions.new_array_type((2951,), "UUID[]", _UUID))  # as psycopg reads them


def _rows(cur: Cursor, rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    names = [column.name for column in cur.description or ()]
    return [dict(zip(names, row, strict=True)) for row in rows]
