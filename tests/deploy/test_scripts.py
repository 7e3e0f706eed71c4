"""We test these aspects of what the CronJobs and the install Job run (``finops ping`` and
``finops install``, cli/ops.py), by running each manifest's own command with the
environment it declares against a local HTTP server that answers like the function:

- the hourly ping sends the Job's scheduled time, recovered from the Job's name, in a body the
  function accepts, with the bearer token; a retried Job (same name) sends the same hour; a Job
  made by hand pins the current hour; a malformed name, a missing token or setting is a one-line
  error and nothing is sent; a failing function fails the Job with its error on one line, and no
  secret is printed; an answer with ``remaining`` > 0 is pinged again, at most ``MAX_PINGS``
  times, after the wait it names; a CostJob's ping names it;
- the install command migrates the database, then calls backfill until ``"remaining": 0``, waiting
  as told between calls (``retry_after_seconds``, ``Retry-After``, else ``RETRY_SECONDS``) and
  retrying while the Service is not routable or unreachable; a refused call fails it, and so does
  a backfill that never finishes within its invocations; a failed migration calls nothing.

Waits go through an injected sleep that records them: nothing here is timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli import ops as cli_ops
from cli.main import main
from cli.ops import INSTALL_ENV, PING_ENV, Answer, bearer_post, call_backfill, scheduled_time
from finops.hours import parse_timestamp
from functions.backfill.main import Invocation
from functions.pings import Ping
from tests.deploy import manifests
from tests.deploy.manifests import Obj

BIN = Path(sys.executable).parent
TOKEN = "the-ping-token-s3cret"


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
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
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


def run_command(obj: Obj, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The container's command as the image runs it (``finops`` from the venv on PATH)."""
    container = _container(obj)
    assert "args" not in container, "the command takes its settings from the environment"
    program, *rest = container["command"]
    command = [str(BIN / program), *rest]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def manifest_values(obj: Obj) -> dict[str, str]:
    manifest = manifests.container_env(_container(obj))
    return {name: source.value for name, source in manifest.items() if source.kind == "value"}


CRONJOB = manifests.named("CronJob", "collect-allocations-hourly")
SCHEDULED = datetime(2026, 11, 29, 10, 5, tzinfo=UTC)
MINUTES = int(SCHEDULED.timestamp()) // 60
JOB = f"collect-allocations-hourly-{MINUTES}"


def ping_env(url: str, job_name: str, **overrides: str) -> dict[str, str]:
    return {
        **manifest_values(CRONJOB),
        "PATH": f"{BIN}:/usr/bin:/bin",
        "JOB_NAME": job_name,
        "FUNCTION_URL": url,
        "MAX_TIME": "20",
        "PING_TOKEN": TOKEN,
        **overrides,
    }


def test_the_commands_read_the_variables_the_manifests_pass() -> None:
    for obj, known in ((CRONJOB, PING_ENV), (manifests.named("Job", "finops-install"), INSTALL_ENV)):
        assert set(manifests.container_env(_container(obj))) <= known


def test_ping_sends_the_scheduled_time_of_the_job_and_retries_send_the_same() -> None:
    with fake_function((200, {}, {"outcome": "success"})) as fake:
        for _ in range(2):  # the first pod, then a retry of the same Job
            result = run_command(CRONJOB, ping_env(fake.url, JOB))
            assert result.returncode == 0, result.stderr
    first, retry = fake.requests
    assert first.body == retry.body
    assert first.headers["Authorization"] == f"Bearer {TOKEN}"
    assert first.headers["Content-Type"] == "application/json"
    ping = Ping.model_validate_json(first.body)  # the function's own model: unknown fields refused
    assert ping.scheduledTime is not None
    assert parse_timestamp(ping.scheduledTime, field="scheduledTime") == SCHEDULED
    assert (ping.trigger, ping.costJob) == ("cron", None)
    assert TOKEN not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "job_name", ["manual-1", f"other-cronjob-{MINUTES}", "", "collect-allocations-hourly-manual", "x-hourly"]
)
def test_a_job_not_scheduled_by_its_cronjob_pins_the_current_hour(job_name: str) -> None:
    with fake_function((200, {}, {"outcome": "success"})) as fake:
        before = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        result = run_command(CRONJOB, ping_env(fake.url, job_name))
        after = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    assert result.returncode == 0, result.stderr
    assert "pinning the current hour" in result.stdout
    (request,) = fake.requests
    pinned = parse_timestamp(str(json.loads(request.body)["scheduledTime"]), field="scheduledTime")
    assert pinned in (before, after)


def test_job_names_parse_to_the_scheduled_minute() -> None:
    now = datetime(2026, 12, 1, 3, 47, tzinfo=UTC)
    assert scheduled_time(JOB, "collect-allocations-hourly", now) == (SCHEDULED, None)
    assert scheduled_time("a-b-c-61", "a-b-c", now) == (datetime(1970, 1, 1, 1, 1, tzinfo=UTC), None)
    pinned, note = scheduled_time("a-b-manual", "a-b", now)
    assert pinned == datetime(2026, 12, 1, 3, tzinfo=UTC) and note and "a-b-manual" in note


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"JOB_NAME": "collect-allocations-hourly-99999999999999999999"}, "JOB_NAME"),  # past year 9999
        ({"CRONJOB": ""}, "CRONJOB"),  # JOB_NAME without the CronJob it comes from
        ({"PING_TOKEN": ""}, "PING_TOKEN"),
        ({"FUNCTION_URL": ""}, "FUNCTION_URL"),
        ({"FUNCTION_URL": "collect-allocations.finops"}, "FUNCTION_URL"),
        ({"MAX_TIME": "soon"}, "MAX_TIME"),
        ({"MAX_PINGS": "0"}, "MAX_PINGS"),
        ({"COST_JOB": "team-a"}, "COST_JOB"),
        ({"COST_JOB": "Team_A/x"}, "COST_JOB"),
    ],
)
def test_bad_settings_are_one_line_naming_the_variable_and_nothing_is_sent(
    overrides: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_function((200, {}, {"outcome": "success"})) as fake:
        for name, value in ping_env(fake.url, JOB, **overrides).items():
            monkeypatch.setenv(name, value)
        assert main(["ping"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("finops: ") and named in line
    assert fake.requests == []


def test_a_failing_function_fails_the_job_with_its_error_and_no_secret() -> None:
    answer = {"outcome": "failed", "error": "OpenCost unavailable", "run_id": "r1"}
    with fake_function((503, {"Retry-After": "60"}, answer)) as fake:
        result = run_command(CRONJOB, ping_env(fake.url, JOB, FUNCTION_URL=fake.url.replace("//", "//u:pw@")))
    assert result.returncode == 3  # a dependency (the function) failed
    assert len(fake.requests) == 1, "the Job's own retries (backoffLimit) retry a failed run"
    (line,) = result.stderr.splitlines()
    assert line.startswith("finops: ") and "HTTP 503" in line and "OpenCost unavailable" in line
    assert "OpenCost unavailable" in result.stdout  # the whole answer, in the Job's log
    for secret in (TOKEN, "pw@"):
        assert secret not in result.stdout + result.stderr


def test_an_unreachable_function_fails_the_job_on_one_line() -> None:
    with fake_function((200, {}, {})) as fake:
        url = fake.url
    result = run_command(CRONJOB, ping_env(url, JOB))
    assert result.returncode == 3  # a dependency (the function) failed
    (line,) = result.stderr.splitlines()
    assert line.startswith("finops: request to") and url in line


def test_a_backlog_is_pinged_again_until_nothing_remains(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(cli_ops, "_sleep", waits.append)
    answers: list[tuple[int, dict[str, str], object]] = [
        (200, {}, {"outcome": "success", "remaining": 3}),
        (200, {}, {"outcome": "success", "remaining": 1, "retry_after_seconds": 5}),
        (200, {}, {"outcome": "success", "remaining": 0}),
    ]
    with fake_function(*answers) as fake:
        for name, value in ping_env(fake.url, JOB).items():
            monkeypatch.setenv(name, value)
        assert main(["ping"]) == 0
    assert len(fake.requests) == 3
    assert len({request.body for request in fake.requests}) == 1, "the same hour each time"
    assert waits == [0.0, 5.0]


def test_pinging_a_backlog_is_bounded(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli_ops, "_sleep", lambda seconds: None)
    with fake_function((200, {}, {"outcome": "success", "remaining": 7})) as fake:
        for name, value in ping_env(fake.url, JOB, MAX_PINGS="3").items():
            monkeypatch.setenv(name, value)
        assert main(["ping"]) == 0  # the work done is kept; the next scheduled ping continues
        assert len(fake.requests) == 3
        assert main(["ping", "--max-pings", "1"]) == 0
        assert len(fake.requests) == 4
    assert "7 still remaining after 1 ping(s)" in capsys.readouterr().out


def test_a_costjob_ping_names_its_costjob() -> None:
    with fake_function((200, {}, {"outcome": "success"})) as fake:
        result = run_command(CRONJOB, ping_env(fake.url, JOB, COST_JOB="team-a/allocations"))
    assert result.returncode == 0, result.stderr
    (request,) = fake.requests
    ping = Ping.model_validate_json(request.body)
    assert ping.trigger == "costjob"
    assert ping.costJob is not None and str(ping.costJob) == "team-a/allocations"
    assert ping.scheduledTime and parse_timestamp(ping.scheduledTime, field="scheduledTime") == SCHEDULED


INSTALL = manifests.named("Job", "finops-install")


def install_env(url: str, database_url: str, **overrides: str) -> dict[str, str]:
    return {
        **manifest_values(INSTALL),
        "PATH": f"{BIN}:/usr/bin:/bin",
        "DATABASE_URL": database_url,
        "PING_TOKEN": TOKEN,
        "BACKFILL_URL": url,
        "REQUEST_TIMEOUT_SECONDS": "20",
        "MAX_INVOCATIONS": "5",
        "RETRY_SECONDS": "0",
        **overrides,
    }


def test_install_migrates_then_calls_backfill_until_nothing_remains(database_url: str) -> None:
    answers = [
        (404, {}, {"error": "route not ready"}),  # the Knative route is not ready yet
        (503, {"Retry-After": "0"}, {"outcome": "failed", "retry": True}),  # the lock is busy
        (200, {}, {"outcome": "partial", "remaining": 2, "retry_after_seconds": 0}),
        (200, {}, {"outcome": "success", "remaining": 0, "retry_after_seconds": 0}),
    ]
    with fake_function(*answers) as fake:
        result = run_command(INSTALL, install_env(fake.url, database_url))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "schema is up to date" in result.stdout or "applied migrations" in result.stdout
    assert len(fake.requests) == 4
    for request in fake.requests:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        assert Invocation.model_validate_json(request.body).trigger == "install"
    assert TOKEN not in result.stdout + result.stderr


def test_install_waits_as_told_and_retries_while_unreachable() -> None:
    answers = [
        (503, {"Retry-After": "7"}, {"outcome": "failed"}),
        (502, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, b"<html>bad gateway</html>"),  # a date: default
        (200, {"Retry-After": "99"}, {"outcome": "partial", "remaining": 4, "retry_after_seconds": 3}),
        (200, {}, {"outcome": "partial", "remaining": 1}),
        (200, {}, {"outcome": "success", "remaining": 0}),
    ]
    waits: list[float] = []
    lines: list[str] = []
    with fake_function(*answers) as fake:
        real = bearer_post(TOKEN)
        calls = 0

        def post(url: str, body: dict[str, Any], timeout: float) -> Answer:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise httpx.ConnectError("connection refused")  # no endpoint yet
            return real(url, body, timeout)

        call_backfill(
            post, url=fake.url, timeout=5, max_invocations=10, retry_seconds=11, sleep=waits.append, out=lines.append
        )
    assert len(fake.requests) == 5
    assert waits == [11, 7, 11, 3, 11]  # unreachable, Retry-After, a date, retry_after_seconds, none named
    assert "unreachable" in lines[0]


def test_install_fails_on_a_refused_call_and_when_backfill_never_finishes(database_url: str) -> None:
    with fake_function((401, {}, {"outcome": "failed", "error": "wrong token"})) as fake:
        result = run_command(INSTALL, install_env(fake.url, database_url))
    assert result.returncode == 3  # a dependency (the function) failed
    assert len(fake.requests) == 1
    (line,) = result.stderr.splitlines()
    assert "HTTP 401" in line and "wrong token" in line
    with fake_function((200, {}, {"outcome": "partial", "remaining": 1, "retry_after_seconds": 0})) as fake:
        result = run_command(INSTALL, install_env(fake.url, database_url))
    assert result.returncode == 3  # a dependency (the function) failed
    assert len(fake.requests) == 5
    assert "giving up" in result.stderr


def test_install_stops_before_calling_backfill_when_migrations_fail() -> None:
    with fake_function((200, {}, {"remaining": 0})) as fake:
        result = run_command(INSTALL, install_env(fake.url, ""))  # DATABASE_URL is not set
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "DATABASE_URL" in line
    assert fake.requests == []


@pytest.mark.parametrize(
    "variable", ["BACKFILL_URL", "PING_TOKEN", "MAX_INVOCATIONS", "REQUEST_TIMEOUT_SECONDS", "RETRY_SECONDS"]
)
def test_install_settings_are_checked_before_anything_runs(
    variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = "" if variable in ("BACKFILL_URL", "PING_TOKEN") else "-1"
    with fake_function((200, {}, {"remaining": 0})) as fake:
        for name, value in install_env(fake.url, "", **{variable: bad}).items():  # no database needed
            monkeypatch.setenv(name, value)
        assert main(["install"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("finops: ") and variable in line
    assert fake.requests == []
