"""The worlds the browser tests of the UI extension look at, built once per module over real HTTP:

- ``host``: the test cluster (tests/data): hours collected by ``collect_allocations``, install
  records by ``backfill``, sync records by ``on_sync`` (two syncs of argocd/web for a trend, a
  namespace-scope sync of team-apps/web), a ``cost_api`` with a chargeback policy whose OpenCost
  does not answer (``/data-quality`` says so), and the Argo CD stand-in (``sandbox.argocd_host``)
  in front of it. That cluster serves no VPA API (rightsizing is not available) and has no
  orphaned pod nor daily history yet;
- ``demo``: ``finops run`` (what ``make run`` runs) over the demo cluster (sandbox/demo): nine
  days of history and the recorded days, VPAs of every kind, an orphaned pod, the demo syncs and
  a cloud estimate, in the same database under its own cluster name;

- ``gpu_host``: a cluster with GPUs and carbon estimates (cluster ``gpu-ui``, ``GPU_SCENARIO``),
  three hours collected by ``finops collect`` (the last without emissions), argocd/web recorded
  on its namespace ``ml``, and its own ``cost_api`` and Argo CD stand-in; the figures the pages
  must show are computed by hand in ``GPU_SCENARIO``'s comment;

plus headless Chromium, and a page that records console errors and saves a screenshot of what it
showed.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, sync_playwright
from werkzeug.serving import make_server

from finops.hours import truncate_to_hour
from infra.postgres import connect
from sandbox import opencost as sandbox_opencost
from sandbox.argocd_host import ArgoHost, serve
from sandbox.localstack import Stack, serve_function
from tests.conftest import TABLES
from tests.e2e.cli_runner import run_finops
from tests.e2e.conftest import HOOK_TOKEN, TOKEN
from tests.net import refused_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / ".local" / "artifacts" / "ui-extension"
PROXY = "test-ui-proxy-token"
HOURS = 30  # hours of history: yesterday (final) and today so far (partial)
POLICY = """owner_label: team
cost_center_label: cost-center
idle: separate
idle_owner: platform
shared: {namespaces: [], split: proportional}
currency: USD
"""


def wait_for(predicate: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not reached in {timeout:.0f} s")


def _count(database_url: str, query: str, params: tuple[Any, ...]) -> int:
    """The ``n`` of a ``SELECT count(*) AS n`` on a connection of its own."""
    db = connect(database_url)
    try:
        with db.connection() as conn:
            row = conn.execute(query, params).fetchone()
    finally:
        db.close()
    return int(row["n"]) if row else 0


def _records(database_url: str, app_ns: str, app: str, on: str, cluster: str = "test") -> int:
    return _count(
        database_url,
        "SELECT count(*) AS n FROM cost_actuals"
        " WHERE cluster = %s AND app_namespace = %s AND app_name = %s AND measured_on = %s",
        (cluster, app_ns, app, on),
    )


def _sync(on_sync_url: str, stack: Stack, app_ns: str, app: str, revision: str, *, resources: bool = True) -> None:
    url = f"{stack.kube_url}/apis/argoproj.io/v1alpha1/namespaces/{app_ns}/applications/{app}"
    application = httpx.get(url, timeout=10).json()
    spec = application["spec"]
    body = {
        "app": app,
        "appNamespace": app_ns,
        "project": spec["project"],
        "destinationNamespace": spec["destination"].get("namespace"),
        "destinationServer": spec["destination"].get("server"),
        "destinationName": spec["destination"].get("name"),
        "syncResult": "Succeeded",
        "revision": revision,
        "revisions": None,
        "finishedAt": datetime.now(UTC).isoformat(),
        "resources": (application.get("status") or {}).get("resources", []) if resources else [],
    }
    response = httpx.post(on_sync_url, json=body, headers={"Authorization": f"Bearer {HOOK_TOKEN}"}, timeout=30)
    assert response.status_code == 202, response.text


def empty_tables(database_url: str) -> None:
    db = connect(database_url)
    with db.connection() as conn:
        tables = conn.execute(TABLES).fetchone()
        assert tables is not None
        conn.execute(f"TRUNCATE {next(iter(tables.values()))} RESTART IDENTITY CASCADE")
    db.close()


def final_hours_today(database_url: str, cluster: str = "demo") -> int:
    """The hours of today (UTC) the cluster's ledger holds as final: none when the demo ran in a
    day's first hour, whose only hour of today was still open. The anomaly score needs one."""
    return _count(
        database_url,
        "SELECT count(*) AS n FROM allocation_hours WHERE cluster = %s AND state = 'final'"
        " AND hour >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
        (cluster,),
    )


def build_world(stack: Stack, database_url: str, collect_url: str, on_sync_url: str) -> None:
    """The test cluster's world (cluster ``test``), into tables emptied by ``demo_run``."""
    first = truncate_to_hour(datetime.now(UTC)) - timedelta(hours=HOURS - 1)
    for n in range(HOURS):
        scheduled = (first + timedelta(hours=n)).isoformat()
        response = httpx.post(
            collect_url, json={"scheduledTime": scheduled}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
        )
        assert response.status_code == 200, response.text
    with serve_function(stack, "backfill", OPENCOST_RETRIES="0") as url:
        response = httpx.post(url, json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
        assert response.status_code == 200, response.text
    for n, revision in enumerate(("1111111", "2222222"), start=1):
        _sync(on_sync_url, stack, "argocd", "web", revision)
        wait_for(lambda n=n: _records(database_url, "argocd", "web", "sync") == n, f"sync {n} of argocd/web measured")
    _sync(on_sync_url, stack, "team-apps", "web", "3333333", resources=False)
    wait_for(lambda: _records(database_url, "team-apps", "web", "sync") == 1, "sync of team-apps/web measured")


@pytest.fixture(scope="module")
def demo_run(database_url: str) -> Iterator[Callable[[], tuple[str, list[str]]]]:
    """This module's tests share two worlds, from empty tables: ``finops run`` over the demo cluster
    starts first, in its own process, and builds its world while ``host`` builds the other."""
    empty_tables(database_url)
    with finops_run(database_url, hours=24) as started:
        yield started


@pytest.fixture(scope="module")
def host(
    stack: Stack,
    database_url: str,
    collect_url: str,
    on_sync_url: str,
    tmp_path_factory: Any,
    demo_run: Callable[[], tuple[str, list[str]]],
) -> Iterator[ArgoHost]:
    build_world(stack, database_url, collect_url, on_sync_url)
    policy = tmp_path_factory.mktemp("policy") / "policy.yaml"
    policy.write_text(POLICY)
    with (
        refused_port() as closed,  # an OpenCost that does not answer
        serve_function(
            stack, "cost_api", PROXY_TOKEN=PROXY, POLICY_PATH=str(policy), OPENCOST_URL=f"http://127.0.0.1:{closed}"
        ) as api_url,
        serve(kube_url=stack.kube_url, cost_api_url=api_url, proxy_token=PROXY) as argo,
    ):
        yield argo


# A cluster with GPUs and carbon estimates (tests/e2e/test_gpu_chargeback.py's GPUs, with prices
# for CPU and RAM, and test_carbon.py's estimates), per hour, under GPU_BASIS=request:
#
# - gpu-a100: 8 cores x 0.05 + 32 GiB x 0.0125 + 2 A100 x 3.00 = 6.80 an hour, 2720 g CO2e. ml/train
#   (team research) requests 1 core, 1 GiB and one A100 (30 % busy): 0.05 + 0.0125 + 3.00 = 3.0625,
#   1 GPU-hour, so 2720 x 3.0625 / 6.80 = 1225 g; the node's idle 1495 g. The other A100 is idle:
#   3.00 and 1 GPU-hour on the line __idle__/gpu:NVIDIA A100-SXM4-80GB.
# - gpu-t4: 4 x 0.05 + 16 x 0.0125 + a T4 at 0.60 = 1.00 an hour, 400 g. Three infer pods (team
#   serving, 1 core and 1 GiB each) time-slice the T4 at 50, 25 and 10 % activity: GPU 0.30, 0.15
#   and 0.06, so 0.3625, 0.2125 and 0.1225 in all: 145, 85 and 49 g; the idle 121 g; the idle T4
#   0.09 and 0.15 GPU-hours.
#
# Three hours, the last collected from an OpenCost without carbon estimates: research pays
# 3 x 3.0625 = 9.1875 for 3 GPU-hours (9.00) of which 0.9 busy (10.00 a busy GPU-hour) and emits
# 2 x 1225 = 2450 g (2.450 kg); serving 3 x 0.6975 = 2.0925, 1.53 for 2.55 GPU-hours, 2 x 279 = 558 g.
GPU_CLUSTER = "gpu-ui"
A100, T4 = "NVIDIA A100-SXM4-80GB", "NVIDIA T4"


def _gpu_pod(namespace: str, name: str, node: str, busy: str) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "kind": "Pod",
        "name": name,
        "node": node,
        "containers": [
            {
                "name": "main",
                "request": {"cpu": 1, "ramGiB": 1, "gpu": 1},
                "usage": {"cpu": 1, "ramGiB": 1, "gpu": busy},
            }
        ],
    }


PRICES = {"cpuHourly": "0.05", "ramGiBHourly": "0.0125"}
GPU_SCENARIO: dict[str, Any] = {
    "cluster": GPU_CLUSTER,
    "nodes": [
        {"name": "gpu-a100", "cpuCores": 8, "ramGiB": 32, "gpus": 2, "gpuHourly": "3.00", "gpuModel": A100, **PRICES},
        {
            "name": "gpu-t4",
            "cpuCores": 4,
            "ramGiB": 16,
            "gpus": 1,
            "gpuHourly": "0.60",
            "gpuModel": T4,
            "gpuSharing": "time-sliced",
            **PRICES,
        },
    ],
    "namespaces": [{"name": "ml", "labels": {"team": "research"}}, {"name": "infer", "labels": {"team": "serving"}}],
    "workloads": [
        _gpu_pod("ml", "train", "gpu-a100", "0.3"),
        _gpu_pod("infer", "infer-a", "gpu-t4", "0.5"),
        _gpu_pod("infer", "infer-b", "gpu-t4", "0.25"),
        _gpu_pod("infer", "infer-c", "gpu-t4", "0.1"),
    ],
    "carbon": {"nodes": {"gpu-a100": "0.00272", "gpu-t4": "0.0004"}},
}
GPU_HOURS = 3  # the last without emissions
# argocd/web's record on ml over the three hours: train's 3 x (0.05 + 0.0125 + 3.00), 720 / 3 x that a month
RECORD = json.dumps({"cpu": 150_000, "ram": 37_500, "gpu": 9_000_000})


def gpu_world_hours() -> tuple[datetime, datetime]:
    """The first hour of the GPU world and the one its OpenCost had no carbon estimates for."""
    first = truncate_to_hour(datetime.now(UTC)) - timedelta(hours=GPU_HOURS + 1)
    return first, first + timedelta(hours=GPU_HOURS - 1)


def _collect(database_url: str, kube_url: str, opencost_url: str, start: datetime, end: datetime) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "OPENCOST_URL": opencost_url,
        "KUBE_API_URL": kube_url,
        "CLUSTER_ID": GPU_CLUSTER,
        "GPU_BASIS": "request",
    }
    done = run_finops("collect", "--from", start.isoformat(), "--to", end.isoformat(), env=env)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def gpu_host(
    stack: Stack, database_url: str, tmp_path_factory: Any, demo_run: Callable[[], tuple[str, list[str]]]
) -> Iterator[ArgoHost]:
    """The GPU world's Argo CD stand-in; argocd/web is recorded on namespace ``ml`` (namespace scope)."""
    first, dark = gpu_world_hours()
    without_carbon = {k: v for k, v in GPU_SCENARIO.items() if k != "carbon"}
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(GPU_SCENARIO)) as lit:
        _collect(database_url, stack.kube_url, lit.url, first, dark)
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(without_carbon)) as unlit:
        _collect(database_url, stack.kube_url, unlit.url, dark, dark + timedelta(hours=1))
    db = connect(database_url)
    try:
        with db.connection() as conn:
            conn.execute(
                "INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on,"
                " scope, measured_at, window_start, window_end, measured_hours, cost_micros, monthly_micros,"
                " breakdown) VALUES (%s, 'argocd', 'web', 'ml', 'sync', 'namespace', now(), %s, %s, %s, %s, %s, %s)",
                (GPU_CLUSTER, first, dark + timedelta(hours=1), GPU_HOURS, 9_187_500, 2_205_000_000, RECORD),
            )
    finally:
        db.close()
    policy = tmp_path_factory.mktemp("gpu-policy") / "policy.yaml"
    policy.write_text(POLICY)
    with (
        serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, POLICY_PATH=str(policy), CLUSTER_ID=GPU_CLUSTER) as api,
        serve(kube_url=stack.kube_url, cost_api_url=api, proxy_token=PROXY) as argo,
    ):
        yield argo


@pytest.fixture
def gpu_screen(browser: Browser, gpu_host: ArgoHost, request: pytest.FixtureRequest) -> Iterator[Screen]:
    yield from _screen(browser, gpu_host.url, request)


@pytest.fixture(scope="module")
def demo(demo_run: Callable[[], tuple[str, list[str]]]) -> tuple[str, list[str]]:
    """``finops run`` over the demo cluster, serving until the module ends: its page's URL and the
    lines it printed until then."""
    return demo_run()


def age_estimate(database_url: str, app: tuple[str, str], days: int) -> None:
    """As if CI's last push of the demo cluster's estimate for ``app`` came ``days`` days ago."""
    db = connect(database_url)
    try:
        with db.connection() as conn:
            conn.execute(
                "UPDATE cloud_estimates SET received_at = received_at - make_interval(days => %s),"
                " changed_at = changed_at - make_interval(days => %s)"
                " WHERE cluster = 'demo' AND app_namespace = %s AND app_name = %s",
                (days, days, *app),
            )
    finally:
        db.close()


def _unavailable(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """A cost_api whose database is down: every call answers 503 with cost_api's error body."""
    body = json.dumps({"error": "PostgreSQL is unavailable: connection refused"}).encode()
    start_response("503 Service Unavailable", [("Content-Type", "application/json"), ("Retry-After", "30")])
    return [body]


@pytest.fixture(scope="module")
def outage_host(stack: Stack) -> Iterator[ArgoHost]:
    """The Argo CD stand-in in front of a cost service answering 503."""
    server = make_server("127.0.0.1", 0, _unavailable, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with serve(
            kube_url=stack.kube_url, cost_api_url=f"http://127.0.0.1:{server.server_port}", proxy_token=PROXY
        ) as argo:
            yield argo
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs Debian's chromium as root; else sudo apt-get install chromium"
        )
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@contextlib.contextmanager
def finops_run(database_url: str, hours: int) -> Iterator[Callable[[], tuple[str, list[str]]]]:
    """``finops run`` (what ``make run`` runs) in its own process, started at once; yields a call
    that waits until it prints the UI's URL, the last line of its start, and returns that URL and
    the lines printed. Stopped with Ctrl-C (SIGINT)."""
    binary = Path(sys.executable).with_name("finops")
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [str(binary), "run", "--hours", str(hours)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: list[str] = []
    urls: list[str] = []
    deadline = time.monotonic() + 240

    def started() -> tuple[str, list[str]]:
        while not urls:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                raise AssertionError("finops run exited before printing the UI's URL:\n" + "\n".join(seen))
            seen.append(line)
            found = re.match(r"^Argo CD UI extension: (http://127\.0\.0\.1:\d+/)", line)
            if found:
                urls.append(found.group(1))
        return urls[0], seen

    try:
        yield started
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(10)  # the pipe is at its end once the process exited
        if process.stdout is not None:
            process.stdout.close()


@dataclass
class Screen:
    """One browser page on the host: what it logged as errors and what it asked the proxy."""

    page: Page
    base: str
    shots: Path
    errors: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    outage: int | None = None  # the status the cost service answers every call with (the outage host)

    def open(self, query: str) -> Page:
        self.page.goto(self.base + query)
        return self.page

    def text(self, testid: str) -> str:
        return self.page.get_by_test_id(testid).inner_text()

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path

    def unexpected_errors(self) -> list[str]:
        """Every console error, except, on the outage host only, the browser's own line for each
        answer of the broken service (Chromium logs every failed load; no page can avoid it)."""
        down = f"Failed to load resource: the server responded with a status of {self.outage}"
        return [e for e in self.errors if self.outage is None or not e.startswith(down)]


@pytest.fixture
def screen(browser: Browser, host: ArgoHost, request: pytest.FixtureRequest) -> Iterator[Screen]:
    yield from _screen(browser, host.url, request)


@pytest.fixture
def outage_screen(browser: Browser, outage_host: ArgoHost, request: pytest.FixtureRequest) -> Iterator[Screen]:
    yield from _screen(browser, outage_host.url, request, outage=503)


def _screen(
    browser: Browser, base_url: str, request: pytest.FixtureRequest, outage: int | None = None
) -> Iterator[Screen]:
    """A page; the test fails (at teardown) on any console error it logged (``unexpected_errors``)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    view = Screen(page, base_url.rstrip("/"), ARTIFACTS, outage=outage)

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            view.errors.append(message.text)

    def on_request(req: Request) -> None:
        if "/extensions/" in req.url:
            view.calls.append(req.url)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: view.errors.append(f"page error: {exc}"))
    page.on("request", on_request)
    yield view
    view.shot(request.node.name)
    context.close()
    assert view.unexpected_errors() == [], f"console errors: {view.unexpected_errors()}"


def through_proxy(host: ArgoHost | str, path: str, app: str, project: str = "default", user: str = "readonly") -> Any:
    """What the extension receives: ``path`` of cost_api through the host's proxy, as the user."""
    base = host if isinstance(host, str) else host.url
    response = httpx.get(
        base.rstrip("/") + "/extensions/finops/api/v1" + path,
        headers={"Argocd-Application-Name": app, "Argocd-Project-Name": project},
        cookies={"argocd.token": user},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()


def money(amount: str, currency: str | None) -> str:
    """The UI's rendering of an API amount: grouped, exact, with the currency code."""
    return f"{Decimal(amount):,} {currency or '(currency unknown)'}"


def formatted_change(amount: str, currency: str | None) -> str:
    """The UI's rendering of a signed change: "+1.20 USD", "-2.76 USD"."""
    return ("" if amount.startswith("-") else "+") + money(amount, currency)
