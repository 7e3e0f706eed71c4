"""We test how ``finops run`` (the local demo) ends:

- SIGTERM while it serves stops it as Ctrl-C does: "stopping", exit 0, and every process it
  started (function servers, sandbox servers) is gone;
- a run leaves no folder of its own in the temporary directory (the demo bill's ``finops-bill-*``).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
FINOPS = str(Path(sys.executable).with_name("finops"))
SERVE_TIMEOUT_S = 600


def read_until(proc: subprocess.Popen[bytes], marker: str, timeout: float) -> str:
    """The output up to the line holding ``marker``; fails if the process ends first."""
    assert proc.stdout is not None
    out = b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while marker.encode() not in out:
            assert selector.select(timeout), f"no {marker!r} within {timeout} s:\n{out.decode(errors='replace')}"
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"finops run ended before {marker!r}:\n{out.decode(errors='replace')}"
            out += chunk
    return out.decode(errors="replace")


def test_sigterm_stops_the_demo_cleanly_and_leaves_nothing_behind(
    database_url: str, db: object, tmp_path: Path
) -> None:
    # A temporary directory of its own: what the run leaves there is the run's, not another test's.
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp_path)}
    env.pop("CLUSTER_ID", None)
    proc = subprocess.Popen(
        [FINOPS, "run", "--hours", "2"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        out = read_until(proc, "Serving until interrupted", SERVE_TIMEOUT_S)
        assert "cloud bill:" in out  # the step that writes the bill ran
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "the demo serves its functions in processes of its own"
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and b"stopping" in rest, rest.decode(errors="replace")
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == [], [p.cmdline() for p in alive]
    assert list(tmp_path.iterdir()) == []
