"""We test the FOCUS export's GPU and carbon columns end to end: ``finops collect`` from the sandbox
OpenCost worlds of ``test_gpu_chargeback`` and ``test_carbon`` (their docstrings compute each hour
by hand) into a real PostgreSQL, then ``finops export focus`` in 1.3 and 1.2:

- ``x_GpuHours`` on each namespace's rows is its billed GPU-hours, and each GPU model's idle has rows
  of its own (``x_GpuModel``) with its cost and GPU-hours: two hours under ``GPU_BASIS=request``,
  ml 2 GPU-hours, infer 1.7, idle A100 6.00 and 2 GPU-hours, idle T4 0.18 and 0.3: the rows add up
  to the GPUs' 13.20 and 6 GPU-hours;
- ``x_CarbonGramsCO2e`` on each namespace's rows is its grams (three hours: shop 450, search 387,
  legacy 120), the idle's on the idle rows (411), and the column adds up to the nodes' and disks'
  1368 g, whether idle is kept apart or distributed (its grams then follow its money's rows);
- the files still conform to FOCUS (``tests/focus_conformance.py``) and pass the FinOps
  Foundation's validator.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e import test_carbon, test_gpu_chargeback
from tests.e2e.cli_runner import run_finops
from tests.focus_conformance import check_rows
from tests.focus_validator import failed_rules

A100, T4 = test_gpu_chargeback.A100, test_gpu_chargeback.T4


@pytest.fixture(scope="module")
def worlds() -> Iterator[tuple[sandbox_opencost.OpenCostServer, sandbox_opencost.OpenCostServer]]:
    with (
        sandbox_opencost.serve(sandbox_opencost.parse_scenario(test_gpu_chargeback.SCENARIO)) as gpus,
        sandbox_opencost.serve(sandbox_opencost.parse_scenario(test_carbon.SCENARIO)) as carbon,
    ):
        yield gpus, carbon


def export(database_url: str, tmp_path: Path, idle: str, version: str) -> list[dict[str, str]]:
    policy = tmp_path / f"policy-{idle}.yaml"
    policy.write_text(f"currency: USD\nidle: {idle}\nidle_owner: platform\n")
    target = tmp_path / f"focus-{idle}-{version}.csv"
    done = run_finops(
        "export", "focus", "--month", "2026-11", "--policy", str(policy), "--to", str(target),
        "--focus-version", version, DATABASE_URL=database_url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.splitlines()[0].split(",")
    assert check_rows(header, rows, version) == []
    return rows


def total(rows: list[dict[str, str]], column: str, **where: str) -> Decimal:
    mine = [r for r in rows if all(r[k] == v for k, v in where.items())]
    return sum((Decimal(r[column]) for r in mine if r[column]), Decimal(0))


@pytest.mark.parametrize("version", ["1.3", "1.2"])
def test_gpu_hours_gpu_idle_and_grams_are_the_hand_figures_and_add_up(
    version: str,
    db: Database,
    database_url: str,
    worlds: tuple[sandbox_opencost.OpenCostServer, sandbox_opencost.OpenCostServer],
    kube: sandbox_kube.KubeServer,
    tmp_path: Path,
) -> None:
    gpus, carbon = worlds
    test_gpu_chargeback.collect(database_url, gpus.url, kube, "gpus-focus", "request")
    test_carbon.collect(database_url, carbon.url, kube, "carbon-focus")
    rows = export(database_url, tmp_path, "separate", version)
    resource = "AllocatedResourceId" if version == "1.3" else "ResourceId"

    assert total(rows, "x_GpuHours", **{resource: "gpus-focus/ml"}) == 2
    assert total(rows, "x_GpuHours", **{resource: "gpus-focus/infer"}) == Decimal("1.7")
    assert total(rows, "x_GpuHours", x_GpuModel=A100) == 2 and total(rows, "BilledCost", x_GpuModel=A100) == 6
    assert total(rows, "x_GpuHours", x_GpuModel=T4) == Decimal("0.3")
    assert total(rows, "BilledCost", x_GpuModel=T4) == Decimal("0.18")
    assert total(rows, "x_GpuHours") == 6  # three GPUs for two hours
    assert {r["x_LineKind"] for r in rows if r["x_GpuModel"]} == {"idle"}

    grams: dict[str, int] = defaultdict(int)
    for r in rows:
        if r["x_CarbonGramsCO2e"]:
            grams["idle" if r["x_LineKind"] == "idle" else r[resource]] += int(r["x_CarbonGramsCO2e"])
    assert dict(grams) == {
        "carbon-focus/shop": 450,
        "carbon-focus/search": 387,
        "carbon-focus/legacy": 120,
        "idle": 411,
    }
    with db.connection() as conn:
        stored = conn.execute("SELECT sum(grams)::bigint AS grams FROM asset_emissions").fetchone()
    assert sum(grams.values()) == stored["grams"] == 1368  # the nodes' and disks' grams
    if version == "1.3":
        assert failed_rules(tmp_path / "focus-separate-1.3.csv", tmp_path) == []


def test_distributed_idle_keeps_its_grams_and_gpu_hours_on_its_rows(
    db: Database,
    database_url: str,
    worlds: tuple[sandbox_opencost.OpenCostServer, sandbox_opencost.OpenCostServer],
    kube: sandbox_kube.KubeServer,
    tmp_path: Path,
) -> None:
    gpus, carbon = worlds
    test_gpu_chargeback.collect(database_url, gpus.url, kube, "gpus-focus", "request")
    test_carbon.collect(database_url, carbon.url, kube, "carbon-focus")
    rows = export(database_url, tmp_path, "distribute", "1.3")
    assert sum(int(r["x_CarbonGramsCO2e"]) for r in rows if r["x_CarbonGramsCO2e"]) == 1368
    assert total(rows, "x_GpuHours") == 6
    idle = [r for r in rows if r["AllocatedMethodId"] == "idle-proportional" and r["x_GpuModel"] == A100]
    assert idle and {r["x_Owner"] for r in idle} == {"research", "serving"}  # the A100's idle, to the GPU teams
    assert sum(Decimal(r["x_GpuHours"]) for r in idle) == 2
    assert failed_rules(tmp_path / "focus-distribute-1.3.csv", tmp_path) == []
