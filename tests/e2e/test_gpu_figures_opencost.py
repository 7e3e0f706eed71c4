"""We test these aspects of ``GPU_FIGURES=prometheus``, end to end: ``finops collect`` with OpenCost's
allocations and prices (the sandbox OpenCost) and each container's GPU figures and the hour's
GPUs from a real Prometheus (kube-state-metrics and DCGM), into a real PostgreSQL:

- OpenCost's allocations say nothing of MIG slices (its MIG pods have no GPU at all) and bill each
  HAMi pod a whole GPU; with Prometheus's figures every GPU row pays the same share as under the
  Prometheus source, for the four ways of sharing: the figures computed by hand in
  ``test_gpu_chargeback_prometheus`` (the same world, each GPU priced by OpenCost at 2.80 an hour);
- a node whose GPU count OpenCost and DCGM disagree on is not split: the hour keeps OpenCost's
  figures, and the run says why.

The OpenCost scenario mirrors ``gpu_world``: the same nodes, GPUs, namespaces and pods, at the same
times; CPU and memory cost nothing, so every cost is a GPU's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e.cli_runner import run_finops
from tests.e2e.test_gpu_chargeback_prometheus import FIRST, FROM, HAMI, MIG, TO, WHOLE, WORLD, time_sliced
from tests.prometheus import real_prometheus

FREE = {"cpuHourly": "0", "ramGiBHourly": "0", "gpuHourly": "2.80"}
SLICED = {**FREE, "gpuSharing": "time-sliced"}
GPUS = {"gpu-a100": 2, "gpu-t4": 1, "gpu-h100": 1, "gpu-l4": 1}
NAMESPACES = {"ml": "research", "inference": "serving", "research": "research", "notebooks": "analytics"}
WARM_UP = FIRST - timedelta(minutes=15)


def _statefulset(namespace: str, name: str, node: str, gpu: int, start: Any = WARM_UP) -> dict[str, Any]:
    """A pod of gpu_world as OpenCost sees it: ``nvidia.com/gpu`` only (a MIG slice is not one)."""
    return {
        "namespace": namespace,
        "kind": "StatefulSet",
        "name": name,
        "node": node,
        "start": start.isoformat(),
        "containers": [{"name": "main", "request": {"cpu": 1, "ramGiB": 4, "gpu": gpu}}],
    }


def scenario(gpus: dict[str, int]) -> dict[str, Any]:
    return {
        "cluster": "gpu-figures",
        "nodes": [
            {"name": "gpu-a100", "cpuCores": 32, "ramGiB": 256, "gpus": gpus["gpu-a100"], **FREE},
            {
                "name": "gpu-t4",
                "cpuCores": 8,
                "ramGiB": 32,
                "gpus": gpus["gpu-t4"],
                **FREE,
                "gpuSharing": "time-sliced",
            },
            {"name": "gpu-h100", "cpuCores": 32, "ramGiB": 256, "gpus": gpus["gpu-h100"], **FREE},
            {"name": "gpu-l4", "cpuCores": 16, "ramGiB": 64, "gpus": gpus["gpu-l4"], **FREE},
        ],
        "namespaces": [{"name": ns, "labels": {"team": team}} for ns, team in NAMESPACES.items()],
        "workloads": [
            _statefulset("ml", "train", "gpu-a100", 1),
            _statefulset("inference", "asr", "gpu-t4", 1),
            _statefulset("inference", "ocr", "gpu-t4", 1),
            _statefulset("inference", "tts", "gpu-t4", 1, FIRST + timedelta(minutes=30)),
            _statefulset("research", "mig-small", "gpu-h100", 0),
            _statefulset("research", "mig-medium", "gpu-h100", 0),
            _statefulset("research", "mig-large", "gpu-h100", 0),
            _statefulset("notebooks", "nb-quarter", "gpu-l4", 1),
            _statefulset("notebooks", "nb-half", "gpu-l4", 1),
            _statefulset("notebooks", "nb-mem", "gpu-l4", 1),
        ],
    }


@pytest.fixture(scope="module")
def prometheus_url() -> Iterator[str]:
    with real_prometheus(WORLD) as url:
        yield url


def collect(
    database_url: str, opencost: str, prometheus: str, kube: sandbox_kube.KubeServer, cluster: str
) -> tuple[int, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "OPENCOST_URL": opencost,
        "PROMETHEUS_URL": prometheus,
        "GPU_FIGURES": "prometheus",
        "KUBE_API_URL": kube.url,
        "CLUSTER_ID": cluster,
        "GPU_BASIS": "usage",
    }
    done = run_finops("collect", "--from", FROM, "--to", TO, env=env)
    return done.returncode, done.stderr


def gpu_costs(db: Database, cluster: str) -> dict[Any, dict[str, int]]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT hour, coalesce(pod, name) AS who, gpu_cost_micros FROM provider_allocations"
            " WHERE cluster = %s AND (gpu_cost_micros <> 0 OR name LIKE '__idle__/gpu:%%')",
            (cluster,),
        ).fetchall()
    out: dict[Any, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r["hour"], {})[r["who"]] = r["gpu_cost_micros"]
    return out


def test_opencost_rows_are_split_by_prometheus_figures_as_computed_by_hand(
    db: Database, database_url: str, prometheus_url: str, kube: sandbox_kube.KubeServer
) -> None:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(scenario(GPUS))) as opencost:
        code, stderr = collect(database_url, opencost.url, prometheus_url, kube, "gpu-figures")
    assert code == 0, stderr
    assert "not split" not in stderr, stderr
    costs = gpu_costs(db, "gpu-figures")
    for index in range(2):
        hour = FIRST + timedelta(hours=index)
        expected = {**WHOLE["usage"], **time_sliced(index), **MIG[("usage", "compute")], **HAMI["usage"]}
        assert costs[hour] == expected, hour
        assert sum(costs[hour].values()) == 5 * 2_800_000


def test_a_gpu_count_opencost_and_dcgm_disagree_on_is_not_split(
    db: Database, database_url: str, prometheus_url: str, kube: sandbox_kube.KubeServer
) -> None:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(scenario({**GPUS, "gpu-a100": 3}))) as opencost:
        code, stderr = collect(database_url, opencost.url, prometheus_url, kube, "gpu-miscounted")
    assert code == 0, stderr
    assert "node gpu-a100: OpenCost counts 3 GPUs, DCGM saw 2" in stderr
    with db.connection() as conn:
        ledger = conn.execute(
            "SELECT DISTINCT gpu_basis FROM allocation_hours WHERE cluster = 'gpu-miscounted'"
        ).fetchall()
    assert ledger == [{"gpu_basis": None}]
