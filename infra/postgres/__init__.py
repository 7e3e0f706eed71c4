"""PostgreSQL: the gateway (``database``: psycopg's pool), migrations and named queries. Only this
package imports psycopg; everything else calls ``execute/fetch_one/fetch_all`` by query name.
"""

from infra.postgres.database import Database, address, connect
from infra.postgres.migrations import apply_migrations, check_schema

__all__ = ["Database", "address", "apply_migrations", "check_schema", "connect"]
