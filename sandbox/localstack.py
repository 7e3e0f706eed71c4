"""The local stack behind ``finops run``: embedded PostgreSQL (unless ``DATABASE_URL`` is set),
the sandbox OpenCost and Kubernetes API with the demo scenario, and every function served by
functions-framework in its own process, exactly as a Knative revision runs it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

from infra import serving
from infra.postgres import apply_migrations, connect
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox import prometheus as sandbox_prometheus
from sandbox.cluster import cluster_objects
from sandbox.postgres import embedded_postgres
from sandbox.processes import dies_with_parent, free_port, stop_process

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "sandbox" / "demo"
DEMO_CURRENCY = "USD"  # the demo scenario's node prices (OpenCost's list prices) and policy's currency
PRICEBOOKS = "finops.stakater.com/v1alpha1"


def functions_framework_command(target: str, port: int, root: Path = ROOT) -> list[str]:
    """The same command the image runs, with the target and port of this process (and the code of
    the checkout at ``root``: this one unless a benchmark compares another)."""
    return serving.functions_framework_command(target, port, root / "functions" / "main.py")


@dataclass
class Stack:
    database_url: str
    opencost_url: str
    kube_url: str
    ping_token: str
    cluster: str
    function_urls: dict[str, str] = field(default_factory=dict)
    log_dir: Path = ROOT / ".local" / "logs"
    prometheus_url: str | None = None  # set: collect_allocations computes from Prometheus
    opencost_currency: str | None = None  # set: priced with OpenCost's own prices (PRICING_SOURCE=opencost)

    def function_env(self, target: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in {"FUNCTION_TARGET", "SCHEDULED_TIMESTAMP"}}
        env.update(
            FUNCTION_TARGET=target,
            DATABASE_URL=self.database_url,
            OPENCOST_URL=self.opencost_url,
            KUBE_API_URL=self.kube_url,
            PING_TOKEN=self.ping_token,
            WEBHOOK_TOKEN=self.ping_token,
            PROXY_TOKEN=self.ping_token,
            CLUSTER_ID=self.cluster,
            THREADS="32",
            PYTHONPATH=str(ROOT),
        )
        if self.prometheus_url:  # the generated series start at the first pinged hour: no lookback before it
            env.update(ALLOCATION_SOURCE="prometheus", PROMETHEUS_URL=self.prometheus_url, HOURS_LOOKBACK="0")
        if self.opencost_currency:
            env.update(PRICING_SOURCE="opencost", PRICING_CURRENCY=self.opencost_currency)
        env.update(extra)
        return env


def wait_until_serving(url: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the function process exited with {process.returncode}; see its log")
        try:
            httpx.get(url + "/healthz", timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"{url}: not serving after {timeout:.0f} s")


@contextlib.contextmanager
def serve_function(stack: Stack, target: str, root: Path = ROOT, /, **extra_env: str) -> Iterator[str]:
    """Serve one target under functions-framework on a free port; yield its URL. ``root``: the
    checkout whose code is served (``bench.webhook_ab`` serves another revision beside this one)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    stack.log_dir.mkdir(parents=True, exist_ok=True)
    log_name = target if root == ROOT else f"{target}-{root.name}"
    with (stack.log_dir / f"{log_name}.log").open("ab") as log_file:
        process = subprocess.Popen(
            functions_framework_command(target, port, root),
            env=stack.function_env(target, PORT=str(port), PYTHONPATH=str(root), **extra_env),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=dies_with_parent(),  # prctl only, resolved before the fork
        )
        try:
            wait_until_serving(url, process)
            stack.function_urls[target] = url
            yield url
        finally:
            stop_process(process)


@contextlib.contextmanager
def local_stack(
    first: datetime, hours: int, *, source: str = "opencost", pricing: str = "pricebook"
) -> Iterator[Stack]:
    """Start the whole local world; everything stops when the block exits. With ``source``
    ``prometheus``, Debian's Prometheus also serves a generated world's series (the ``hours`` hours
    from ``first``, built under ``.local/prometheus``) and collect_allocations reads it instead of
    OpenCost. With ``pricing`` ``opencost`` the cluster has no PriceBook: the functions price with
    OpenCost's own prices, declared in ``DEMO_CURRENCY``."""
    with contextlib.ExitStack() as stack:
        dsn = os.environ.get("DATABASE_URL") or stack.enter_context(embedded_postgres())
        db = connect(dsn)
        apply_migrations(db)
        db.close()
        scenario = sandbox_opencost.load_scenario(DEMO / "scenario.yaml")
        opencost = stack.enter_context(sandbox_opencost.serve(scenario))
        kube = stack.enter_context(sandbox_kube.serve(seed_dir=DEMO / "kube", objects=cluster_objects(scenario)))
        if pricing == "opencost":
            for book in kube.store.list(PRICEBOOKS, "pricebooks"):
                kube.store.delete(PRICEBOOKS, "pricebooks", book["metadata"]["namespace"], book["metadata"]["name"])
        prometheus_url = None
        if source == "prometheus":
            # The pinged hours, the last one whole (its pods' events fall in the first four).
            world = sandbox_prometheus.demo_world(first, hours=hours)
            prometheus_url = stack.enter_context(sandbox_prometheus.serve(world, ROOT / ".local" / "prometheus"))
        yield Stack(
            database_url=dsn,
            opencost_url=opencost.url,
            kube_url=kube.url,
            ping_token=secrets.token_urlsafe(24),
            cluster="demo",
            prometheus_url=prometheus_url,
            opencost_currency=DEMO_CURRENCY if pricing == "opencost" else None,
        )
