"""PostgreSQL: the gateway (``database``: psycopg's pool), migrations and named queries. Only this
package imports psycopg; everything else calls ``execute/fetch_one/fetch_all`` by query name.

The names below are loaded when first used: importing ``infra.postgres.common`` or
``infra.postgres.migrations`` does not import psycopg (the CLI's commands that need no database).
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
