"""We test these aspects of the GPU split, end to end: ``finops collect`` from a sandbox OpenCost
whose pods report ``gpuAllocation`` into a real PostgreSQL, under each ``GPU_BASIS``:

- each GPU row's cost is its share of its physical GPU computed by hand below, to the micro;
- each GPU row's GPU-hours are its part of its GPU's hour, and with the idle ones add up to the
  GPUs' hours;
- the GPUs nobody used are one idle row per model (``__idle__/gpu:<model>``) with their idle
  GPU-hours, and OpenCost's ``__idle__`` row keeps no GPU cost;
- every hour's GPU cost is what its GPUs cost (the node assets), to the micro, whatever the basis;
- the ledger records the basis the hour was split by; a replay writes identical rows.

- on the bill (``--basis billed``), each GPU node's bill line is split by the same shares: every
  row on the node and the node's idle scale by the node's bill over its estimate, to the cent.

The cluster, per hour (prices chosen so every share is exact; CPU and memory cost nothing):

- ``gpu-a100``: 2 x NVIDIA A100-SXM4-80GB at 3.00 an hour (6.00). ``train`` (research) holds one
  whole GPU and keeps it 30 % busy; the other GPU runs nothing. The two are one pool of whole GPUs:
  ``train`` requested 1/2 of it and used 0.3/2.

  - ``request`` and ``max``: train 3.00; idle A100 3.00 and 1 GPU-hour;
  - ``usage``: train 6.00 x 0.15 = 0.90; idle A100 5.10 and 1.7 GPU-hours.

- ``gpu-t4``: 1 x NVIDIA T4 at 0.60 an hour, time-sliced among three ``infer`` pods (serving) at
  50 %, 25 % and 10 % engine activity. OpenCost bills each a whole GPU (1.80 for a 0.60 GPU, and
  a negative idle); here it is split by measured use whatever the basis: 0.30, 0.15 and 0.06;
  idle T4 0.09 and 0.15 GPU-hours.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from infra.postgres import Database, apply_migrations, connect
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.postgres import scratch_database
from tests.bills import BillLine, focus_csv
from tests.e2e.cli_runner import run_finops

HOURS = 2
FROM, TO = "2026-11-20T07:00:00Z", "2026-11-20T09:00:00Z"
A100, T4 = "NVIDIA A100-SXM4-80GB", "NVIDIA T4"


def _pod(namespace: str, name: str, node: str, busy: str) -> dict[str, Any]:
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


FREE = {"cpuHourly": "0", "ramGiBHourly": "0"}  # the nodes' CPU and memory cost nothing: GPUs only
SCENARIO = {
    "cluster": "gpus",
    "nodes": [
        {"name": "gpu-a100", "cpuCores": 8, "ramGiB": 32, "gpus": 2, "gpuHourly": "3.00", "gpuModel": A100, **FREE},
        {
            "name": "gpu-t4",
            "cpuCores": 4,
            "ramGiB": 16,
            "gpus": 1,
            "gpuHourly": "0.60",
            "gpuModel": T4,
            "gpuSharing": "time-sliced",
            **FREE,
        },
    ],
    "namespaces": [{"name": "ml", "labels": {"team": "research"}}, {"name": "infer", "labels": {"team": "serving"}}],
    "workloads": [
        _pod("ml", "train", "gpu-a100", "0.3"),
        _pod("infer", "infer-a", "gpu-t4", "0.5"),
        _pod("infer", "infer-b", "gpu-t4", "0.25"),
        _pod("infer", "infer-c", "gpu-t4", "0.1"),
    ],
}
IDLE_A100, IDLE_T4 = f"__idle__/gpu:{A100}", f"__idle__/gpu:{T4}"
TIME_SLICED = {"infer-a": 300_000, "infer-b": 150_000, "infer-c": 60_000, IDLE_T4: 90_000}
BY_BASIS = {
    "request": {"train": 3_000_000, IDLE_A100: 3_000_000, **TIME_SLICED},
    "max": {"train": 3_000_000, IDLE_A100: 3_000_000, **TIME_SLICED},
    "usage": {"train": 900_000, IDLE_A100: 5_100_000, **TIME_SLICED},
}
IDLE_HOURS = {"request": Decimal(1), "max": Decimal(1), "usage": Decimal("1.7")}
SLICED_HOURS = {"infer-a": Decimal("0.5"), "infer-b": Decimal("0.25"), "infer-c": Decimal("0.1")}
TRAIN_HOURS = {"request": Decimal(1), "max": Decimal(1), "usage": Decimal("0.3")}


@pytest.fixture(scope="module")
def gpu_opencost() -> Iterator[sandbox_opencost.OpenCostServer]:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(SCENARIO)) as server:
        yield server


@dataclass
class Collected:
    """The module's own database, and the cluster collected under each basis, each collected once
    (by the first test that asks for it): the tests read it, none writes to it but the replay."""

    dsn: str
    db: Database
    url: str
    kube: sandbox_kube.KubeServer
    clusters: set[str] = field(default_factory=set)

    def cluster(self, basis: str) -> str:
        cluster = f"gpus-{basis}"
        if cluster not in self.clusters:
            collect(self.dsn, self.url, self.kube, cluster, basis)
            self.clusters.add(cluster)
        return cluster


@pytest.fixture(scope="module")
def collected(
    pg_server: str, gpu_opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> Iterator[Collected]:
    with scratch_database(pg_server, prefix="finops_gpus") as dsn:
        db = connect(dsn)
        try:
            apply_migrations(db)
            yield Collected(dsn, db, gpu_opencost.url, kube)
        finally:
            db.close()


def collect(database_url: str, opencost_url: str, kube: sandbox_kube.KubeServer, cluster: str, basis: str) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "OPENCOST_URL": opencost_url,
        "KUBE_API_URL": kube.url,
        "CLUSTER_ID": cluster,
        "GPU_BASIS": basis,
    }
    done = run_finops("collect", "--from", FROM, "--to", TO, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"written={HOURS}, skipped=0, empty=0, lost=0"


def gpu_rows(db: Database, cluster: str) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT hour, coalesce(pod, name) AS who, entry_kind, gpu_cost_micros, gpu_hours, total_cost_micros,"
            " cpu_cost_micros, ram_cost_micros FROM provider_allocations WHERE cluster = %s"
            " ORDER BY hour, name",
            (cluster,),
        ).fetchall()


@pytest.mark.parametrize("basis", ["request", "usage", "max"])
def test_each_gpu_row_pays_its_share_computed_by_hand(basis: str, collected: Collected) -> None:
    db, cluster = collected.db, collected.cluster(basis)
    rows = gpu_rows(db, cluster)
    hours = sorted({r["hour"] for r in rows})
    assert len(hours) == HOURS
    for hour in hours:
        mine = [r for r in rows if r["hour"] == hour]
        gpu = {r["who"]: r["gpu_cost_micros"] for r in mine if r["gpu_cost_micros"]}
        assert gpu == BY_BASIS[basis], (basis, hour)
        assert sum(r["gpu_cost_micros"] or 0 for r in mine) == 6_600_000  # the GPUs' cost, exactly
        [idle] = [r for r in mine if r["who"] == "__idle__"]
        assert idle["gpu_cost_micros"] == 0 and idle["gpu_hours"] == 0
        gpu_hours = {r["who"]: r["gpu_hours"] for r in mine if r["gpu_cost_micros"]}
        assert gpu_hours == {  # billed GPU-hours: each row's part of its GPU's hour
            "train": TRAIN_HOURS[basis],
            **SLICED_HOURS,
            IDLE_A100: IDLE_HOURS[basis],
            IDLE_T4: Decimal("0.15"),
        }
        assert sum(gpu_hours.values()) == 3  # three GPUs for an hour
        for r in mine:  # a row's total moved with its GPU cost
            if r["entry_kind"] == "workload":
                assert r["total_cost_micros"] == r["cpu_cost_micros"] + r["ram_cost_micros"] + r["gpu_cost_micros"]
    with db.connection() as conn:
        ledger = conn.execute(
            "SELECT DISTINCT gpu_basis, gpu_mig_by FROM allocation_hours WHERE cluster = %s", (cluster,)
        ).fetchall()
    assert ledger == [{"gpu_basis": basis, "gpu_mig_by": "compute"}]


def test_a_replay_writes_identical_rows(collected: Collected) -> None:
    db, cluster = collected.db, collected.cluster("usage")
    first = gpu_rows(db, cluster)
    with db.connection() as conn:  # open the hours again, as a run that has not finalized them would
        conn.execute("UPDATE allocation_hours SET state = 'open' WHERE cluster = %s", (cluster,))
    collect(collected.dsn, collected.url, collected.kube, cluster, "usage")
    assert gpu_rows(db, cluster) == first


def test_the_gpu_report_adds_up_and_ranks_by_cost_per_busy_gpu_hour(collected: Collected) -> None:
    """Two hours under ``request``: research holds an A100 (3.00 an hour) 30 % busy, so a busy
    GPU-hour costs it 6.00 / 0.6 = 10.00; serving's pods pay 0.51 an hour for 0.85 busy GPU-hours,
    0.60 each, the T4's price; the idle lines hold the rest: 13.20 in all, for 6 GPU-hours."""
    cluster, database_url = collected.cluster("request"), collected.dsn
    args = ("report", "gpus", "--month", "2026-11", "--cluster", cluster, "--format", "json")
    done = run_finops(*args, DATABASE_URL=database_url)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    lines = [(x["team"], x["kind"], x["gpu_hours"], x["cost"], x["busy_gpu_hours"], x["cost_per_busy_gpu_hour"])
             for x in body["lines"]]  # fmt: skip
    assert lines == [
        ("research", "workload", "2.000", "6.00", "0.600", "10.00"),
        ("serving", "workload", "1.700", "1.02", "1.700", "0.60"),
        (IDLE_A100, "idle", "2.000", "6.00", None, None),
        (IDLE_T4, "idle", "0.300", "0.18", None, None),
    ]
    assert body["totals"] == [{"cluster": cluster, "currency": "USD", "gpu_hours": "6.000", "cost": "13.20"}]
    assert body["bases"] == [{"cluster": cluster, "gpu_basis": "request", "gpu_mig_by": "compute", "hours": 2}]
    done = run_finops(*args, "--by", "workload", "--rank", DATABASE_URL=database_url)
    assert done.returncode == 0, done.stderr
    ranked = [(x["workload"], x["cost_per_busy_gpu_hour"]) for x in json.loads(done.stdout)["lines"]]
    assert ranked[0] == ("ml/train", "10.00")
    assert [per for _, per in ranked[1:]] == ["0.60"] * 3


POLICY = "owner_label: team\nidle: separate\nidle_owner: platform\ncurrency: USD\n"


def test_a_gpu_nodes_bill_line_is_split_by_the_same_shares(collected: Collected, tmp_path: Path) -> None:
    """Under ``request``, the two hours cost 12.00 on the A100 node (train 6.00, idle 6.00) and
    1.20 on the T4 (the pods 1.02, idle 0.18). The bill charges the A100 node 9.60 (0.8 of it)
    and the T4 0.60 (half): research 4.80, serving 0.51, idle 4.80 + 0.09 = 4.89; 10.20 in all."""
    cluster, database_url = collected.cluster("request"), collected.dsn
    start, end = datetime(2026, 11, 20, 7, tzinfo=UTC), datetime(2026, 11, 20, 9, tzinfo=UTC)
    lines = [
        BillLine(start, end, Decimal("9.60"), resource_id="gpu-a100", currency="USD"),
        BillLine(start, end, Decimal("0.60"), resource_id="gpu-t4", currency="USD"),
    ]
    bill, policy = tmp_path / "bill.csv", tmp_path / "policy.yaml"
    bill.write_text(focus_csv(lines))
    policy.write_text(POLICY)
    done = run_finops("import", "cloud", "--from", str(bill), DATABASE_URL=database_url)
    assert done.returncode == 0, done.stderr
    args = ["report", "chargeback", "--month", "2026-11", "--policy", str(policy), "--cluster", cluster]
    done = run_finops(*args, "--basis", "billed", "--format", "json", DATABASE_URL=database_url)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {line["owner"]: line["total"] for line in report["lines"]} == {
        "research": "4.80",
        "serving": "0.51",
        "platform": "4.89",
    }
    assert report["total"] == "10.20"


DISCOUNTED = {
    "cluster": "gpus-discounted",
    "nodes": [SCENARIO["nodes"][0]],
    "namespaces": [{"name": "ml", "labels": {"team": "research"}}],
    "workloads": [{**_pod("ml", "train", "gpu-a100", "0.3"), "costAdjustment": {"gpu": -0.2}}],
}


@pytest.mark.parametrize(("basis", "train", "idle"), [("request", 2_400_000, 3_000_000), ("usage", 720_000, 5_100_000)])
def test_opencosts_gpu_discount_is_scaled_to_the_rows_share(
    basis: str, train: int, idle: int, collected: Collected
) -> None:
    """OpenCost bills train a whole A100 at 3.00 with a 20 % discount (gpuCostAdjustment -0.60).
    Under ``request`` its share is that GPU: 3.00 - 0.60 = 2.40. Under ``usage`` its share is 0.90
    (0.3 of one of the two GPUs), and the discount is 20 % of that: 0.90 - 0.18 = 0.72; the
    unused GPUs are idle at their price. The row's total is its GPU cost (CPU and memory are free)."""
    cluster = f"gpus-discounted-{basis}"
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(DISCOUNTED)) as server:
        collect(collected.dsn, server.url, collected.kube, cluster, basis)
    for hour_rows in _by_hour(gpu_rows(collected.db, cluster)).values():
        got = {r["who"]: (r["gpu_cost_micros"], r["total_cost_micros"]) for r in hour_rows if r["gpu_cost_micros"]}
        assert got == {"train": (train, train), IDLE_A100: (idle, idle)}


def _by_hour(rows: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    hours: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        hours.setdefault(r["hour"], []).append(r)
    assert len(hours) == HOURS
    return hours
