"""We test these aspects of the architecture (docs/architecture.md, "Layers and the import rules"):

- ``finops`` (the domain) imports nothing of ours and no I/O library;
- ``infra`` imports only ``finops``; ``functions`` imports ``finops`` and ``infra``
  (the CLI may also start the ``sandbox``); the sandbox imports nothing of the product;
- each outside library is imported by its one adapter only (kubernetes, psycopg, httpx, boto3).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = {"finops", "infra", "functions", "sandbox"}
ALLOWED = {
    "finops": {"finops"},
    "infra": {"finops", "infra"},
    "functions": {"finops", "infra", "functions"},
    "sandbox": {"sandbox"},
}
# The one edge that may reach further: the local stack behind `finops run` starts the sandbox.
EXCEPTIONS = {"functions/localstack.py": {"sandbox"}, "functions/localdemo.py": {"sandbox"}}
ADAPTERS = {
    "kubernetes": ("infra/kube/",),
    "psycopg": ("infra/postgres/", "sandbox/postgres.py"),
    "psycopg_pool": ("infra/postgres/",),
    # The CLI and local stack call our own functions over HTTP; only the adapter calls OpenCost.
    "httpx": (
        "infra/opencost/",
        "infra/prometheus/",
        "infra/events.py",
        "functions/cli.py",
        "functions/cli_ledger.py",
        "functions/cli_ops.py",
        "functions/localstack.py",
        "functions/localdemo.py",  # the demo's webhooks and backfill, for the UI extension
        "sandbox/kube/events.py",  # the sandbox API server delivering events, as Knative's adapter does
        "sandbox/prometheus/server.py",  # waits for the real Prometheus it starts to be ready
    ),
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
    allowed = ALLOWED[package] | EXCEPTIONS.get(relative, set())
    imported = imports_of(path)
    assert not (imported & OURS) - allowed, f"{relative} imports {sorted((imported & OURS) - allowed)}"
    for library, owners in ADAPTERS.items():
        if library in imported:
            assert relative.startswith(owners), f"{relative} imports {library}; only {owners} may"
    if package == "finops":
        assert not imported & NO_IO_IN_DOMAIN, f"the domain module {relative} imports {imported & NO_IO_IN_DOMAIN}"


def test_the_check_sees_the_whole_tree() -> None:
    assert len(SOURCES) > 20
    assert any(p.name == "service.py" for p in SOURCES)
