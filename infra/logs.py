"""JSON log lines, one object per line, with the keys Knative's own components use.

Every line carries ``severity``, ``message``, ``timestamp``, ``function`` and, inside a run,
``run_id``. Extra structured fields are passed with ``logger.info("...", extra={"fields": {...}})``.
A small stdlib formatter is enough; it keeps cold start cheap.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

current_run_id: ContextVar[str | None] = ContextVar("current_run_id", default=None)

_SEVERITY = {"DEBUG": "DEBUG", "INFO": "INFO", "WARNING": "WARNING", "ERROR": "ERROR", "CRITICAL": "CRITICAL"}
_function_name = "finops"


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "severity": _SEVERITY.get(record.levelname, "DEFAULT"),
            "message": record.getMessage(),
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "function": _function_name,
            "logger": record.name,
        }
        run_id = current_run_id.get()
        if run_id:
            line["run_id"] = run_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info and record.levelno >= logging.ERROR:
            line["stacktrace"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


def configure(function: str, level: str = "INFO") -> None:
    """Send every log record to stdout as JSON; called once at cold start."""
    global _function_name
    _function_name = function
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Library chatter (httpx request lines, kubernetes client debug) stays out unless asked for.
    for noisy in ("httpx", "httpcore", "urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
