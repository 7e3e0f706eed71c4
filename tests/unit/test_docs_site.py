"""The documentation site builds cleanly, and the manual stays a manual.

- ``mkdocs build --strict`` passes: no broken link, no bad anchor, no page left out of the nav
  (``mkdocs.yml`` makes each of those a warning, and ``--strict`` a failure; checked below by
  building a copy of the docs with one such fault each);
- the README and the architecture page keep their length, and every relative link of the README
  reaches a file of the repository;
- no page reads like a diary of measurements.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).with_name("mkdocs")
README_MAX_LINES = 260
ARCHITECTURE_MAX_LINES = 410
DIARY = re.compile(r"tried and not kept|\bround \d|\b\w+th round\b", re.IGNORECASE)


class _AnyTagLoader(yaml.SafeLoader):
    """mkdocs.yml holds ``!!python/name:`` tags (the mermaid fence); they do not matter here."""


_AnyTagLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def config() -> dict[str, object]:
    loaded = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_AnyTagLoader)  # noqa: S506 (SafeLoader)
    assert isinstance(loaded, dict)
    return loaded


def nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def build(config_file: Path, site_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--config-file", str(config_file), "--site-dir", str(site_dir)],
        cwd=config_file.parent,
        env={"PATH": str(MKDOCS.parent), "NO_MKDOCS_2_WARNING": "1", "HOME": str(site_dir)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_site_builds_with_strict(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    listed = nav_pages(config()["nav"])
    assert len(listed) == len(set(listed)), "a page is listed twice"
    assert pages - set(listed) == set(), "pages missing from mkdocs.yml's nav (orphans)"
    assert set(listed) - pages == set(), "nav entries without a page"


def test_the_site_config_makes_every_link_problem_a_failure() -> None:
    validation = config()["validation"]
    assert isinstance(validation, dict)
    assert config()["strict"] is True and config()["docs_dir"] == "docs"
    assert validation["nav"] == {"omitted_files": "warn", "not_found": "warn", "absolute_links": "warn"}
    assert validation["links"] == {
        "not_found": "warn",
        "anchors": "warn",
        "absolute_links": "warn",
        "unrecognized_links": "warn",
    }


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("orphan", 'not included in the "nav"'),
        ("broken link", "is not found among documentation files"),
        ("bad anchor", "does not contain an anchor"),
        ("link out of docs", "not found among documentation files"),
    ],
)
def test_a_fault_fails_the_strict_build(tmp_path: Path, fault: str, message: str) -> None:
    """The same site with one fault does not build: the check above is not vacuous."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    index = tmp_path / "docs" / "index.md"
    if fault == "orphan":
        (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n")
    elif fault == "broken link":
        index.write_text(index.read_text() + "\n[gone](how-to/no-such-page.md)\n")
    elif fault == "bad anchor":
        index.write_text(index.read_text() + "\n[nowhere](explanation/architecture.md#no-such-heading)\n")
    else:
        index.write_text(index.read_text() + "\n[bench](../bench/README.md)\n")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and message in done.stdout + done.stderr, done.stdout + done.stderr


def test_the_readme_and_the_architecture_keep_their_length() -> None:
    readme = len((ROOT / "README.md").read_text().splitlines())
    architecture = len((DOCS / "explanation" / "architecture.md").read_text().splitlines())
    assert readme <= README_MAX_LINES, f"README.md has {readme} lines; the front door stays short"
    assert architecture <= ARCHITECTURE_MAX_LINES, f"architecture.md has {architecture} lines"


def test_the_readme_links_reach_files() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert relative, "the README links into docs/"
    missing = [t for t in relative if not (ROOT / t).exists()]
    assert missing == []


def test_no_page_reads_like_a_diary() -> None:
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in pages
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if DIARY.search(line)
    ]
    assert found == [], "measurement history belongs in no manual page:\n" + "\n".join(found)


@pytest.mark.parametrize("line", ["in round 3 we measured", "the fourth round of tuning", "Tried and not kept: x"])
def test_the_diary_check_catches_a_diary(line: str) -> None:
    assert DIARY.search(line)
