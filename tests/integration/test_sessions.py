"""We test that every pooled session runs in UTC, whatever the server, role or DSN asks for: hour
arithmetic on timestamps read back must never cross a DST change, and advisory-lock keys built
from a timestamp's text must be the same for every client."""

from __future__ import annotations

from datetime import UTC

from infra.postgres import connect


def test_sessions_are_utc_even_when_the_dsn_asks_for_another_zone(database_url: str) -> None:
    sep = "&" if "?" in database_url else "?"
    db = connect(f"{database_url}{sep}options=-c%20TimeZone%3DEurope/Paris", max_size=1)
    try:
        with db.connection() as conn:
            zone = conn.execute("SHOW TimeZone").fetchone()
            moment = conn.execute("SELECT timestamptz '2026-10-25 01:00:00+00' AS t").fetchone()
            text = conn.execute("SELECT (timestamptz '2026-10-25 01:00:00+00')::text AS t").fetchone()
    finally:
        db.close()
    assert zone is not None and zone["TimeZone"] == "UTC"
    assert moment is not None and moment["t"].utcoffset().total_seconds() == 0 and moment["t"].tzinfo == UTC
    assert text is not None and text["t"] == "2026-10-25 01:00:00+00"
