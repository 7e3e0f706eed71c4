"""We test these aspects of the scripts the CronJobs and the install Job run, by running them
(``sh -c`` with the manifest's script and the environment it declares) against a local HTTP server:

- the hourly ping sends the Job's scheduled time, recovered from the Job's name, in a body the
  function accepts, with the bearer token; a retried Job (same name) sends the same hour; a Job
  made by hand pins the current hour; a failing function fails the Job;
- the install Job migrates the database, then calls backfill until ``"remaining": 0``, waiting as
  told between calls and retrying while the Service is not routable; a refused call fails it, and
  so does a backfill that never finishes within its invocations.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from finops.hours import parse_timestamp
from functions.backfill.main import Invocation
from functions.pings import Ping
from tests.deploy import manifests
from tests.deploy.manifests import Obj

SH, CURL = shutil.which("sh"), shutil.which("curl")
BIN = Path(sys.executable).parent


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeFunction:
    """Answers each request with the next scripted ``(status, headers, body)``; the last repeats."""

    answers: list[tuple[int, dict[str, str], object]]
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""


@contextmanager
def fake_function(*answers: tuple[int, dict[str, str], object]) -> Iterator[FakeFunction]:
    fake = FakeFunction(list(answers))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            fake.requests.append(Recorded("POST", self.path, dict(self.headers.items()), body))
            status, headers, payload = fake.answers[min(len(fake.requests), len(fake.answers)) - 1]
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def _container(obj: Obj) -> Obj:
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    return dict(container)


def run_script(obj: Obj, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    container = _container(obj)
    assert SH is not None
    command = [SH, *container["command"][1:], *container["args"]]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


CRONJOB = manifests.named("CronJob", "collect-allocations-hourly")
SCHEDULED = datetime(2026, 11, 29, 10, 5, tzinfo=UTC)
MINUTES = int(SCHEDULED.timestamp()) // 60

needs_curl = pytest.mark.skipif(SH is None or CURL is None, reason="sh and curl run the ping script")


def ping_env(url: str, job_name: str) -> dict[str, str]:
    manifest = manifests.container_env(_container(CRONJOB))
    env = {name: source.value for name, source in manifest.items() if source.kind == "value"}
    return {
        **env,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "JOB_NAME": job_name,
        "FUNCTION_URL": url,
        "MAX_TIME": "20",
        "PING_TOKEN": "the-ping-token",
    }


@needs_curl
def test_ping_sends_the_scheduled_time_of_the_job_and_retries_send_the_same() -> None:
    with fake_function((200, {}, {"outcome": "success"})) as fake:
        for _ in range(2):  # the first pod, then a retry of the same Job
            result = run_script(CRONJOB, ping_env(fake.url, f"collect-allocations-hourly-{MINUTES}"))
            assert result.returncode == 0, result.stderr
    first, retry = fake.requests
    assert first.body == retry.body
    assert first.headers["Authorization"] == "Bearer the-ping-token"
    assert first.headers["Content-Type"] == "application/json"
    ping = Ping.model_validate_json(first.body)  # the function's own model: unknown fields refused
    assert ping.scheduledTime is not None
    assert parse_timestamp(ping.scheduledTime, field="scheduledTime") == SCHEDULED
    assert ping.trigger == "cron"


@needs_curl
@pytest.mark.parametrize("job_name", ["manual-1", f"other-cronjob-{MINUTES}", ""])
def test_a_job_not_scheduled_by_its_cronjob_pins_the_current_hour(job_name: str) -> None:
    with fake_function((200, {}, {"outcome": "success"})) as fake:
        before = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        result = run_script(CRONJOB, ping_env(fake.url, job_name))
        after = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    assert result.returncode == 0, result.stderr
    (request,) = fake.requests
    pinned = parse_timestamp(str(json.loads(request.body)["scheduledTime"]), field="scheduledTime")
    assert pinned in (before, after)


@needs_curl
def test_a_failing_function_fails_the_job_and_shows_its_answer() -> None:
    with fake_function((503, {"Retry-After": "60"}, {"outcome": "failed", "error": "OpenCost unavailable"})) as fake:
        result = run_script(CRONJOB, ping_env(fake.url, f"collect-allocations-hourly-{MINUTES}"))
    assert result.returncode != 0
    assert "OpenCost unavailable" in result.stdout


INSTALL = manifests.named("Job", "finops-install")


def install_env(url: str, database_url: str) -> dict[str, str]:
    manifest = manifests.container_env(_container(INSTALL))
    env = {name: source.value for name, source in manifest.items() if source.kind == "value"}
    return {
        **env,
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
        "DATABASE_URL": database_url,
        "PING_TOKEN": "the-ping-token",
        "BACKFILL_URL": url,
        "REQUEST_TIMEOUT_SECONDS": "20",
        "MAX_INVOCATIONS": "5",
        "RETRY_SECONDS": "0",
    }


@pytest.mark.skipif(SH is None, reason="sh runs the install script")
def test_install_migrates_then_calls_backfill_until_nothing_remains(database_url: str) -> None:
    answers = [
        (404, {}, {"error": "route not ready"}),  # the Knative route is not ready yet
        (503, {"Retry-After": "0"}, {"outcome": "failed", "retry": True}),  # the lock is busy
        (200, {}, {"outcome": "partial", "remaining": 2, "retry_after_seconds": 0}),
        (200, {}, {"outcome": "success", "remaining": 0, "retry_after_seconds": 0}),
    ]
    with fake_function(*answers) as fake:
        env = install_env(fake.url, database_url)
        result = run_script(INSTALL, {**env, "BACKFILL_URL": fake.url})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "schema is up to date" in result.stdout or "applied migrations" in result.stdout
    assert len(fake.requests) == 4
    for request in fake.requests:
        assert request.headers["Authorization"] == "Bearer the-ping-token"
        assert Invocation.model_validate_json(request.body).trigger == "install"


@pytest.mark.skipif(SH is None, reason="sh runs the install script")
def test_install_fails_on_a_refused_call_and_when_backfill_never_finishes(database_url: str) -> None:
    with fake_function((401, {}, {"outcome": "failed", "error": "wrong token"})) as fake:
        result = run_script(INSTALL, install_env(fake.url, database_url))
    assert result.returncode == 1
    assert len(fake.requests) == 1
    with fake_function((200, {}, {"outcome": "partial", "remaining": 1, "retry_after_seconds": 0})) as fake:
        result = run_script(INSTALL, install_env(fake.url, database_url))
    assert result.returncode == 1
    assert len(fake.requests) == 5
    assert "giving up" in result.stdout


@pytest.mark.skipif(SH is None, reason="sh runs the install script")
def test_install_stops_before_calling_backfill_when_migrations_fail() -> None:
    with fake_function((200, {}, {"remaining": 0})) as fake:
        result = run_script(INSTALL, install_env(fake.url, ""))  # `finops migrate`: DATABASE_URL is not set
    assert result.returncode != 0
    assert fake.requests == []
