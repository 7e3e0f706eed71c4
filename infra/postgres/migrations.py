"""Numbered ``.sql`` migrations, applied in order under an advisory lock.

Several replicas may start at once; the session-level advisory lock makes the second wait and
then find nothing left to do. Each migration runs in its own transaction with its
``schema_migrations`` row, and a checksum catches an edited, already-applied file.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import re
from dataclasses import dataclass

from finops.errors import FinOpsError
from infra.postgres.database import Database

log = logging.getLogger(__name__)

_LOCK_KEY = 0x46494E4F  # "FINO"
_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def available() -> list[Migration]:
    folder = importlib.resources.files("infra.postgres").joinpath("migrations")
    found = []
    for item in folder.iterdir():
        match = _FILE.fullmatch(item.name)
        if match:
            found.append(Migration(int(match[1]), match[2], item.read_text()))
    return sorted(found, key=lambda m: m.version)


def apply_migrations(db: Database) -> list[int]:
    """Apply pending migrations; returns the versions applied by this call."""
    applied_now: list[int] = []
    with db.connection() as conn:
        conn.autocommit = True
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {
                row["version"]: row["checksum"]
                for row in conn.execute("SELECT version, checksum FROM schema_migrations")
            }
            for migration in available():
                if migration.version in done:
                    if done[migration.version] != migration.checksum:
                        raise FinOpsError(
                            f"migration {migration.version:03d}_{migration.name}.sql was edited after it was applied"
                        )
                    continue
                with conn.transaction():
                    conn.execute(migration.sql)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                        (migration.version, migration.name, migration.checksum),
                    )
                log.info(
                    "applied migration", extra={"fields": {"migration": f"{migration.version:03d}_{migration.name}"}}
                )
                applied_now.append(migration.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
            conn.autocommit = False
    return applied_now
