"""We test these aspects of the architecture (docs/explanation/architecture.md, "Layers and import rules"):

- ``finops`` (the domain) imports nothing of ours and no I/O library;
- ``infra`` imports only ``finops``; ``usecases`` imports ``finops`` and ``infra``; the edges
  (``functions``, ``cli``) import those three, never each other, and no function package imports
  another; nothing of the product imports the ``sandbox``;
- each outside library is imported by its one adapter only (kubernetes, psycopg, httpx, boto3).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from infra.serving import TARGETS

ROOT = Path(__file__).resolve().parents[2]
OURS = {"finops", "infra", "usecases", "functions", "cli", "sandbox"}
# Each layer and what it may import of ours: the domain nothing, the adapters the domain, the use
# cases both, the edges (functions, the CLI) the use cases; the sandbox (fakes and the local demo,
# never shipped) may drive the product, and nothing of the product imports it.
ALLOWED = {
    "finops": {"finops"},
    "infra": {"finops", "infra"},
    "usecases": {"finops", "infra", "usecases"},
    "functions": {"finops", "infra", "usecases", "functions"},
    "cli": {"finops", "infra", "usecases", "cli"},
    "sandbox": {"finops", "infra", "usecases", "sandbox"},
}
ADAPTERS = {
    "kubernetes": ("infra/kube/",),
    "psycopg": ("infra/postgres/", "sandbox/postgres.py"),
    "psycopg_pool": ("infra/postgres/",),
    # The CLI and the local demo call our own functions over HTTP; only the adapters call the rest.
    "httpx": ("infra/opencost/", "infra/prometheus/", "infra/retries.py", "infra/events.py", "cli/", "sandbox/"),
    "boto3": ("infra/objectstore",),
    "flask": ("functions/", "sandbox/"),
    "functions_framework": ("functions/",),
}
NO_IO_IN_DOMAIN = {"os", "socket", "subprocess", "requests", "flask", "yaml", "pydantic_settings"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


SOURCES = sorted(p for pkg in OURS for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layers(path: Path) -> None:
    relative = path.relative_to(ROOT).as_posix()
    package = relative.split("/")[0]
    imported = imports_of(path)
    assert not (imported & OURS) - ALLOWED[package], (
        f"{relative} imports {sorted((imported & OURS) - ALLOWED[package])}"
    )
    for library, owners in ADAPTERS.items():
        if library in imported:
            assert relative.startswith(owners), f"{relative} imports {library}; only {owners} may"
    if package == "finops":
        assert not imported & NO_IO_IN_DOMAIN, f"the domain module {relative} imports {imported & NO_IO_IN_DOMAIN}"


def test_the_check_sees_the_whole_tree() -> None:
    assert len(SOURCES) > 20
    assert any(p.name == "service.py" for p in SOURCES)


FUNCTION_PACKAGES = sorted(p.parent.name for p in (ROOT / "functions").glob("*/main.py"))
EDGE_LINES = 85  # about 80: an edge parses, calls a use case and answers; past this, logic hides in it


@pytest.mark.parametrize("name", FUNCTION_PACKAGES)
def test_no_function_imports_another(name: str) -> None:
    others = {f"functions.{other}" for other in FUNCTION_PACKAGES if other != name}
    for path in (ROOT / "functions" / name).rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            for module in modules:
                assert not any(module == o or module.startswith(o + ".") for o in others), (
                    f"{path.relative_to(ROOT)} imports {module}: functions share code through usecases/"
                )


@pytest.mark.parametrize("name", FUNCTION_PACKAGES)
def test_an_edge_is_short(name: str) -> None:
    lines = len((ROOT / "functions" / name / "main.py").read_text().splitlines())
    assert lines <= EDGE_LINES, f"functions/{name}/main.py has {lines} lines; move its logic into a use case"


def test_the_layers_are_all_checked() -> None:
    assert sorted(TARGETS) == FUNCTION_PACKAGES
    assert {p.relative_to(ROOT).parts[0] for p in SOURCES} == OURS
