"""The demo cluster for the insight routes (rightsizing, orphaned pods), over real HTTP.

Both sandboxes serve the demo (``sandbox/demo``: its scenario, Argo CD Applications and
VerticalPodAutoscalers) on the real clock; ``collect_allocations`` stores its last hours as the
hourly ping would, into empty tables; ``cost_api`` reads them and the sandbox Kubernetes API.
Bind the fixtures in a test module by name (``demo_api = insights_world.demo_api``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from werkzeug.serving import make_server

from infra.postgres import Database, connect
from sandbox.cluster_sandbox import ClusterSandbox, serve_cluster
from sandbox.kube import KubeStore, make_app
from sandbox.kube.server import KubeServer
from sandbox.localstack import Stack, serve_function
from sandbox.opencost import load_scenario
from tests.conftest import TABLES
from tests.logs import LOG_DIR as TEST_LOGS

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

DEMO = Path(__file__).resolve().parents[2] / "sandbox" / "demo"
PROXY = "test-proxy-token"
PING = "test-ping-token"
GATE = "argocd:cost-gate"


@pytest.fixture(scope="module")
def demo() -> Iterator[ClusterSandbox]:
    with serve_cluster(load_scenario(DEMO / "scenario.yaml"), seed_dir=DEMO / "kube") as both:
        yield both


@pytest.fixture(scope="module")
def demo_stack(database_url: str, demo: ClusterSandbox) -> Stack:
    return Stack(
        database_url=database_url,
        opencost_url=demo.opencost.url,
        kube_url=demo.kube.url,
        ping_token=PING,
        cluster="demo",
        log_dir=TEST_LOGS,
    )


@pytest.fixture(scope="module")
def demo_db(database_url: str, demo_stack: Stack) -> Iterator[Database]:
    """Empty tables, then three hours of the demo collected through ``collect_allocations``."""
    db = connect(database_url, max_size=4)
    with db.connection() as conn:
        tables = conn.execute(TABLES).fetchone()
        assert tables is not None
        conn.execute(f"TRUNCATE {next(iter(tables.values()))} RESTART IDENTITY CASCADE")
    # The last hour that is over, and two before it: whole hours, whatever minute the test starts at.
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    with serve_function(demo_stack, "collect_allocations", HOURS_LOOKBACK="2") as url:
        response = httpx.post(
            url, json={"scheduledTime": hour.isoformat()}, headers={"Authorization": f"Bearer {PING}"}, timeout=120
        )
    assert response.status_code == 200, response.text
    assert response.json()["rows_written"] > 0
    yield db
    db.close()


@pytest.fixture(scope="module")
def demo_api(demo_stack: Stack, demo_db: Database) -> Iterator[str]:
    with serve_function(demo_stack, "cost_api", PROXY_TOKEN=PROXY) as url:
        yield url


def get(url: str, path: str, app: str | None, token: str | None = PROXY, **params: str) -> httpx.Response:
    headers = {}
    if app is not None:
        headers["Argocd-Application-Name"] = app
    if token is not None:
        headers["X-Finops-Proxy-Token"] = token
    return httpx.get(url + path, headers=headers, params=params, timeout=60)


def rows(db: Database, sql: str, *args: object) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return list(conn.execute(sql, args).fetchall())


class Forbidding:
    """A WSGI wrapper answering 403 (RBAC's Status) for any path naming one of ``plurals``."""

    def __init__(self, app: WSGIApplication, plurals: Iterable[str]) -> None:
        self.app, self.plurals = app, tuple(plurals)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if any(p in path.split("/") for p in self.plurals):
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "Forbidden",
                "code": 403,
                "message": f'{path} is forbidden: User "system:serviceaccount:finops:cost-api" cannot list it',
            }
            start_response("403 Forbidden", [("Content-Type", "application/json")])
            return [json.dumps(status).encode()]
        return self.app(environ, start_response)


@contextlib.contextmanager
def forbidding(store: KubeStore, *plurals: str) -> Iterator[KubeServer]:
    """Another API server over ``store`` that refuses every request naming one of ``plurals`` with
    403, as RBAC does when the ServiceAccount lacks the rule."""
    with KubeServer(store, make_server("127.0.0.1", 0, Forbidding(make_app(store), plurals), threaded=True)) as server:
        server.start()
        yield server
