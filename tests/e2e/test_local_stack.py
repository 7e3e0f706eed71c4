"""We test that a function served by ``serve_function`` (every function of ``finops run``, and the
tests' own), and the sandbox's Prometheus (``finops run --source prometheus``), end with the
process that started them: a parent stopped with SIGKILL runs no cleanup, so the kernel sends its
children SIGTERM (``PR_SET_PDEATHSIG``) and gunicorn or Prometheus stops. Without it, a ``finops
run`` killed by its caller left six functions serving after the test session."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sandbox.localstack import Stack

PARENT = """
import sys, time
from pathlib import Path
from sandbox.localstack import Stack, serve_function

database_url, opencost_url, kube_url, log_dir = sys.argv[1:]
stack = Stack(database_url, opencost_url, kube_url, ping_token="t", cluster="test", log_dir=Path(log_dir))
with serve_function(stack, "cost_api", PROXY_TOKEN="p") as url:
    print(url, flush=True)
    time.sleep(600)
"""


PROMETHEUS_PARENT = """
import sys, time
from datetime import UTC, datetime
from pathlib import Path
import sandbox.localstack  # puts the checkout, and so the sandbox, on sys.path
from sandbox import prometheus

world = prometheus.demo_world(datetime(2026, 11, 2, tzinfo=UTC), hours=1)
with prometheus.serve(world, Path(sys.argv[1])) as url:
    print(url, flush=True)
    time.sleep(600)
"""


def serving(url: str, path: str = "/healthz") -> bool:
    try:
        httpx.get(f"{url}{path}", timeout=2)
    except httpx.TransportError:
        return False
    return True


def served_then_killed(command: list[str], log: Path, path: str) -> str:
    """Start ``command``, read the URL it prints, check it serves ``path``, SIGKILL it; the URL."""
    parent = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        url = parent.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and serving(url, path), log.read_text() if log.exists() else ""
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    return url


def assert_stops(url: str, path: str) -> None:
    deadline = time.monotonic() + 60  # a graceful stop; far less in practice
    while serving(url, path):
        if time.monotonic() > deadline:
            pytest.fail(f"{url} still serves a minute after the process that started it was killed")
        time.sleep(0.2)


def test_a_function_stops_when_the_process_that_served_it_is_killed(stack: Stack, tmp_path: Path) -> None:
    command = [sys.executable, "-c", PARENT, stack.database_url, stack.opencost_url, stack.kube_url, str(tmp_path)]
    assert_stops(served_then_killed(command, tmp_path / "cost_api.log", "/healthz"), "/healthz")


def test_the_sandbox_prometheus_stops_when_the_process_that_started_it_is_killed(tmp_path: Path) -> None:
    command = [sys.executable, "-c", PROMETHEUS_PARENT, str(tmp_path)]
    assert_stops(served_then_killed(command, tmp_path / "prometheus.log", "/-/ready"), "/-/ready")
