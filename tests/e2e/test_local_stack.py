"""We test that a function served by ``serve_function`` (every function of ``finops run``, and the
tests' own) ends with the process that started it: a parent stopped with SIGKILL runs no cleanup,
so the kernel sends its functions SIGTERM (``PR_SET_PDEATHSIG``) and gunicorn stops them. Without
it, a ``finops run`` killed by its caller left six functions serving after the test session."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from functions.localstack import Stack

PARENT = """
import sys, time
from pathlib import Path
from functions.localstack import Stack, serve_function

database_url, opencost_url, kube_url, log_dir = sys.argv[1:]
stack = Stack(database_url, opencost_url, kube_url, ping_token="t", cluster="test", log_dir=Path(log_dir))
with serve_function(stack, "cost_api", PROXY_TOKEN="p") as url:
    print(url, flush=True)
    time.sleep(600)
"""


def serving(url: str) -> bool:
    try:
        httpx.get(f"{url}/healthz", timeout=2)
    except httpx.TransportError:
        return False
    return True


def test_a_function_stops_when_the_process_that_served_it_is_killed(stack: Stack, tmp_path: Path) -> None:
    command = [sys.executable, "-c", PARENT, stack.database_url, stack.opencost_url, stack.kube_url, str(tmp_path)]
    parent = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        url = parent.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and serving(url), (tmp_path / "cost_api.log").read_text()
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 60  # gunicorn's graceful stop; far less in practice
    while serving(url):
        if time.monotonic() > deadline:
            pytest.fail(f"{url} still serves a minute after the process that started it was killed")
        time.sleep(0.2)
