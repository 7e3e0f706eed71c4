"""Mutation testing of the SQL that computes money: ``make mutate-sql`` (and ``make mutate``).

mutmut mutates Python only; the queries that sum, group and bound money by period are SQL. This
plants one small bug at a time in the money queries declared in ``MONEY`` (each named query of
``infra/postgres/queries/*.sql``, or a function a migration defines), in a copy of the checkout,
and runs the tests mapped to that query there. A mutant that makes a test fail is *killed*; one
no test notices *survived*; one that runs past ``--timeout`` is a *timeout* (counted as found).

The mutation classes (``Mutant.kind``):

- ``compare``: ``<`` and ``<=``, ``>`` and ``>=`` swapped (a period bound written wrongly);
- ``group``: one key dropped from a ``GROUP BY`` (two groups merged, or the query refused);
- ``term``: one term of a sum dropped (an adjustment forgotten), or a ``-`` made ``+``;
- ``coalesce``: a ``coalesce(x, 0)`` default made 1, or the ``coalesce`` dropped (a NULL spreads).

The copy is the checkout without ``.git``, ``.venv`` and caches; its root is put first on
``PYTHONPATH``, so the tests, the ``finops`` CLI and the functions they serve all load the copy's
queries and migrations (each test session migrates its own scratch database). Documented in
docs/development/testing.md, with the survivors argued equivalent.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = "infra/postgres/queries"
MIGRATIONS = "infra/postgres/migrations"

E2E = "tests/e2e"
INTEGRATION = "tests/integration"
BOUNDARY = f"{INTEGRATION}/test_period_boundaries.py"
MONEY_ROLLUPS = f"{INTEGRATION}/test_money_rollups.py"
ROLLUP_TESTS = (BOUNDARY, MONEY_ROLLUPS, f"{INTEGRATION}/test_incremental_rollups.py")
REPORT_TESTS = (BOUNDARY, MONEY_ROLLUPS, f"{E2E}/test_reports.py")
RECONCILE_TESTS = (BOUNDARY, f"{E2E}/test_bill_reconciliation.py")
CHARGE_TESTS = (BOUNDARY, f"{INTEGRATION}/test_usage_boundary.py", f"{INTEGRATION}/test_status_costs.py")

# The money queries: (file, query or function name) -> the tests that read them, narrowest first.
MONEY: dict[tuple[str, str], tuple[str, ...]] = {
    ("reports.sql", "chargeback_rows"): REPORT_TESTS,
    ("reports.sql", "owner_namespaces"): REPORT_TESTS,
    ("reports.sql", "daily_owner_costs"): (BOUNDARY, f"{E2E}/test_reports.py", f"{E2E}/test_budgets.py"),
    ("reports.sql", "report_rollup_clusters"): (BOUNDARY, MONEY_ROLLUPS, f"{E2E}/test_report_coverage.py"),
    ("reports.sql", "focus_daily_rows"): (BOUNDARY, f"{E2E}/test_exports_focus.py"),
    ("reports.sql", "bill_lines"): RECONCILE_TESTS,
    ("reports.sql", "reconcile_rows"): RECONCILE_TESTS,
    ("reports.sql", "stored_node_rows"): RECONCILE_TESTS,
    ("reports.sql", "node_days"): RECONCILE_TESTS,
    ("reports.sql", "store_node_day"): RECONCILE_TESTS,
    ("reports.sql", "reconcile_assets"): RECONCILE_TESTS,
    ("rollups.sql", "hour_foldable"): ROLLUP_TESTS,
    ("rollups.sql", "unfold_allocation_hour"): ROLLUP_TESTS,
    ("rollups.sql", "fold_allocation_hour"): ROLLUP_TESTS,
    ("cost_api.sql", "namespace_costs"): (BOUNDARY, f"{E2E}/test_reports.py"),
    ("cost_api.sql", "metrics_owner_month_to_date"): (BOUNDARY, f"{E2E}/test_metrics.py"),
    ("charges.sql", "usage_rows"): CHARGE_TESTS,
    ("charges.sql", "charge_totals"): CHARGE_TESTS,
    ("015_incremental_rollups.sql", "finops_allocation_rollup_hours"): ROLLUP_TESTS,
    ("015_incremental_rollups.sql", "finops_allocation_rollup"): ROLLUP_TESTS,
}

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_COMPARE = re.compile(r"(?<![<>=!-])(<=|>=|<|>)(?![<>=>])")
_GROUP = re.compile(r"\bGROUP BY\s+", re.IGNORECASE)
_TERM = re.compile(r"(?<=\S) ([+-]) (?=\S)")
_COALESCE = re.compile(r"\bcoalesce\(", re.IGNORECASE)
_STOP = re.compile(r"\b(ORDER BY|HAVING|LIMIT|UNION|WINDOW)\b|;|\$\$", re.IGNORECASE)


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the checkout
    query: str
    line: int
    kind: str
    start: int  # the replaced span of the file's text
    end: int
    replacement: str
    before: str

    @property
    def name(self) -> str:
        return f"{Path(self.path).name}:{self.query}:{self.line} {self.kind} {self.before!r} -> {self.replacement!r}"

    def apply(self, text: str) -> str:
        return text[: self.start] + self.replacement + text[self.end :]


def _path(file: str) -> str:
    return f"{MIGRATIONS}/{file}" if file[:3].isdigit() else f"{QUERIES}/{file}"


def _span(text: str, file: str, name: str) -> tuple[int, int]:
    """The text of a named query, or of a migration's function body, as offsets."""
    if file[:3].isdigit():
        found = re.search(rf"FUNCTION {name}\(.*?\$\$(.*?)\$\$", text, re.DOTALL)
        if not found:
            raise SystemExit(f"sqlmutate: {file} defines no function {name}")
        return found.start(1), found.end(1)
    headers = list(_HEADER.finditer(text))
    for i, header in enumerate(headers):
        if header.group(1) == name:
            return header.end(), headers[i + 1].start() if i + 1 < len(headers) else len(text)
    raise SystemExit(f"sqlmutate: {file} has no query {name}")


def _code(text: str) -> str:
    """The text with comments and string literals blanked (offsets kept): only SQL is mutated."""
    blank = re.sub(r"--[^\n]*", lambda m: " " * len(m.group()), text)
    return re.sub(r"'[^']*'", lambda m: "'" + " " * (len(m.group()) - 2) + "'", blank)


def _close(code: str, start: int, end: int | None = None) -> int:
    """The offset of the parenthesis closing the one opened just before ``start`` (or ``end``)."""
    depth = 1
    for i in range(start, len(code) if end is None else end):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            return i
    if end is None:
        raise ValueError("unbalanced parentheses")
    return end


def _top_level_items(code: str, start: int, end: int) -> list[tuple[int, int]]:
    """The comma-separated items of ``code[start:end]`` outside parentheses, as stripped spans."""
    items, depth, first = [], 0, start
    for i in range(start, end + 1):
        c = code[i] if i < end else ","
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            piece = code[first:i]
            lead = len(piece) - len(piece.lstrip())
            items.append((first + lead, first + len(piece.rstrip())))
            first = i + 1
    return items


def mutants_of(file: str, name: str, text: str) -> Iterator[Mutant]:
    path = _path(file)
    lo, hi = _span(text, file, name)
    code = _code(text)

    def mutant(kind: str, start: int, end: int, replacement: str) -> Mutant:
        line = text.count("\n", 0, start) + 1
        return Mutant(path, name, line, kind, start, end, replacement, text[start:end])

    for m in _COMPARE.finditer(code, lo, hi):
        op = m.group(1)
        yield mutant("compare", m.start(), m.end(), op[0] if len(op) == 2 else op + "=")
    for m in _GROUP.finditer(code, lo, hi):
        stop = _STOP.search(code, m.end(), hi)
        end = min(stop.start() if stop else hi, _close(code, m.end(), hi))
        keys = _top_level_items(code, m.end(), end)
        for i, (start, stop_) in enumerate(keys):
            # Drop the key with the comma that joins it to its neighbour.
            if i + 1 < len(keys):
                yield mutant("group", start, keys[i + 1][0], "")
            elif i > 0:
                yield mutant("group", keys[i - 1][1], stop_, "")
    for m in _TERM.finditer(code, lo, hi):
        if m.group(1) == "-":
            yield mutant("term", m.start(1), m.end(1), "+")
        else:
            # Drop the term after the plus: up to the next top-level operator, comma or bracket.
            depth, i = 0, m.end()
            while i < hi:
                c = code[i]
                if c == "(":
                    depth += 1
                elif c == ")":
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and (c in ",;" or code.startswith((" + ", " - ", " AS ", "\n"), i)):
                    break
                i += 1
            yield mutant("term", m.start(), i, "")
    for m in _COALESCE.finditer(code, lo, hi):
        close = _close(code, m.end())
        args = _top_level_items(code, m.end(), close)
        if len(args) != 2:
            continue
        default = text[args[1][0] : args[1][1]]
        if default == "0":
            yield mutant("coalesce", args[1][0], args[1][1], "1")
        yield mutant("coalesce", m.start(), close + 1, text[args[0][0] : args[0][1]])


def all_mutants(root: Path, only: str | None) -> list[tuple[Mutant, tuple[str, ...]]]:
    found = []
    for (file, name), tests in MONEY.items():
        if only and not re.search(only, f"{file}:{name}"):
            continue
        text = (root / _path(file)).read_text()
        found += [(m, tests) for m in mutants_of(file, name, text)]
    return found


def copy_checkout(into: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", ".venv", "mutants", "node_modules", "__pycache__", ".*cache", ".local")
    shutil.copytree(ROOT, into, ignore=ignore, symlinks=True)
    return into


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> str:
    """``killed``, ``survived`` or ``timeout`` for the tests in ``copy`` (stopping at a failure)."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    try:
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout"
    if done.returncode == 0:
        return "survived"
    if done.returncode == 1:
        return "killed"
    tail = done.stdout.decode(errors="replace")[-2000:]
    raise SystemExit(f"sqlmutate: pytest {' '.join(tests)} ended with {done.returncode}:\n{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.sqlmutate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="a regular expression over FILE:QUERY (e.g. 'reports.sql:chargeback')")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (one copy of the checkout each)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a mutant's tests may take")
    args = parser.parse_args(argv)

    mutants = all_mutants(ROOT, args.only)
    if args.list:
        for m, tests in mutants:
            print(f"{m.name}  [{' '.join(tests)}]")
        print(f"{len(mutants)} mutants")
        return 0
    with tempfile.TemporaryDirectory(prefix="sqlmutate-") as tmp:
        copies = [copy_checkout(Path(tmp) / f"copy{i}") for i in range(max(1, args.jobs))]
        for tests in sorted({t for _, t in mutants}):
            if run_tests(copies[0], tests, args.timeout) != "survived":
                rerun = f"{sys.executable} -m pytest {' '.join(tests)}"
                raise SystemExit(f"sqlmutate: the unmutated checkout fails its tests ({rerun}): fix that first")
        free = list(copies)
        results: dict[str, list[str]] = {"killed": [], "survived": [], "timeout": []}

        def one(item: tuple[Mutant, tuple[str, ...]]) -> None:
            mutant, tests = item
            copy = free.pop()
            target = copy / mutant.path
            original = target.read_text()
            target.write_text(mutant.apply(original))
            began = time.monotonic()
            try:
                outcome = run_tests(copy, tests, args.timeout)
            finally:
                target.write_text(original)
                free.append(copy)
            results[outcome].append(mutant.name)
            print(f"{outcome:8} {time.monotonic() - began:5.0f}s  {mutant.name}", flush=True)

        with ThreadPoolExecutor(len(copies)) as pool:
            list(pool.map(one, mutants))
    print("== SQL mutants not killed ==")
    for name in results["survived"]:
        print(f"survived: {name}")
    for name in results["timeout"]:
        print(f"timeout:  {name}")
    counts = ", ".join(f"{len(v)} {k}" for k, v in results.items())
    print(f"{len(mutants)} SQL mutants: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
