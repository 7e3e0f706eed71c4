"""We test these aspects of ``infra.logs.redact`` and where it is applied:

- URL userinfo (with or without a password, a typo'd scheme, a password holding ``@``) is removed,
  the rest of the URL kept;
- ``password=`` in libpq conninfo strings and query strings, and Authorization credentials, are
  removed, while prose ("bearer token", "basic checks") is left alone;
- a registered secret is removed whatever surrounds it;
- the JSON formatter redacts the message, every field and the stack trace;
- psycopg's connection errors become one line without host, IP or port.
"""

from __future__ import annotations

import json
import logging
import sys

import pytest

from functions.edge import public_message
from infra.logs import JsonFormatter, one_line, redact, register_secret
from infra.postgres.database import cause_of

CASES = [
    ("postgres//user:pw-1234@db.internal/finops", "postgres//***@db.internal/finops"),
    ("postgres:/user:pw-1234@db/finops", "postgres:/***@db/finops"),
    ("postgresql://user:p@ss-1234@db:5432/finops?sslmode=require", "postgresql://***@db:5432/finops?sslmode=require"),
    ("OpenCost at http://admin:pw-1234@opencost:9003 failed", "OpenCost at http://***@opencost:9003 failed"),
    ("https://ghp_tok1234@github.com/x", "https://***@github.com/x"),
    ("host=db port=5432 password=pw-1234 user=finops", "host=db port=5432 password=*** user=finops"),
    ("host=db password='pw 12\\' 34' user=finops", "host=db password=*** user=finops"),
    ("http://h/x?password=pw-1234&y=1", "http://h/x?password=***&y=1"),
    ("Authorization: Bearer pw-1234", "Authorization: Bearer ***"),
    ("Basic dXNlcjpwdw==", "Basic ***"),
    ("Authorization: BEARER pw-1234", "Authorization: BEARER ***"),
    ("authorization: bearer pw-1234", "authorization: bearer ***"),
    ("Authorization: Basic pw-1234", "Authorization: Basic ***"),  # no = or @ in the line
    ("user:pw-1234@db", "***@db"),
]
UNCHANGED = [
    "missing or wrong bearer token in the Authorization header",
    "basic checks passed at 10:00:00Z",
    "OpenCost at http://opencost:9003 rejected /allocation: HTTP 400",
    "Illegal header value b'Bearer '",
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[1] for c in CASES])
def test_credentials_are_removed(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert "1234" not in redact(text)


@pytest.mark.parametrize("text", UNCHANGED)
def test_prose_and_addresses_are_kept(text: str) -> None:
    assert redact(text) == text


def test_a_registered_secret_is_removed_anywhere() -> None:
    register_secret("zq-registered-7781")
    assert redact("pw was zq-registered-7781!") == "pw was ***!"


def test_short_values_are_not_registered() -> None:
    register_secret("ab")
    assert redact("abc") == "abc"


def test_the_json_formatter_redacts_message_fields_and_stacktrace() -> None:
    try:
        raise RuntimeError("connect to postgresql://u:pw-1234@db/x failed")
    except RuntimeError:
        record = logging.LogRecord("psycopg.pool", logging.ERROR, __file__, 1, "error in %r: %s", None, sys.exc_info())
    record.args = ("finops", "password=pw-1234 host=db")
    record.fields = {"error": "Bearer pw-1234", "nested": {"url": "http://a:pw-1234@h"}, "list": ["u:pw-1234@h"]}
    line = JsonFormatter().format(record)
    assert "pw-1234" not in line
    parsed = json.loads(line)
    assert parsed["message"] == "error in 'finops': password=*** host=db"
    assert parsed["nested"] == {"url": "http://***@h"}
    assert "RuntimeError: connect to postgresql://***@db/x failed" in parsed["stacktrace"]


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        (
            'connection failed: connection to server at "10.0.0.7", port 5432 failed: FATAL:  password '
            'authentication failed for user "finops"',
            'password authentication failed for user "finops"',
        ),
        (
            'connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused\n'
            "\tIs the server running on that host and accepting TCP/IP connections?",
            "Connection refused",
        ),
        (
            'connection failed: connection to server on socket "/tmp/x/.s.PGSQL.5432" failed: FATAL:  '
            'database "nope" does not exist',
            'database "nope" does not exist',
        ),
        (
            "failed to resolve host 'db.internal': [Errno -2] Name or service not known",
            "could not resolve the host name: [Errno -2] Name or service not known",
        ),
    ],
    ids=["password", "refused", "missing-database", "unknown-host"],
)
def test_database_causes_name_no_address(message: str, cause: str) -> None:
    assert cause_of(Exception(message)) == cause


def test_error_bodies_drop_addresses() -> None:
    message = "OpenCost at http://u:pw-1234@10.1.2.3:9003 failed /allocation after 2 attempts:\n ConnectError"
    assert public_message(message) == "OpenCost failed /allocation after 2 attempts: ConnectError"
    assert public_message("Kubernetes API http://10.1.2.3:443/apis failed") == "Kubernetes API http://…/apis failed"


def test_one_line_folds_hints() -> None:
    assert one_line("refused\n\tIs the server running?\n") == "refused Is the server running?"
