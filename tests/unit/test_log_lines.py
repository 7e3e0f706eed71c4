"""We test the JSON log line's shortcut (``infra.logs._plain_line``: one scan of the serialised line
instead of redacting field by field, on the webhook's path once per request):

- for any fields (texts with credentials, registered secrets, quotes, backslashes, non-ASCII,
  numbers, nested mappings and lists, values JSON cannot write), the line is exactly the one the
  field-by-field redaction writes;
- a registered secret that JSON writes escaped (a quote, a backslash, non-ASCII) is still removed.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from infra import logs

SECRETS = ["zq-plain-4471", 'zq"quoted-4471', "zq\\slash-4471", "zq-é-4471"]
TEXTS = st.sampled_from(
    [
        *SECRETS,
        "postgresql://u:pw-1234@db/x",
        "password=pw-1234",
        "Bearer abc.def",
        "a bearer token",
        "plain words",
        "x@y",
        "é\n\t\"'\\",
    ]
) | st.text(max_size=8)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXTS
VALUES = st.recursive(
    SCALARS | st.just(datetime(2026, 1, 1, tzinfo=UTC)) | st.frozensets(st.integers(), max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def _field_by_field(record: logging.LogRecord, formatter: logs.JsonFormatter) -> str:
    """The line as it was written before the shortcut."""
    line = json.loads(formatter.format(record))  # the same keys and order
    line = {
        "severity": line["severity"],
        "message": record.getMessage(),
        "timestamp": line["timestamp"],
        "function": line["function"],
        "logger": record.name,
        **record.fields,  # type: ignore[attr-defined]
    }
    return json.dumps(logs.redact_value(line), separators=(",", ":"))


@settings(max_examples=600, deadline=None)
@given(message=TEXTS, fields=st.dictionaries(st.sampled_from(["a", "error", "app", "counts"]), VALUES, max_size=4))
def test_the_line_is_the_field_by_field_redaction(message: str, fields: dict[str, Any]) -> None:
    formatter = logs.JsonFormatter()
    record = logging.LogRecord("finops.test", logging.INFO, __file__, 1, message, None, None)
    record.fields = fields
    for secrets in ([SECRETS[0]], SECRETS):
        saved = set(logs._secrets), set(logs._escaped_secrets)
        try:
            for secret in secrets:
                logs.register_secret(secret)
            assert formatter.format(record) == _field_by_field(record, formatter)
        finally:
            logs._secrets.clear()
            logs._secrets.update(saved[0])
            logs._escaped_secrets.clear()
            logs._escaped_secrets.update(saved[1])


def test_an_escaped_secret_is_removed() -> None:
    saved = set(logs._secrets), set(logs._escaped_secrets)
    try:
        logs.register_secret('zq"quoted-4471')
        record = logging.LogRecord("finops.test", logging.INFO, __file__, 1, "token", None, None)
        record.fields = {"error": 'got zq"quoted-4471 back'}
        line = logs.JsonFormatter().format(record)
        assert "quoted-4471" not in line and json.loads(line)["error"] == "got *** back"
    finally:
        logs._secrets.clear()
        logs._secrets.update(saved[0])
        logs._escaped_secrets.clear()
        logs._escaped_secrets.update(saved[1])
