"""The ``finops`` command's argument types: every value a user types is checked as argparse parses
it, so a bad one is argparse's usage error (exit 2) naming the option and echoing the value as
typed, never a failure deep in a query.

Each type is a function from the typed text to the value (argparse's ``type=``); it raises
``argparse.ArgumentTypeError`` with a message that quotes the text as typed. ``Parser`` prints
argparse's error on one line, so that a usage error reads like every other failure.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import NoReturn
from urllib.parse import urlsplit

from finops.errors import InvalidInput
from finops.labels import validate_namespace
from infra.logs import one_line

_MONTH = re.compile(r"[0-9]{4}-[0-9]{2}")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")  # Kubernetes' label value, not empty


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage error is one line on stderr, ``finops: <prog>: <what>``,
    pointing at ``--help`` instead of printing the usage (exit 2, as argparse's own)."""

    def error(self, message: str) -> NoReturn:
        line = one_line(f"{self.prog.removeprefix('finops ')}: {message} (see {self.prog} --help)")
        print(f"finops: {line}", file=sys.stderr)  # redacted: a mistyped URL may carry a password
        sys.exit(2)


def _refuse(text: str, what: str) -> NoReturn:
    raise argparse.ArgumentTypeError(f"{text!r} is not {what}")


def count(maximum: int) -> Callable[[str], int]:
    """A whole number from 1 to ``maximum`` (rows, days, pings, calls)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            _refuse(text, f"a whole number from 1 to {maximum}")
        if not 1 <= value <= maximum:
            _refuse(text, f"from 1 to {maximum}")
        return value

    parse.__name__ = "count"
    return parse


def seconds(minimum: float) -> Callable[[str], float]:
    """A finite number of seconds, at least ``minimum``."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            _refuse(text, "a number of seconds")
        if not math.isfinite(value) or value < minimum:
            _refuse(text, f"a finite number of seconds, at least {minimum:g}")
        return value

    parse.__name__ = "seconds"
    return parse


def port(text: str) -> int:
    """A TCP port, 1 to 65535."""
    try:
        value = int(text.strip())
    except ValueError:
        _refuse(text, "a port number")
    if not 1 <= value <= 65535:
        _refuse(text, "a port number from 1 to 65535")
    return value


def moment(text: str) -> datetime:
    """A UTC date (``2026-10-01``, its midnight) or an RFC 3339 time with an offset, in UTC."""
    stripped = text.strip()
    if _DAY.fullmatch(stripped):
        try:
            return datetime.strptime(stripped, "%Y-%m-%d").replace(tzinfo=UTC)
        except ValueError:
            _refuse(text, "a date (no such day)")
    try:
        value = datetime.fromisoformat(stripped.replace("Z", "+00:00").replace("z", "+00:00"))
        if value.tzinfo is None:
            _refuse(text, "a time with a UTC offset (e.g. 2026-10-01T06:00:00Z)")
        return value.astimezone(UTC)
    except (ValueError, OverflowError):
        _refuse(text, "a UTC date (2026-10-01) or an RFC 3339 time (2026-10-01T06:00:00Z)")


def month(text: str, *, today: date | None = None) -> str:
    """A calendar month as ``YYYY-MM``: typed so, or ``last`` (the last full UTC month) or
    ``current`` (the UTC month under way)."""
    stripped = text.strip()
    first = (today or datetime.now(UTC).date()).replace(day=1)
    if stripped == "current":
        return f"{first:%Y-%m}"
    if stripped == "last":
        return f"{first - timedelta(days=1):%Y-%m}"
    if not _MONTH.fullmatch(stripped):
        _refuse(text, "a month: YYYY-MM (2026-10), last or current")
    year, number = (int(part) for part in stripped.split("-"))
    if not (1 <= year <= 9998 and 1 <= number <= 12):
        _refuse(text, "a month: YYYY-MM with a month from 01 to 12")
    return stripped


def cluster(text: str) -> str:
    """A cluster id, by the rule of ``CLUSTER_ID``: a DNS-1123 label (``prod-eu``)."""
    try:
        return validate_namespace(text, field="cluster")
    except InvalidInput:
        _refuse(text, "a cluster id (lower-case letters, digits and '-', at most 63, e.g. prod-eu)")


def label_value(text: str) -> str:
    """A Kubernetes label value that is not empty: what an owner (a team) is called."""
    if not _LABEL_VALUE.fullmatch(text):
        _refuse(text, "a label value (letters, digits, '-', '_', '.', at most 63)")
    return text


def http_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host."""
    try:
        parts = urlsplit(text.strip())
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # an unclosed [ or a bad port
        ok = False
    if not ok:
        _refuse(text, "an http:// or https:// URL")
    return text.strip()


def text(value: str) -> str:
    """Any text that is not empty and is on one line (a path, a name)."""
    if not value.strip() or "\n" in value or "\x00" in value:
        _refuse(value, "a value: it is empty, or not on one line")
    return value
