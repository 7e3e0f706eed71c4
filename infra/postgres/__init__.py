"""PostgreSQL: the one gateway (pool, migrations, named queries). Only ``infra.postgres``
imports psycopg; everything else calls ``Database.execute/fetch_one/fetch_all`` by query name.
"""

from infra.postgres.database import Database, connect
from infra.postgres.migrations import apply_migrations, check_schema

__all__ = ["Database", "apply_migrations", "check_schema", "connect"]
