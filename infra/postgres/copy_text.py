"""``COPY`` of rows already written as PostgreSQL's text format, one line per row.

Why: ``Database.copy_rows`` adapts every value of every row (psycopg's ``write_row``); a caller
that writes its rows as text itself, with the columns fixed for the whole load preformatted once,
passes the lines here, sent in batches of about ``BATCH`` characters.
The caller escapes its values (``\\N`` for NULL; backslash, tab, newline and carriage return
escaped) and PostgreSQL parses each one with its column's type, so a bad value still fails the
load.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from infra.postgres.database import Connection, copy_statement, wrap_errors

NULL = "\\N"  # the text format's NULL
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_ESCAPED = re.compile(r"\\(.)")
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}

# Characters written to the COPY stream at a time: well under the socket's buffer (about 200 KiB),
# so this process builds the next batch while PostgreSQL parses the last instead of waiting for it.
BATCH = 1 << 16


def copy_lines(conn: Connection, table: str, columns: Sequence[str], lines: Iterable[str]) -> int:
    """``COPY table (columns) FROM STDIN`` of ``lines`` (each ends with ``\\n``); their count.
    ``table`` and ``columns`` are trusted identifiers of ours, never user input."""
    count = 0
    with wrap_errors(), conn.cursor() as cur, cur.copy(copy_statement(table, columns)) as copy:
        batch: list[str] = []
        size = 0
        for line in lines:
            batch.append(line)
            size += len(line)
            if size >= BATCH:
                copy.write("".join(batch))
                count += len(batch)
                batch, size = [], 0
        if batch:
            copy.write("".join(batch))
            count += len(batch)
    return count


def escaped(value: str) -> str:
    """A text value in the text format: backslash, tab and line breaks escaped."""
    return value.translate(_ESCAPES)


def unescaped(field: str) -> str:
    """``escaped``'s inverse: a text field as PostgreSQL stores it."""
    return _ESCAPED.sub(lambda m: _UNESCAPES.get(m[1], m[1]), field) if "\\" in field else field
