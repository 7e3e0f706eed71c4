"""We test that the embedded PostgreSQL (``make test`` without ``DATABASE_URL``, ``finops run``)
leaves nothing behind: the folder made for its data is gone once it has stopped."""

from __future__ import annotations

import tempfile
from pathlib import Path

import psycopg
import pytest

from sandbox.postgres import embedded_postgres


def test_the_embedded_server_removes_the_folder_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes the server's folder
    with embedded_postgres() as dsn:
        (made,) = list(tmp_path.iterdir())
        assert (made / "data").is_dir()
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert list(tmp_path.iterdir()) == []
