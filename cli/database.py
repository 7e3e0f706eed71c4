"""The database of the ``finops`` commands: ``DATABASE_URL`` and the functions' own database
settings from the environment (``DATABASE_POOL``, the connect, lock and statement timeouts), so a
command behaves as the functions do, behind PgBouncer too, and a refused database fails within
``DATABASE_CONNECT_TIMEOUT_SECONDS``."""

from __future__ import annotations

import os

from infra.postgres import Database, connect
from infra.postgres.common import Timeouts
from infra.settings import CommonSettings, database_url, load


def open_database() -> Database:
    url = database_url()  # its own message when unset, before the other settings are read
    settings = load(CommonSettings, {**os.environ, "DATABASE_URL": url})
    return connect(
        url,
        pool=settings.DATABASE_POOL,
        timeout=settings.DATABASE_CONNECT_TIMEOUT_SECONDS,
        timeouts=Timeouts(settings.DATABASE_LOCK_TIMEOUT_SECONDS, settings.DATABASE_STATEMENT_TIMEOUT_SECONDS),
    )


def migrate() -> str:
    """Apply the pending migrations to ``DATABASE_URL``; the line saying which."""
    from infra.postgres import apply_migrations

    db = open_database()  # DATABASE_POOL=null and the timeouts behind PgBouncer, as the install Job passes them
    try:
        applied = apply_migrations(db)
    finally:
        db.close()
    return f"applied migrations: {', '.join(f'{v:03d}' for v in applied)}" if applied else "schema is up to date"
