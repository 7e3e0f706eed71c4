"""We test these aspects of the GPU split over the Prometheus source, end to end: ``finops collect``
with ``ALLOCATION_SOURCE=prometheus`` from a real Prometheus serving ``sandbox.prometheus.gpu_world``
(kube-state-metrics and DCGM series) into a real PostgreSQL, priced by a PriceBook at 2.80 per
GPU-hour:

- every GPU row's cost is its share of its GPU computed by hand below, to the micro, for the four
  ways of sharing (a whole A100, a time-sliced T4, MIG slices of an H100, HAMi fractions of an
  L4), under the ``usage`` and ``max`` bases and both MIG rules;
- the GPUs' cost is split whole: rows plus one idle row per model add up to 5 GPUs x 2.80, the
  A100 nobody used included (DCGM sees it; kube-state-metrics alone would not).

The world (``gpu_world``'s docstring), each GPU seen the whole hour, so each costs 2,800,000 micros:

- A100 x 2, one pool of whole GPUs: ``train`` requested 1 (of 2) and used 0.3.
  ``max``: 1/2 of 5,600,000 = 2,800,000, idle 2,800,000.
  ``usage``: 0.15 of 5,600,000 = 840,000, idle 4,760,000.
- T4, time-sliced, split by use whatever the basis: asr 0.4, ocr 0.2, tts 0.1, but tts runs from
  minute 30 of the first hour: 0.05 then 0.1. Hour 0: 1,120,000 / 560,000 / 140,000, idle 980,000;
  hour 1: tts 280,000, idle 840,000.
- H100, MIG 1g.10gb (used 0.5 of its slice), 2g.20gb (0.25), 3g.40gb (0.75).
  By compute (of 7): ``max`` bills the slices, 1/7, 2/7, 3/7: 400,000 / 800,000 / 1,200,000, idle
  400,000; ``usage`` bills 1/14, 1/14, 9/28: 200,000 / 200,000 / 900,000, idle 1,500,000.
  By memory (10 GB of 80, of 8), ``usage``: 1/16, 1/16, 3/8: 175,000 / 175,000 / 1,050,000, idle
  1,400,000.
- L4, HAMi: quarter (gpucores 25, used 0.2), half (50, 0.35), mem (gpumem 5632 of 22528 MiB: 0.25,
  used 0.05). ``max``: 700,000 / 1,400,000 / 700,000, idle 0; ``usage``: 560,000 / 980,000 /
  140,000, idle 1,120,000.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from finops.hours import truncate_to_hour
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox.prometheus import gpu_world
from tests.e2e.cli_runner import run_finops
from tests.prometheus import real_prometheus

FIRST = truncate_to_hour(datetime.now(UTC)) - timedelta(hours=4)
WORLD = gpu_world(FIRST, hours=2)
FROM, TO = FIRST.isoformat(), (FIRST + timedelta(hours=2)).isoformat()
A100, T4, H100, L4 = "NVIDIA A100-SXM4-80GB", "Tesla T4", "NVIDIA H100 80GB HBM3", "NVIDIA L4"
PRICEBOOK = {
    "apiVersion": "finops.stakater.com/v1alpha1",
    "kind": "PriceBook",
    "metadata": {"name": "gpus", "namespace": "finops", "labels": {"finops.stakater.com/active": "true"}},
    "spec": {
        "currency": "USD",
        "valuationMode": "currency",
        "rates": {"cpuHour": "0.04", "ramGbHour": "0.005", "gpuHour": "2.80"},
    },
}


def idle(model: str) -> str:
    return f"__idle__/gpu:{model}"


def time_sliced(hour: int) -> dict[str, int]:
    if hour == 0:
        return {"asr-0": 1_120_000, "ocr-0": 560_000, "tts-0": 140_000, idle(T4): 980_000}
    return {"asr-0": 1_120_000, "ocr-0": 560_000, "tts-0": 280_000, idle(T4): 840_000}


SMALL, MEDIUM, LARGE = "mig-small-0", "mig-medium-0", "mig-large-0"
MIG = {
    ("max", "compute"): {SMALL: 400_000, MEDIUM: 800_000, LARGE: 1_200_000, idle(H100): 400_000},
    ("usage", "compute"): {SMALL: 200_000, MEDIUM: 200_000, LARGE: 900_000, idle(H100): 1_500_000},
    ("usage", "memory"): {SMALL: 175_000, MEDIUM: 175_000, LARGE: 1_050_000, idle(H100): 1_400_000},
}
WHOLE = {"max": {"train-0": 2_800_000, idle(A100): 2_800_000}, "usage": {"train-0": 840_000, idle(A100): 4_760_000}}
HAMI = {
    "max": {"nb-quarter-0": 700_000, "nb-half-0": 1_400_000, "nb-mem-0": 700_000, idle(L4): 0},
    "usage": {"nb-quarter-0": 560_000, "nb-half-0": 980_000, "nb-mem-0": 140_000, idle(L4): 1_120_000},
}


@pytest.fixture(scope="module")
def prometheus_url() -> Iterator[str]:
    with real_prometheus(WORLD) as url:
        yield url


@pytest.fixture(scope="module")
def gpu_kube() -> Iterator[sandbox_kube.KubeServer]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "finops"}}
    with sandbox_kube.serve(objects=[namespace, PRICEBOOK]) as kube:
        yield kube


@pytest.mark.parametrize(("basis", "mig_by"), [("max", "compute"), ("usage", "compute"), ("usage", "memory")])
def test_each_sharing_mode_pays_its_share_computed_by_hand(
    basis: str, mig_by: str, db: Database, database_url: str, prometheus_url: str, gpu_kube: sandbox_kube.KubeServer
) -> None:
    cluster = f"prom-gpus-{basis}-{mig_by}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "ALLOCATION_SOURCE": "prometheus",
        "PROMETHEUS_URL": prometheus_url,
        "KUBE_API_URL": gpu_kube.url,
        "CLUSTER_ID": cluster,
        "GPU_BASIS": basis,
        "GPU_MIG_BY": mig_by,
    }
    done = run_finops("collect", "--from", FROM, "--to", TO, env=env)
    assert done.returncode == 0, done.stderr
    assert "not split" not in done.stderr, done.stderr
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT hour, coalesce(pod, name) AS who, gpu_cost_micros FROM provider_allocations"
            " WHERE cluster = %s AND (gpu_cost_micros <> 0 OR name LIKE '__idle__/gpu:%%')",
            (cluster,),
        ).fetchall()
        ledger = conn.execute(
            "SELECT DISTINCT gpu_basis, gpu_mig_by FROM allocation_hours WHERE cluster = %s", (cluster,)
        ).fetchall()
    assert ledger == [{"gpu_basis": basis, "gpu_mig_by": mig_by}]
    for index in range(2):
        hour = FIRST + timedelta(hours=index)
        got: dict[str, Any] = {r["who"]: r["gpu_cost_micros"] for r in rows if r["hour"] == hour}
        expected = {**WHOLE[basis], **time_sliced(index), **MIG[(basis, mig_by)], **HAMI[basis]}
        assert got == expected, hour
        assert sum(got.values()) == 5 * 2_800_000
