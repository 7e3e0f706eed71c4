"""``COPY`` of rows already written as PostgreSQL's text format, one line per row.

Why: ``Database.copy_rows`` adapts every value of every row (psycopg's ``write_row``, about 12 us
for a ``provider_allocations`` row of 44 columns: as long as json.loads takes for its
allocation). A caller that writes its rows as text itself, with the columns fixed for the whole
load preformatted once, passes the lines here, sent in batches of about ``BATCH`` characters.
The caller escapes its values (``\\N`` for NULL; backslash, tab, newline and carriage return
escaped) and PostgreSQL parses each one with its column's type, so a bad value still fails the
load.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from psycopg import sql

from infra.postgres.database import Connection, wrap_errors

# Characters written to the COPY stream at a time. A write returns once libpq has handed it to
# the socket, so a batch larger than the socket's buffer (about 200 KiB) waits for PostgreSQL to
# parse most of it, and the two alternate instead of working at once. At 64 KiB this process
# builds the next batch while the server parses the last: at 100,000 containers the COPY's wall
# time fell from 1.4x this process's CPU time to 1.1x (1 MiB batches before; 16-256 KiB measured).
BATCH = 1 << 16


def copy_lines(conn: Connection, table: str, columns: Sequence[str], lines: Iterable[str]) -> int:
    """``COPY table (columns) FROM STDIN`` of ``lines`` (each ends with ``\\n``); their count.
    ``table`` and ``columns`` are trusted identifiers of ours, never user input."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    count = 0
    with wrap_errors(), conn.cursor() as cur, cur.copy(statement) as copy:
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
