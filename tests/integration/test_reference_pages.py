"""We test that every page of the generated Reference (``docs/reference/``) is what
``python -m tools.reference`` writes from the code now, the database page read from a server of
this session (``pg_server``): a stale page fails naming itself and ``make docs``."""

from __future__ import annotations

import pytest

from tools.reference import OUT, pages, stale

PAGES = ("index.md", "environment.md", "cli.md", "http-api.md", "metrics.md", "crds.md", "database.md")


@pytest.fixture(scope="module")
def written(pg_server: str) -> dict[str, str]:
    return pages(pg_server)


def test_the_generator_writes_every_page(written: dict[str, str]) -> None:
    assert sorted(written) == sorted(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_is_current(written: dict[str, str], page: str) -> None:
    assert not stale({page: written[page]}), f"docs/reference/{page} is stale: run make docs and commit it"


def test_a_changed_page_is_reported_stale(written: dict[str, str], tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    for name, text in written.items():
        (folder / name).write_text(text)
    assert stale(written, folder) == []
    (folder / "cli.md").write_text(written["cli.md"] + "edited by hand\n")
    (folder / "crds.md").unlink()
    assert stale(written, folder) == ["cli.md", "crds.md"]
    assert OUT.name == "reference"
