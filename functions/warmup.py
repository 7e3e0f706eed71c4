"""Cold start of one target: validate its settings (fail fast, naming the variable) and open
its database pool, checking the schema (or migrating, ``MIGRATE_ON_START``). A database that is
down does not stop the start: the first request answers 503 and the caller retries.

This runs in gunicorn's master; the worker it forks opens its own pool (a pool's threads do not
survive a fork) and connects at once, in a thread, while gunicorn starts the worker and the first
request travels: that request finds a connection instead of opening one (the schema was checked
before the fork)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from datetime import UTC, datetime
from types import ModuleType

from finops.errors import FinOpsError, PermanentError, TemporaryError
from functions.edge import database_from
from infra.logs import redact


def warm_up(target: str, functions: ModuleType) -> None:
    handler = getattr(functions, target, None)
    if handler is None:
        return  # functions-framework reports the unknown target itself
    module = sys.modules[handler.__module__]
    try:
        module.warm_up()
    except PermanentError as exc:
        _print("CRITICAL", f"{target} cannot start: {exc.message}", target)
        raise SystemExit(3) from exc
    except TemporaryError as exc:
        _print("WARNING", f"{target} started without its database: {exc.message}", target)
    os.register_at_fork(after_in_child=lambda: _connect_soon(module))


def _connect_soon(module: ModuleType) -> None:
    """In the forked worker: open the pool and one connection in the background."""

    def connect() -> None:
        settings = module.settings()
        with contextlib.suppress(FinOpsError):  # a request reports it, with its 503
            database_from(settings).check(settings.DATABASE_CONNECT_TIMEOUT_SECONDS)

    threading.Thread(target=connect, name="connect-database", daemon=True).start()


def _print(severity: str, message: str, target: str) -> None:
    now = datetime.now(UTC).isoformat()
    line = {"severity": severity, "message": redact(message), "function": target, "timestamp": now}
    print(json.dumps(line), file=sys.stdout, flush=True)
