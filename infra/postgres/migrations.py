"""Numbered ``.sql`` migrations, applied in order, each in one transaction under a lock.

Each migration and its ``schema_migrations`` row are one transaction that first takes a
transaction-scoped advisory lock (``pg_advisory_xact_lock``), so it also works through
PgBouncer's transaction pooling: replicas or install Jobs migrating at once serialise, and the
second finds the migration recorded and skips it. A checksum catches an edited, already-applied
file; two files with the same number are refused before anything runs.

Who migrates: the install Job (``finops migrate``). A function's cold start only calls
``check_schema`` (unless ``MIGRATE_ON_START``): a schema newer than this code knows is refused
(``SchemaTooNew``: an older image must not write to a newer schema), an older one answers 503
until ``finops migrate`` has run (``SchemaBehind``). ``finops migrate`` from an older image
refuses a newer schema too.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Any

from finops.errors import PermanentError, TemporaryError
from infra.postgres.common import QUERIES, Statements
from infra.postgres.database import Connection, Database

log = logging.getLogger(__name__)

_LOCK_KEY = 0x46494E4F  # "FINO"
_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


class MigrationError(PermanentError):
    """The migrations or the schema cannot be used as they are."""

    http_status = 500


class SchemaTooNew(MigrationError):
    """The database schema is newer than this code knows; run the image that migrated it."""


class SchemaBehind(TemporaryError):
    """The database schema is older than this code needs; run `finops migrate` (the install Job)."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()

    @property
    def file(self) -> str:
        return f"{self.version:03d}_{self.name}.sql"


def available(folder: Traversable | None = None) -> list[Migration]:
    """The migrations shipped with the code, in order. Two files with one number, or a ``.sql``
    file not named ``NNN_name.sql``, is a ``MigrationError`` naming them (so a bad merge fails
    the tests and every ``finops migrate``, never half a migration)."""
    folder = folder or importlib.resources.files("infra.postgres").joinpath("migrations")
    found: list[Migration] = []
    for item in folder.iterdir():
        if not item.name.endswith(".sql"):
            continue
        match = _FILE.fullmatch(item.name)
        if not match:
            raise MigrationError(f"migration file {item.name} is not named NNN_name.sql (e.g. 011_retention.sql)")
        found.append(Migration(int(match[1]), match[2], item.read_text()))
    found.sort(key=lambda m: (m.version, m.name))
    by_version: dict[int, list[str]] = {}
    for migration in found:
        by_version.setdefault(migration.version, []).append(migration.file)
    duplicates = [files for files in by_version.values() if len(files) > 1]
    if duplicates:
        raise MigrationError(
            "migrations share a number: " + "; ".join(" and ".join(files) for files in duplicates) + " (renumber one)"
        )
    return found


def _applied(fetch_all: Callable[[str], list[dict[str, Any]]]) -> dict[int, str] | None:
    """Applied versions and their checksums; None when ``schema_migrations`` does not exist.
    ``fetch_all`` runs a named query: a gateway's verb, or ``_unprepared`` on a connection."""
    (row,) = fetch_all("schema_migrations_present")
    if not row["present"]:
        return None
    return {r["version"]: r["checksum"] for r in fetch_all("schema_migrations_applied")}


def _unprepared(conn: Connection) -> Callable[[str], list[dict[str, Any]]]:
    """A named query on ``conn``, never prepared (psycopg prepares a query run 5 times on one
    connection): a DATABASE_URL through PgBouncer's transaction pooling cannot keep a prepared
    statement."""
    return lambda query: conn.execute(QUERIES[query], prepare=False).fetchall()


def _refuse_unknown(applied: dict[int, str], known: list[Migration]) -> None:
    """A version this code does not know: an older image against a newer schema."""
    versions = {m.version for m in known}
    unknown = sorted(set(applied) - versions)
    if not unknown:
        return
    newest = known[-1].version if known else 0
    if unknown[-1] > newest:
        raise SchemaTooNew(
            f"the database schema is at version {max(applied):03d}, newer than this code knows "
            f"({newest:03d}): run the image that migrated it, or a newer one"
        )
    raise MigrationError(
        f"the database has migrations this code does not ship: {', '.join(f'{v:03d}' for v in unknown)}"
    )


def _refuse_edited(applied: dict[int, str], known: Iterable[Migration]) -> None:
    for migration in known:
        if migration.version in applied and applied[migration.version] != migration.checksum:
            raise MigrationError(f"migration {migration.file} was edited after it was applied")


def check_schema(db: Statements) -> None:
    """Is the schema exactly the one this code ships? ``SchemaTooNew`` (refuse to serve),
    ``SchemaBehind`` (run ``finops migrate``), ``MigrationError`` (edited or unknown migrations).
    ``db`` is the gateway (``infra.postgres.database``) or anything with its verbs."""
    known = available()
    applied = _applied(db.fetch_all)
    if not applied:
        raise SchemaBehind(
            "the database has no schema: run `finops migrate` (the install Job) with the same DATABASE_URL"
        )
    _refuse_unknown(applied, known)
    _refuse_edited(applied, known)
    pending = [m for m in known if m.version not in applied]
    if pending:
        raise SchemaBehind(
            f"the database schema is at version {max(applied):03d}, this code needs {known[-1].version:03d}: "
            "run `finops migrate` (the install Job) with this image"
        )


def _lock(conn: Connection, db: Database) -> None:
    """The migrations' lock, until this transaction ends. Waiting for it is not bounded (another
    replica may be running a long migration); the migration itself keeps ``lock_timeout`` (a DDL
    lock queued behind a long query fails rather than stall every query queued behind it) but
    has no ``statement_timeout``."""
    conn.execute("SET LOCAL lock_timeout = 0", prepare=False)
    conn.execute("SET LOCAL statement_timeout = 0", prepare=False)
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,), prepare=False)
    lock_timeout = f"{round(db.timeouts.lock_seconds * 1000)}ms"
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (lock_timeout,), prepare=False)


def apply_migrations(db: Database) -> list[int]:
    """Apply pending migrations; returns the versions applied by this call."""
    known = available()
    with db.connection() as conn:
        _lock(conn, db)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        applied: dict[int, Any] = _applied(_unprepared(conn)) or {}
    _refuse_unknown(applied, known)
    _refuse_edited(applied, known)
    applied_now: list[int] = []
    for migration in known:
        if migration.version in applied:
            continue
        with db.connection() as conn:
            _lock(conn, db)
            now_applied = _applied(_unprepared(conn)) or {}
            _refuse_unknown(now_applied, known)
            if migration.version in now_applied:  # another replica applied it while we waited
                _refuse_edited(now_applied, [migration])
                continue
            conn.execute(migration.sql, prepare=False)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (migration.version, migration.name, migration.checksum),
                prepare=False,
            )
        log.info("applied migration", extra={"fields": {"migration": migration.file[:-4]}})
        applied_now.append(migration.version)
    return applied_now
