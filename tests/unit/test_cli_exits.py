"""We test the ``finops`` command's exit-status rule (``cli.exits``, documented in ``finops --help``):

- each kind of failure maps to its status: bad input or configuration 2, an unavailable dependency
  3, data that cannot give the answer 4, a bug 1;
- ``--month`` accepts ``YYYY-MM``, ``last`` (the last full month) and ``current``.
"""

from __future__ import annotations

from datetime import date

import httpx
import pytest

from cli import exits
from cli.arguments import month
from cli.main import DESCRIPTION, exit_status
from cli.ops import CallFailed
from finops.errors import (
    DatabaseUnavailable,
    IncompleteData,
    InvalidInput,
    NotFound,
    OpenCostUnavailable,
    SourceMisconfigured,
)
from infra.postgres.migrations import SchemaBehind, SchemaTooNew
from infra.settings import ConfigError


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (InvalidInput("x"), exits.USAGE),
        (ConfigError("x"), exits.USAGE),
        (NotFound("x"), exits.USAGE),
        (SourceMisconfigured("x"), exits.USAGE),
        (SchemaBehind("x"), exits.USAGE),
        (SchemaTooNew("x"), exits.USAGE),
        (FileNotFoundError(2, "No such file or directory", "bill.csv"), exits.USAGE),
        (DatabaseUnavailable("x"), exits.UNAVAILABLE),
        (OpenCostUnavailable("x"), exits.UNAVAILABLE),
        (CallFailed("x"), exits.UNAVAILABLE),
        (httpx.ConnectError("refused"), exits.UNAVAILABLE),
        (ConnectionResetError(104, "reset"), exits.UNAVAILABLE),
        (IncompleteData("x"), exits.NO_ANSWER),
        (KeyError("x"), exits.BUG),
        (ZeroDivisionError(), exits.BUG),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_each_failure_has_its_status(error: BaseException, status: int) -> None:
    assert exit_status(error) == status


def test_the_help_documents_every_status() -> None:
    said = " ".join(DESCRIPTION.split())
    for status, meaning in (
        (exits.OK, "success"),
        (exits.BUG, "internal error"),
        (exits.USAGE, "usage or bad input"),
        (exits.UNAVAILABLE, "a dependency is unavailable"),
        (exits.NO_ANSWER, "the data cannot give the answer"),
        (exits.INTERRUPTED, "interrupted"),
    ):
        assert f" {status} {meaning}" in said


@pytest.mark.parametrize(
    ("typed", "today", "meant"),
    [
        ("2026-10", date(2026, 12, 6), "2026-10"),
        ("last", date(2026, 12, 6), "2026-11"),
        ("last", date(2026, 1, 1), "2025-12"),
        ("current", date(2026, 12, 31), "2026-12"),
        (" 2026-02 ", date(2026, 12, 6), "2026-02"),
    ],
)
def test_a_month_is_typed_or_named(typed: str, today: date, meant: str) -> None:
    assert month(typed, today=today) == meant
