"""JSON log lines, one object per line, with the keys Knative's own components use.

Every line carries ``severity``, ``message``, ``timestamp``, ``function`` and, inside a run,
``run_id``. Extra structured fields are passed with ``logger.info("...", extra={"fields": {...}})``.

Secrets never reach a log line, an error body, a CLI message or ``job_runs``: ``redact`` removes
the userinfo of any URL (``http://user:pw@host`` becomes ``http://***@host``), ``user:pw@host``
written without a scheme (a typo'd ``postgres//user:pw@host``), ``password=...`` (and ``token=``,
``secret=``) in libpq conninfo strings and query strings, ``Bearer``/``Basic`` credentials, and
every value handed to ``register_secret`` (the database password, whatever its spelling). The
formatter applies it to every message, field and stack trace, so the lines of libraries
(psycopg_pool's connection warnings, httpx) are covered too, not only ours.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

REDACTED = "***"

# scheme://userinfo@ (scheme and one slash optional: ``postgres//user:pw@host`` is covered too)
_URL_USERINFO = re.compile(r"(?P<lead>/{1,2})[^\s/?#@\"'<>]*(?::[^\s\"'<>]*)?@(?=[^\s@]*(?:\s|$|[\"'<>]))")
# user:password@host without any //
_BARE_USERINFO = re.compile(r"(?<![\w/.%+-])[\w.%+-]+:[^\s@\"'<>/]+@(?=[\w\[])")
_KEY_VALUE = re.compile(
    r"(?i)\b(?P<key>password|passwd|pwd|sslpassword|token|secret|api[_-]?key|access[_-]?token)"
    r"(?P<eq>\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'?|\"[^\"]*\"?|[^\s&;,'\"]+)"
)
# Authorization credentials; "bearer token" and the like in prose are words, not credentials.
_AUTHORIZATION = re.compile(
    r"\b(?P<scheme>[Bb]earer|BEARER|Basic)(?P<gap>\s+)"
    r"(?!(?:tokens?|credentials?|auth\w*|header|scheme)\b)[A-Za-z0-9._~+/=:-]+"
)
# What every pattern above needs: a text without any of these has nothing for them to remove
# ("earer" stands for Bearer, bearer and BEARER); substring tests are much cheaper than the patterns.
_CREDENTIAL_MARKS = ("@", "=", "earer", "EARER", "Basic")


def _may_hold_credential(text: str) -> bool:
    return any(mark in text for mark in _CREDENTIAL_MARKS)


_secrets: set[str] = set()
_escaped_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact ``value`` wherever it appears from now on (short values are ignored: too common)."""
    if value and len(value) >= 4:
        _secrets.add(value)
        if json.dumps(value)[1:-1] != value:  # JSON would escape some of it: look for it field by field
            _escaped_secrets.add(value)


def redact(text: str) -> str:
    """``text`` without credentials: see the module docstring for what is removed."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    if not _may_hold_credential(text):  # most log fields: nothing for the four patterns
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m['lead']}{REDACTED}@", text)
    text = _BARE_USERINFO.sub(f"{REDACTED}@", text)
    text = _KEY_VALUE.sub(lambda m: f"{m['key']}{m['eq']}{REDACTED}", text)
    return _AUTHORIZATION.sub(lambda m: f"{m['scheme']}{m['gap']}{REDACTED}", text)


def redact_value(value: Any) -> Any:
    """``value`` (a log field: a string, number, mapping or list of them) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [redact_value(v) for v in value]
    return redact(str(value))


def one_line(text: str) -> str:
    """``text`` redacted and folded onto one line (libpq's hints come on indented lines)."""
    return " ".join(part.strip() for part in redact(text).splitlines() if part.strip())


current_run_id: ContextVar[str | None] = ContextVar("current_run_id", default=None)

_SEVERITIES = frozenset({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})
_function_name = "finops"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "severity": record.levelname if record.levelname in _SEVERITIES else "DEFAULT",
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
        return _plain_line(line) or json.dumps(redact_value(line), separators=(",", ":"))


def _plain_line(line: dict[str, Any]) -> str | None:
    """``line`` as JSON when it holds nothing ``redact`` would change, else ``None`` (the caller
    redacts field by field). One scan of the serialised line instead of one per field: a
    credential pattern needs ``@``, ``=``, ``Bearer`` or ``Basic``, which JSON never escapes, and
    a registered secret is looked for only when JSON writes it as is."""
    if _escaped_secrets:
        return None
    try:
        text = json.dumps(line, separators=(",", ":"))
    except (TypeError, ValueError):  # a value JSON cannot write as is (redact_value makes it a string)
        return None
    if _may_hold_credential(text) or any(secret in text for secret in _secrets):
        return None
    return text


class TextFormatter(logging.Formatter):
    """``finops: warning: ...`` lines for the command line, redacted and without tracebacks."""

    def format(self, record: logging.LogRecord) -> str:
        return f"finops: {record.levelname.lower()}: {one_line(record.getMessage())}"


def configure_cli() -> None:
    """Library warnings of a CLI command go to stderr as one redacted line each. The pool's
    reconnection warnings are left out: the command's own error carries their cause."""
    root = logging.getLogger()
    if not any(isinstance(h.formatter, TextFormatter) for h in root.handlers):  # once per process
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(TextFormatter())
        handler.setLevel(logging.WARNING)
        root.addHandler(handler)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


def configure(function: str, level: str = "INFO") -> None:
    """Send every log record to stdout as JSON; called once at cold start. The line holds no
    caller, thread or process, so the records do not look them up (the logging HOWTO's
    "Optimization")."""
    global _function_name
    _function_name = function
    logging._srcfile = None  # documented: findCaller is skipped
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Library chatter (httpx request lines, kubernetes client debug) stays out unless asked for.
    for noisy in ("httpx", "httpcore", "urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
