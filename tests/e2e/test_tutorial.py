"""The tutorial runs: ``docs/tutorial/local-demo.md``'s commands, in order, against the local stack.

The page marks its runnable blocks with an HTML comment (invisible on the site) right before the
fenced block:

- ``<!-- test: serve -->`` the command that starts the stack and keeps serving (``make run``: run
  here as its Makefile recipe, ``finops run``, with a scratch database as ``DATABASE_URL``); it must
  print everything up to ``Serving until interrupted``;
- ``<!-- test: run -->`` a shell command run with bash, against the served stack's database; it
  must exit 0;
- ``<!-- test: output -->`` what the command before it prints. Each line must appear, in order and
  on consecutive lines of the output, except where the page writes a line ``...`` (any lines) or
  ``...`` inside a line (any text). Numbers, times and ports are compared by position only (they
  differ from one run to the next); the words, names and layout must be those of the page.

At the end the stack is stopped as a supervisor stops it (SIGTERM, which the demo takes as it
takes Ctrl-C): "stopping", exit 0, every process it started (function servers, sandbox servers)
gone, and nothing of its own left in the temporary directory (the demo bill's ``finops-bill-*``).
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import pytest

from infra.postgres import Database

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "tutorial" / "local-demo.md"
BIN = Path(sys.executable).parent
MARK = re.compile(r"^<!-- test: (serve|run|output) -->\n+```\w*\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
SERVE_TIMEOUT_S = 180


@dataclass
class Step:
    kind: str  # serve or run
    command: str
    outputs: list[str] = field(default_factory=list)


def steps(text: str) -> list[Step]:
    found: list[Step] = []
    for kind, body in MARK.findall(text):
        if kind == "output":
            assert found, "an output block before any command"
            found[-1].outputs.append(body)
        else:
            found.append(Step(kind, body.strip()))
    return found


def line_pattern(expected: str) -> re.Pattern[str]:
    def literal(part: str) -> str:
        pieces = []
        for i, chunk in enumerate(NUMBER.split(part)):
            if i:
                pieces.append(r"\d+(?:[.,]\d+)*")
            pieces.append(r"\s+".join(re.escape(word) for word in re.split(r"\s+", chunk)))
        return "".join(pieces)

    return re.compile(".*".join(literal(part) for part in expected.strip().split("...")))


def assert_shows(output: str, block: str, command: str) -> None:
    """Every line of ``block`` matches a line of ``output``: in order, consecutive unless a ``...``
    line stands between them."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    at, adjacent = 0, False
    for expected in (line for line in block.splitlines() if line.strip()):
        if expected.strip() == "...":
            adjacent = False
            continue
        pattern = line_pattern(expected)
        if adjacent:
            ok = at < len(lines) and pattern.fullmatch(lines[at]) is not None
            found = at if ok else -1
        else:
            found = next((i for i in range(at, len(lines)) if pattern.fullmatch(lines[i])), -1)
        assert found >= 0, f"`{command}` did not print, where the tutorial says it does:\n{expected}\n---\n{output}"
        at, adjacent = found + 1, True


def read_until(proc: subprocess.Popen[bytes], marker: str, timeout_s: float) -> str:
    """What the process prints until a line holding ``marker`` (and that line), within the timeout."""
    assert proc.stdout is not None
    out = b""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while marker.encode() not in out or not out.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0, f"no `{marker}` within {timeout_s} s:\n{out.decode(errors='replace')}"
            if not selector.select(left):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"the stack exited ({proc.wait()}) before `{marker}`:\n{out.decode(errors='replace')}"
            out += chunk
    return out.decode()


def test_the_makefile_runs_what_the_tutorial_test_runs() -> None:
    """The test starts ``finops run`` where the page says ``make run``: the Makefile's recipe."""
    recipe = re.search(r"^run:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe is not None and recipe[1].strip() == "$(BIN)/finops run"


def test_the_page_marks_a_stack_and_commands_with_their_output() -> None:
    found = steps(PAGE.read_text())
    assert [s.kind for s in found[:1]] == ["serve"] and [s.command for s in found[:1]] == ["make run"]
    assert all(s.kind == "run" for s in found[1:]) and len(found) >= 4
    assert all(s.outputs for s in found), [s.command for s in found if not s.outputs]
    assert "finops report chargeback" in " ".join(s.command for s in found)


def test_the_tutorial_runs_as_written(database_url: str, db: Database, tmp_path: Path) -> None:
    serve, *commands = steps(PAGE.read_text())
    env = {  # a temporary directory of its own: what the run leaves there is the run's
        **os.environ,
        "DATABASE_URL": database_url,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": str(tmp_path),
    }
    env.pop("CLUSTER_ID", None)
    proc = subprocess.Popen(
        [str(BIN / "finops"), "run"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        out = read_until(proc, "Serving until interrupted", SERVE_TIMEOUT_S)
        assert "cloud bill:" in out  # the step that writes the bill's files ran
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "the demo serves its functions in processes of its own"
        for block in serve.outputs:
            assert_shows(out, block, serve.command)
        ui = re.search(r"^Argo CD UI extension: (http://\S+) \(Cost tab", out, re.MULTILINE)
        assert ui is not None, out
        for query in ("?app=argocd/web", "?view=finops"):  # the pages step 2 opens
            page = httpx.get(ui[1] + query, timeout=10)
            assert page.status_code == 200 and "/extensions.js" in page.text, query
        script = httpx.get(ui[1] + "extensions.js", timeout=10)
        assert script.status_code == 200 and "source: extension-finops.js" in script.text
        for step in commands:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", step.command],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, f"`{step.command}` exited {done.returncode}:\n{done.stdout}"
            for block in step.outputs:
                assert_shows(done.stdout, block, step.command)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rest, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    assert proc.returncode == 0 and b"stopping" in rest, rest.decode(errors="replace")
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == [], [p.cmdline() for p in alive]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("block", "output", "shown"),
    [
        ("a 1\nb 2", "x\na 10\nb 20\n", True),
        ("a 1\nb 2", "a 10\nx\nb 20\n", False),  # not consecutive
        ("a 1\n...\nb 2", "a 10\nx\nb 20\n", True),
        ("a ... z", "a  long text z", True),
        ("team x", "team y", False),  # words are compared
        ("b 2\na 1", "a 1\nb 2", False),  # order
    ],
)
def test_the_output_comparison_is_strict_where_the_page_is(block: str, output: str, shown: bool) -> None:
    if shown:
        assert_shows(output, block, "cmd")
    else:
        with pytest.raises(AssertionError):
            assert_shows(output, block, "cmd")
