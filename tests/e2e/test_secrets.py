"""We test these aspects of "no secret leaks": representative failing and succeeding paths are run
with distinctive secret values, and every captured output is searched for them (stdout and stderr
of the ``finops`` command, HTTP bodies of the served functions, and the functions' log files
under ``.local/test-logs/secrets/``):

- a DATABASE_URL with a password: typo'd scheme (``postgres//``), a refused port, a missing
  database, and a working one, in the CLI and in a served function (cold start and requests); the
  webhook answers 503 naming the cause when its database is down;
- an OPENCOST_URL with credentials: OpenCost working, down, and failing with a body that echoes
  the request's Authorization header;
- PING_TOKEN, WEBHOOK_TOKEN and PROXY_TOKEN values, sent right and wrong;
- error bodies name the dependency and the cause, not its address, and the run outcome of a
  database failure carries the cause (with the run id), not just "no connection available".
"""

from __future__ import annotations

import base64
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import psycopg.conninfo
import pytest

from infra.postgres import Database
from sandbox import opencost as sandbox_opencost
from sandbox.localstack import Stack, serve_function
from tests.e2e.cli_runner import one_line_error, run_finops
from tests.logs import LOG_DIR as TEST_LOGS
from tests.net import refused_port

DB_PASSWORD = "dbpw-Zx81q-secret"
OC_USER, OC_PASSWORD = "ocuser", "ocpw-Qv27k-secret"
PING = "ping-Tq55w-secret"
WEBHOOK = "hook-Lm93x-secret"
PROXY = "proxy-Rk46z-secret"
SECRETS = (
    DB_PASSWORD,
    OC_PASSWORD,
    PING,
    WEBHOOK,
    PROXY,
    base64.b64encode(f"{OC_USER}:{OC_PASSWORD}".encode()).decode(),
)
DEMO_POLICY = Path(__file__).resolve().parents[2] / "sandbox" / "demo" / "policy.yaml"
LOG_DIR = TEST_LOGS / "secrets"


class Captured:
    """Every output a test saw; ``check`` fails naming the secret and where it appeared."""

    def __init__(self) -> None:
        self.outputs: list[tuple[str, str]] = []

    def add(self, where: str, text: str) -> str:
        self.outputs.append((where, text))
        return text

    def check(self) -> None:
        for log in sorted(LOG_DIR.glob("*.log")):
            self.add(str(log), log.read_text(errors="replace"))
        leaks = [(where, secret) for where, text in self.outputs for secret in SECRETS if secret in text]
        assert not leaks, f"secrets found: {leaks}"


@pytest.fixture
def captured() -> Iterator[Captured]:
    shutil.rmtree(LOG_DIR, ignore_errors=True)
    seen = Captured()
    yield seen
    seen.check()


@pytest.fixture
def secret_stack(stack: Stack) -> Stack:
    """The session's stack with its own log folder and secret tokens."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    return replace(stack, log_dir=LOG_DIR, ping_token=PING, function_urls={})


def with_password(dsn: str, **params: str) -> str:
    return psycopg.conninfo.make_conninfo(dsn, password=DB_PASSWORD, **params)


def answer(seen: Captured, where: str, response: httpx.Response) -> dict[str, object]:
    seen.add(f"{where} body", response.text)
    seen.add(f"{where} headers", json.dumps(dict(response.headers)))
    body: dict[str, object] = response.json()
    return body


class _EchoingOpenCost(BaseHTTPRequestHandler):
    """A failing OpenCost that echoes what it was sent, credentials included (a hostile proxy)."""

    def do_GET(self) -> None:
        body = f"boom: Authorization: {self.headers.get('Authorization')} {self.path}".encode()
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def closed() -> Iterator[int]:
    """A port that refuses connections: a database or an OpenCost that is down."""
    with refused_port() as port:
        yield port


@pytest.fixture
def echoing_opencost() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingOpenCost)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{OC_USER}:{OC_PASSWORD}@127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_cli_with_secrets_in_its_environment(
    captured: Captured, database_url: str, tmp_path: Path, closed: int
) -> None:
    def finops(*args: str, expect: int, **env: str) -> str:
        outcome = run_finops(*args, cwd=tmp_path, env=env)
        captured.add(f"finops {' '.join(args)} stdout", outcome.stdout)
        captured.add(f"finops {' '.join(args)} stderr", outcome.stderr)
        assert outcome.returncode == expect, outcome.stderr
        return one_line_error(outcome) if expect else outcome.stdout

    typo = f"postgres//finops:{DB_PASSWORD}@db.internal/finops"
    line = finops("runs", expect=2, DATABASE_URL=typo)
    assert line.startswith("finops: DATABASE_URL is not a PostgreSQL URL or connection string: ")
    finops("report", "chargeback", "--month", "2026-10", "--policy", str(DEMO_POLICY), expect=2, DATABASE_URL=typo)

    refused = f"postgresql://finops:{DB_PASSWORD}@127.0.0.1:{closed}/finops"
    fast = {"DATABASE_CONNECT_TIMEOUT_SECONDS": "1"}  # a refused database is retried for this long
    assert (
        finops("runs", expect=3, DATABASE_URL=refused, **fast)
        == "finops: PostgreSQL is unavailable: Connection refused"
    )

    missing = with_password(database_url, dbname="no_such_database")
    line = finops("verify", expect=3, DATABASE_URL=missing, **fast)
    assert line == 'finops: PostgreSQL is unavailable: database "no_such_database" does not exist'

    finops("runs", expect=0, DATABASE_URL=with_password(database_url))  # the server ignores it (trust)

    down = f"http://{OC_USER}:{OC_PASSWORD}@127.0.0.1:{closed}"
    line = finops("invoke", "collect_allocations", "--url", down, expect=3, PING_TOKEN=PING)
    assert "ConnectError" in line
    finops("collect", "--from", "2026-10-01", "--to", "2026-10-02", "--url", down, expect=3, PING_TOKEN=PING)


def test_cli_collect_with_opencost_credentials(
    captured: Captured, database_url: str, db: object, secret_stack: Stack, echoing_opencost: str, closed: int
) -> None:
    for url in (f"http://{OC_USER}:{OC_PASSWORD}@127.0.0.1:{closed}", echoing_opencost):
        outcome = run_finops(
            "collect",
            "--from",
            "2026-10-01T00:00:00Z",
            "--to",
            "2026-10-01T02:00:00Z",
            DATABASE_URL=with_password(database_url),
            OPENCOST_URL=url,
            OPENCOST_RETRIES="0",
            KUBE_API_URL=secret_stack.kube_url,
            CLUSTER_ID="secrets",
        )
        captured.add("finops collect stdout", outcome.stdout)
        captured.add("finops collect stderr", outcome.stderr)
        assert outcome.returncode == 3  # OpenCost is unavailable or not OpenCost
        assert "Traceback" not in outcome.stderr


def test_served_function_with_a_malformed_database_url(captured: Captured, secret_stack: Stack) -> None:
    typo = f"postgres//finops:{DB_PASSWORD}@db.internal/finops"
    with (
        pytest.raises(RuntimeError, match="exited"),
        serve_function(secret_stack, "collect_allocations", DATABASE_URL=typo),
    ):
        pass
    log = (LOG_DIR / "collect_allocations.log").read_text()
    assert "DATABASE_URL is not a PostgreSQL URL or connection string" in log


@pytest.mark.parametrize(
    ("dsn", "cause"),
    [
        (lambda url, _: with_password(url, dbname="no_such_database"), 'database "no_such_database" does not exist'),
        (lambda _, port: f"postgresql://finops:{DB_PASSWORD}@127.0.0.1:{port}/finops", "Connection refused"),
    ],
    ids=["missing-database", "refused"],
)
def test_served_function_with_an_unavailable_database(
    captured: Captured,
    secret_stack: Stack,
    database_url: str,
    closed: int,
    dsn: Callable[[str, int], str],
    cause: str,
) -> None:
    env = {"DATABASE_URL": dsn(database_url, closed), "DATABASE_CONNECT_TIMEOUT_SECONDS": "2", "LOG_LEVEL": "DEBUG"}
    with serve_function(secret_stack, "collect_allocations", **env) as url:
        denied = httpx.post(url, json={}, headers={"Authorization": "Bearer wrong"}, timeout=30)
        answer(captured, "wrong token", denied)
        response = httpx.post(url, json={}, headers={"Authorization": f"Bearer {PING}"}, timeout=30)
        body = answer(captured, "ping", response)
    assert response.status_code == 503
    assert body["error"] == f"PostgreSQL is unavailable: {cause}"
    assert "127.0.0.1" not in response.text and "/tmp" not in response.text
    outcomes = [
        json.loads(line)
        for line in (LOG_DIR / "collect_allocations.log").read_text().splitlines()
        if '"run_outcome"' in line
    ]
    mine = [o for o in outcomes if o.get("run_id") == body["run_id"]]
    assert mine and mine[0]["error"] == f"PostgreSQL is unavailable: {cause}"


def test_the_webhook_with_its_database_down_is_a_503_naming_the_cause(
    captured: Captured, secret_stack: Stack, closed: int
) -> None:
    env = {
        "DATABASE_URL": f"postgresql://finops:{DB_PASSWORD}@127.0.0.1:{closed}/finops",
        "DATABASE_CONNECT_TIMEOUT_SECONDS": "2",
        "WEBHOOK_TOKEN": WEBHOOK,
        "LOG_LEVEL": "DEBUG",
    }
    hook = {
        "app": "web",
        "appNamespace": "argocd",
        "destinationNamespace": "shop",
        "syncResult": "Succeeded",
        "revision": "abc123",
        "finishedAt": "2026-11-29T10:00:00Z",
    }
    with serve_function(secret_stack, "on_sync", **env) as url:
        response = httpx.post(url, json=hook, headers={"Authorization": f"Bearer {WEBHOOK}"}, timeout=30)
        body = answer(captured, "on_sync, database down", response)
    assert response.status_code == 503, body
    assert body["error"] == "PostgreSQL is unavailable: Connection refused"
    assert "127.0.0.1" not in response.text and str(closed) not in response.text


def test_served_functions_with_opencost_credentials_and_tokens(
    captured: Captured,
    secret_stack: Stack,
    database_url: str,
    db: Database,
    opencost: sandbox_opencost.OpenCostServer,
    echoing_opencost: str,
    closed: int,
) -> None:
    working = f"http://{OC_USER}:{OC_PASSWORD}@127.0.0.1:{opencost.port}"
    down = f"http://{OC_USER}:{OC_PASSWORD}@127.0.0.1:{closed}"
    common = {
        "DATABASE_URL": with_password(database_url),
        "LOG_LEVEL": "DEBUG",
        "OPENCOST_RETRIES": "0",
        "HOURS_LOOKBACK": "1",
        "OPENCOST_TIMEOUT_SECONDS": "2",
    }
    for name, opencost_url, status in (
        ("working", working, 200),
        ("down", down, 503),
        ("echoing", echoing_opencost, 503),
    ):
        with serve_function(secret_stack, "collect_allocations", OPENCOST_URL=opencost_url, **common) as url:
            wrong = httpx.post(url, json={}, headers={"Authorization": f"Bearer {PING}x"}, timeout=30)
            assert answer(captured, f"{name}: wrong token", wrong)["error"]
            response = httpx.post(url, json={}, headers={"Authorization": f"Bearer {PING}"}, timeout=60)
            body = answer(captured, f"{name}: ping", response)
        assert response.status_code == status, body
        if status == 503:
            assert str(body["error"]).startswith("OpenCost "), body
            assert "127.0.0.1" not in response.text and OC_USER not in response.text

    with serve_function(secret_stack, "on_sync", WEBHOOK_TOKEN=WEBHOOK, OPENCOST_URL=working, **common) as url:
        hook = {
            "app": "web",
            "appNamespace": "argocd",
            "destinationNamespace": "shop",
            "syncResult": "Failed",
            "finishedAt": "2026-11-29T10:00:00Z",
        }
        for token, expected in ((f"{WEBHOOK}x", 401), (WEBHOOK, 200)):
            response = httpx.post(url, json=hook, headers={"Authorization": f"Bearer {token}"}, timeout=30)
            answer(captured, "on_sync", response)
            assert response.status_code == expected, response.text

    with serve_function(secret_stack, "cost_api", PROXY_TOKEN=PROXY, **common) as url:
        for token, expected in ((f"{PROXY}x", 403), (PROXY, 200)):  # 200: "no record yet"
            headers = {"X-Finops-Proxy-Token": token, "Argocd-Application-Name": "argocd:nothing"}
            response = httpx.get(f"{url}/api/v1/apps/argocd/nothing/actual", headers=headers, timeout=30)
            answer(captured, "cost_api", response)
            assert response.status_code == expected, response.text

    recorded = db.fetch_all("recent_job_runs", function=None, limit=100)
    errors = [str(row["error"]) for row in recorded if row["error"]]
    captured.add("job_runs.error", "\n".join(errors))
    echoed = [e for e in errors if "HTTP 500: boom" in e]
    assert echoed and all("Authorization: Basic ***" in e for e in echoed), errors
