"""Runs the installed ``finops`` command in its own process, as a user would, with an environment
built from scratch (no ``DATABASE_URL``, ``PING_TOKEN`` or ``OPENCOST_URL`` of the caller's)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

FINOPS = str(Path(sys.executable).with_name("finops"))
CALLER_ONLY = ("DATABASE_URL", "PING_TOKEN", "OPENCOST_URL", "FINOPS_DEBUG", "CLUSTER_ID", "KUBE_API_URL")


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def run_finops(
    *args: str, cwd: Path | None = None, timeout: float = 120, env: Mapping[str, str] | None = None, **more_env: str
) -> Outcome:
    environ = {k: v for k, v in os.environ.items() if k not in CALLER_ONLY}
    environ.update(env or {}, **more_env)
    done = subprocess.run(
        [FINOPS, *args], env=environ, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def one_line_error(outcome: Outcome) -> str:
    """The single ``finops: ...`` line a failed command prints; fails on a traceback or more lines."""
    assert "Traceback" not in outcome.stderr, outcome.stderr
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, outcome.stderr
    assert lines[0].startswith("finops: "), outcome.stderr
    return lines[0]
