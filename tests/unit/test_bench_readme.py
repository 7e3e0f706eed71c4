"""We test that bench/README.md describes every benchmark ``make bench`` runs (a section per module
``bench/__main__.py`` imports, with how to run it alone) and ends with the table of latest figures."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "bench" / "README.md"


def _benchmarks() -> list[str]:
    tree = ast.parse((ROOT / "bench" / "__main__.py").read_text())
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "bench"]
    return [alias.name for node in imports for alias in node.names]


def test_every_benchmark_of_make_bench_has_its_section() -> None:
    text = README.read_text()
    headings = re.findall(r"^## (\w+)", text, flags=re.MULTILINE)
    names = _benchmarks()
    assert names, "bench/__main__.py imports no benchmark"
    missing = [n for n in names if n not in headings]
    assert missing == [], f"bench/README.md has no section for {missing}"
    for name in names:
        assert f".venv/bin/python -m bench.{name}" in text, f"bench/README.md: how to run {name} alone"


def test_the_readme_ends_with_the_latest_figures_table() -> None:
    text = README.read_text()
    assert "\n## Latest figures\n" in text
    table = text.split("\n## Latest figures\n", 1)[1]
    assert "| benchmark | figure | target | result |" in table
