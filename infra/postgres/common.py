"""What the PostgreSQL gateway (``infra.postgres.database``) is built on: the named queries, the
verbs' contract, the session's settings and the redacted cause of a failure.
"""

from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from typing import Any, LiteralString, Protocol, cast

from infra.logs import one_line

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def _load_queries() -> dict[str, LiteralString]:
    """Every ``queries/*.sql`` file's named queries (one file per use case); a name is defined once."""
    queries: dict[str, LiteralString] = {}
    for file in sorted(importlib.resources.files("infra.postgres").joinpath("queries").iterdir(), key=str):
        if not file.name.endswith(".sql"):
            continue
        parts = _HEADER.split(file.read_text())
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in queries:
                raise RuntimeError(f"{file.name}: the query {name} is defined twice")
            queries[name] = cast(LiteralString, body.strip())
    return queries


QUERIES = _load_queries()


class Statements(Protocol):
    """The verbs of a gateway: one named query each, run in autocommit when no connection is given
    (atomic on its own); a ``dict`` parameter is stored as ``jsonb``; rows come back as dicts."""

    def execute(self, query: str, /, **params: Any) -> int: ...

    def fetch_one(self, query: str, /, **params: Any) -> dict[str, Any] | None: ...

    def fetch_all(self, query: str, /, **params: Any) -> list[dict[str, Any]]: ...


class _Executes(Protocol):
    def execute(self, query: LiteralString, params: tuple[str, bool, str, bool], /) -> object: ...


SESSION = ("SET TIME ZONE 'UTC'", "SET DateStyle = 'ISO, YMD'")
"""Every session in UTC, whatever the server's or role's default: timestamps come back in UTC
(so hour arithmetic never crosses a DST change) and advisory-lock keys built from their text
are the same for every client. Set per connection; PgBouncer tracks ``TimeZone`` and
``DateStyle`` per client, so they also hold behind its transaction pooling."""

RECENTLY_USED_SECONDS = 5.0
"""A connection used less than this long ago is used again without a check (a round trip): a
server restart in that window fails one use with a 503, after which the broken connection is
dropped. Older ones are checked first, and replaced when dead."""


@dataclass(frozen=True)
class Timeouts:
    """PostgreSQL's ``lock_timeout`` and ``statement_timeout`` in seconds; 0 is no limit."""

    lock_seconds: float = 30.0
    statement_seconds: float = 300.0

    def set(self, conn: _Executes, *, local: bool) -> None:
        """For the session, or (``local``) the current transaction only (it begins one): what holds
        behind PgBouncer."""
        conn.execute(
            "SELECT set_config('lock_timeout', %s, %s), set_config('statement_timeout', %s, %s)",
            (f"{round(self.lock_seconds * 1000)}ms", local, f"{round(self.statement_seconds * 1000)}ms", local),
        )


# libpq's "where" parts: the cause is kept, the address dropped (error bodies must not map the network).
_WHERE = re.compile(
    r"connection failed: |connection to server (?:at \"[^\"]*\"(?: \([^)]*\))?, port \d+|on socket \"[^\"]*\") "
    r"failed: |- host: '[^']*', port: '[^']*', hostaddr: '[^']*': |(?:FATAL|ERROR): +"
)
_HOST_NAME = re.compile(r"could not translate host name \"[^\"]*\" to address|failed to resolve host '[^']*'")
_HINTS = ("Is the server running", "Multiple connection attempts failed", "All failures were")


def cause_of(exc: BaseException) -> str:
    """The driver's message as one redacted line without host, address or port."""
    causes: list[str] = []
    for line in str(exc).splitlines():
        line = _HOST_NAME.sub("could not resolve the host name", _WHERE.sub("", line)).strip()
        if line and not line.startswith(_HINTS) and line not in causes:
            causes.append(line)
    return one_line("; ".join(causes)) or type(exc).__name__
