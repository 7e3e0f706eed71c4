"""PostgreSQL: the gateways (``database``: psycopg's pool, for everything; ``lean``: one psycopg2
connection, for the webhook's acknowledgement), migrations and named queries. Only this package
imports a driver; everything else calls ``execute/fetch_one/fetch_all`` by query name.

The names below are loaded when first used: importing ``infra.postgres.lean`` or
``infra.postgres.migrations`` must not import psycopg (the webhook's cold start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.postgres.database import Database, connect
    from infra.postgres.migrations import apply_migrations, check_schema

__all__ = ["Database", "apply_migrations", "check_schema", "connect"]

_WHERE = {"Database": "database", "connect": "database", "apply_migrations": "migrations", "check_schema": "migrations"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
