"""End-to-end fixtures: the sandbox OpenCost and Kubernetes API over real HTTP, and the
functions served by functions-framework in their own processes, as a Knative revision runs them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.cluster import cluster_objects
from sandbox.localstack import Stack, serve_function
from tests.logs import LOG_DIR as TEST_LOGS

DATA = Path(__file__).resolve().parents[1] / "data"
TOKEN = "test-ping-token"
HOOK_TOKEN = "test-webhook-token"


@pytest.fixture(scope="session")
def scenario() -> sandbox_opencost.Scenario:
    return sandbox_opencost.load_scenario(DATA / "scenario.yaml")


@pytest.fixture(scope="session")
def opencost(scenario: sandbox_opencost.Scenario) -> Iterator[sandbox_opencost.OpenCostServer]:
    with sandbox_opencost.serve(scenario) as server:
        yield server


@pytest.fixture(scope="session")
def kube(scenario: sandbox_opencost.Scenario) -> Iterator[sandbox_kube.KubeServer]:
    """The test cluster's workloads and pods, its Argo CD Applications, PriceBooks and CostJob."""
    with sandbox_kube.serve(seed_dir=DATA / "kube", objects=cluster_objects(scenario)) as server:
        yield server


@pytest.fixture(scope="session")
def stack(database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer) -> Stack:
    return Stack(
        database_url=database_url,
        opencost_url=opencost.url,
        kube_url=kube.url,
        ping_token=TOKEN,
        cluster="test",
        log_dir=TEST_LOGS,
    )


@pytest.fixture(scope="session")
def collect_url(stack: Stack) -> Iterator[str]:
    """``collect_allocations`` with a short lookback and fast-failing OpenCost settings."""
    with serve_function(
        stack,
        "collect_allocations",
        HOURS_LOOKBACK="3",
        OPENCOST_TIMEOUT_SECONDS="1",
        OPENCOST_RETRIES="1",
    ) as url:
        yield url


class Pinger:
    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self, body: dict[str, object] | None = None, *, token: str = TOKEN, **kw: object) -> httpx.Response:
        return httpx.post(self.url, json=body or {}, headers={"Authorization": f"Bearer {token}"}, timeout=60, **kw)  # type: ignore[arg-type]


@pytest.fixture
def ping(collect_url: str, db: object) -> Pinger:
    """Ping ``collect_allocations``; depends on ``db`` so every test starts from empty tables."""
    return Pinger(collect_url)


@pytest.fixture(scope="session")
def on_sync_url(stack: Stack) -> Iterator[str]:
    """``on_sync`` measuring at once (no settle delay), with threads for 20 measurements in flight."""
    with serve_function(
        stack, "on_sync", WEBHOOK_TOKEN=HOOK_TOKEN, MEASURE_SETTLE_SECONDS="0", THREADS="48", OPENCOST_RETRIES="0"
    ) as url:
        yield url


# The fleet bucket's tests (test_fleet_files, test_fleet_reports): moto's bucket, and the collector
# driver's environment.
@pytest.fixture(scope="module")
def fleet_s3(moto_s3: str) -> Any:
    import boto3

    from tests.e2e.fleet_world import BUCKET

    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    if BUCKET not in {bucket["Name"] for bucket in client.list_buckets()["Buckets"]}:  # once per session
        client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture
def fleet_env(
    database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database_url, "OPENCOST_URL": opencost.url, "KUBE_API_URL": kube.url}
