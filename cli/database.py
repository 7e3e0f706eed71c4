"""The database of the ``finops`` commands: ``DATABASE_URL`` and the functions' own database
settings from the environment (``DATABASE_POOL``, the connect, lock and statement timeouts), so a
command behaves as the functions do, behind PgBouncer too, and a refused database fails within
``DATABASE_CONNECT_TIMEOUT_SECONDS``.

A command checks the schema when it opens the database, before its first query, so an empty or
older database says "run `finops migrate`" (exit 2: the operator's setup) rather than failing on a
missing table. ``finops migrate`` (and a diagnosis that must run on an unmigrated database) opens
it with ``schema=False``; the connection itself never checks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from finops.errors import InvalidInput
from infra.postgres import Database, check_schema, connect
from infra.postgres.common import Timeouts
from infra.settings import CommonSettings, database_url, load


def open_database(*, schema: bool = True) -> Database:
    """The database of ``DATABASE_URL``; with ``schema`` (the default), checked to hold exactly the
    schema this code ships (``infra.postgres.check_schema``), closed again when it does not."""
    url = database_url()  # its own message when unset, before the other settings are read
    settings = load(CommonSettings, {**os.environ, "DATABASE_URL": url})
    db = connect(
        url,
        pool=settings.DATABASE_POOL,
        timeout=settings.DATABASE_CONNECT_TIMEOUT_SECONDS,
        timeouts=Timeouts(settings.DATABASE_LOCK_TIMEOUT_SECONDS, settings.DATABASE_STATEMENT_TIMEOUT_SECONDS),
    )
    if schema:
        try:
            check_schema(db)
        except BaseException:
            db.close()
            raise
    return db


def migrate() -> str:
    """Apply the pending migrations to ``DATABASE_URL``; the line saying which."""
    from infra.postgres import apply_migrations

    db = open_database(
        schema=False
    )  # DATABASE_POOL=null and the timeouts behind PgBouncer, as the install Job passes them
    try:
        applied = apply_migrations(db)
    finally:
        db.close()
    return f"applied migrations: {', '.join(f'{v:03d}' for v in applied)}" if applied else "schema is up to date"


def require_known_cluster(db: Database, cluster: str | None, also: Iterable[str] = ()) -> None:
    """Refuse a ``--cluster`` the database has no hour of (nor ``also`` names: the policy's fixed
    costs, ``CLUSTER_ID``), listing the known ones: a typo must not read as a report of zeros."""
    if cluster is None:
        return
    known = {row["cluster"] for row in db.fetch_all("known_clusters")} | set(also)
    if cluster not in known:
        listed = ", ".join(sorted(known)) or "none yet (run finops collect)"
        raise InvalidInput(f"--cluster {cluster!r} is not a cluster of this database; known clusters: {listed}")
