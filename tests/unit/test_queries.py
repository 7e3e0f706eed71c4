"""We test the named queries (infra/postgres/queries/*.sql, one file per use case): each is defined
once, each is used by the product, and the product runs no SQL of its own outside infra/postgres."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infra.postgres.common import QUERIES

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("finops", "infra", "usecases", "functions", "cli", "sandbox")
SOURCES = {p: p.read_text() for pkg in PRODUCT for p in (ROOT / pkg).rglob("*.py")}
SQL = re.compile(r"""["'](\s*)(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|WITH \w+ AS)\b""")


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_named_query_is_used(name: str) -> None:
    assert any(f'"{name}"' in text for text in SOURCES.values()), f"the query {name} is used nowhere"


def test_no_sql_outside_the_postgres_adapter() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for path, text in SOURCES.items()
        if not path.relative_to(ROOT).as_posix().startswith(("infra/postgres/", "infra/fleet/", "sandbox/postgres.py"))
        for m in SQL.finditer(text)
    ]
    assert not found, f"SQL outside infra/postgres (make it a named query): {found}"


def test_the_queries_are_split_by_use_case() -> None:
    files = sorted((ROOT / "infra" / "postgres" / "queries").glob("*.sql"))
    assert len(files) > 5 and len(QUERIES) > 100
