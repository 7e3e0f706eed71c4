"""Cold start of one target, in two places.

1. gunicorn's master (``functions/main.py``, while functions-framework builds the app): the
   target's settings are validated, so a missing or malformed variable stops the start naming it
   (exit 3). Nothing touches the database here unless ``MIGRATE_ON_START`` is set (the local
   stack's way: the migration runs before anything serves). Without it (the install Job
   migrates), the master only imports psycopg and its pool (``infra.clients`` does), once for
   all its workers: a connection and the schema check would delay the fork, and so the first
   answer.
2. each worker gunicorn forks: at once, in a background thread, while gunicorn starts the worker
   and the first request travels, the worker opens its pool (``infra.clients.database_from``)
   and one connection and checks the schema, after building what the target lists in ``WARM``
   (on_sync's CloudEvent client). A schema newer than this code (or edited
   migrations) stops the start: the worker exits with gunicorn's boot-error status (3), on which
   gunicorn's master halts, so the revision never becomes ready. A database that is down, or a
   schema still behind, does not: requests answer 503 until it is reachable and migrated.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from datetime import UTC, datetime
from types import ModuleType

from finops.errors import FinOpsError, PermanentError, TemporaryError
from infra.clients import database_from
from infra.logs import redact

BOOT_ERROR = 3  # gunicorn's WORKER_BOOT_ERROR: a worker exiting with it halts the master


def warm_up(target: str, functions: ModuleType) -> None:
    handler = getattr(functions, target, None)
    if handler is None:
        return  # functions-framework reports the unknown target itself
    module = sys.modules[handler.__module__]
    try:
        settings = module.settings()
        if settings.MIGRATE_ON_START:
            database_from(settings)
    except PermanentError as exc:
        _print("CRITICAL", f"{target} cannot start: {exc.message}", target)
        raise SystemExit(BOOT_ERROR) from exc
    except TemporaryError as exc:
        _print("WARNING", f"{target} started without its database: {exc.message}", target)
    os.register_at_fork(after_in_child=lambda: _connect_soon(module, target))


def _connect_soon(module: ModuleType, target: str) -> None:
    """In a forked worker: open the pool, one connection and check the schema, in the background."""

    def connect() -> None:
        settings = module.settings()
        for prepare in getattr(module, "WARM", ()):  # e.g. on_sync's CloudEvent client
            prepare()
        try:
            database_from(settings).check(settings.DATABASE_CONNECT_TIMEOUT_SECONDS)
        except PermanentError as exc:
            _print("CRITICAL", f"{target} cannot start: {exc.message}", target)
            os._exit(BOOT_ERROR)  # the whole process: gunicorn's master then halts
        except FinOpsError as exc:  # a request reports it, with its 503
            _print("WARNING", f"{target} started without its database: {exc.message}", target)

    threading.Thread(target=connect, name="connect-database", daemon=True).start()


def _print(severity: str, message: str, target: str) -> None:
    now = datetime.now(UTC).isoformat()
    line = {"severity": severity, "message": redact(message), "function": target, "timestamp": now}
    print(json.dumps(line), file=sys.stdout, flush=True)
