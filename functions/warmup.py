"""Cold start of one target: validate its settings (fail fast, naming the variable) and open
its database pool, applying migrations. A database that is down does not stop the start: the
first request answers 503 and the caller retries."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from types import ModuleType

from finops.errors import PermanentError, TemporaryError
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


def _print(severity: str, message: str, target: str) -> None:
    now = datetime.now(UTC).isoformat()
    line = {"severity": severity, "message": redact(message), "function": target, "timestamp": now}
    print(json.dumps(line), file=sys.stdout, flush=True)
