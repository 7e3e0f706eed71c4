"""We test the chargeback's carbon column end to end: ``finops collect`` from the sandbox OpenCost
of ``test_carbon`` (its docstring has the hand computation of each hour's grams) into a real
PostgreSQL, then ``finops report chargeback`` as JSON, CSV and a table:

- each line's grams are its own plus its share of idle by the policy's ``idle`` option, exactly
  as its money, computed by hand below, and the column adds up to the nodes' and disks' grams;
- stored hours without emissions (an OpenCost without carbon estimates) are named, in the JSON's
  ``carbon`` and on stderr, and a line with no measured hour has no grams (null, an empty CSV
  field), never 0 (the plain cluster alone: every line null).

Three hours of the carbon cluster: checkout 150 g an hour, discovery 129, __unallocated__ 40
(lonely 38 and legacy's unmounted disk 2), idle 137; 456 g an hour, 1368 g in all. Allocated cost
an hour: checkout 0.15 (web and cart 0.075 each), discovery 0.135 (index 0.125 and its 100 GiB
volume 0.01), __unallocated__ 0.0425 (lonely 0.0375 and the unmounted 50 GiB 0.005): 0.3275.

- ``idle: separate``: checkout 450, discovery 387, __unallocated__ 120, the idle line 411.
- ``idle: distribute``: the 411 g of idle by 6000 : 5400 : 1700 (of 13100): 188.244...,
  169.419... and 53.335...; floors 410, the spare gram to the largest remainder (discovery):
  checkout 450 + 188 = 638, discovery 387 + 170 = 557, __unallocated__ 120 + 53 = 173; 1368 g.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e.cli_runner import run_finops
from tests.e2e.test_carbon import HOURS, SCENARIO, collect

SEPARATE = {"checkout": 450, "discovery": 387, "__unallocated__": 120, "platform": 411}
DISTRIBUTE = {"checkout": 638, "discovery": 557, "__unallocated__": 173}


@pytest.fixture(scope="module")
def carbon_opencost() -> Iterator[sandbox_opencost.OpenCostServer]:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(SCENARIO)) as server:
        yield server


def chargeback(database_url: str, policy: Path, *args: str) -> tuple[int, str, str]:
    done = run_finops(
        "report", "chargeback", "--month", "2026-11", "--policy", str(policy), *args, DATABASE_URL=database_url
    )
    return done.returncode, done.stdout, done.stderr


def policy_file(tmp_path: Path, idle: str) -> Path:
    path = tmp_path / f"policy-{idle}.yaml"
    path.write_text(f"currency: USD\nidle: {idle}\nidle_owner: platform\n")
    return path


@pytest.mark.parametrize(("idle", "expected"), [("separate", SEPARATE), ("distribute", DISTRIBUTE)])
def test_each_lines_grams_follow_its_money_and_add_up_to_the_nodes(
    idle: str,
    expected: dict[str, int],
    db: Database,
    database_url: str,
    carbon_opencost: sandbox_opencost.OpenCostServer,
    kube: sandbox_kube.KubeServer,
    tmp_path: Path,
) -> None:
    collect(database_url, carbon_opencost.url, kube, "carbon")
    with db.connection() as conn:
        assets = conn.execute("SELECT sum(grams)::bigint AS grams FROM asset_emissions").fetchone()
    assert assets == {"grams": 456 * HOURS}
    policy = policy_file(tmp_path, idle)

    code, out, err = chargeback(database_url, policy, "--cluster", "carbon", "--format", "json")
    assert code == 0, err
    body = json.loads(out)
    assert {line["owner"]: line["grams_co2e"] for line in body["lines"]} == expected
    kilograms = {line["owner"]: line["kg_co2e"] for line in body["lines"]}
    assert kilograms["checkout"] == f"{expected['checkout'] // 1000}.{expected['checkout'] % 1000:03d}"
    assert body["carbon"] == {
        "total_grams": 1368,
        "total_kg": "1.368",
        "complete": True,
        "clusters": [{"cluster": "carbon", "hours_stored": 3, "hours_with_emissions": 3, "hours_without": None}],
    }
    assert "WARNING: carbon:" not in err  # the coverage warning only: every stored hour has emissions

    code, out, _ = chargeback(database_url, policy, "--cluster", "carbon", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and list(rows[0]) == [
        *("owner", "allocated", "idle", "shared", "total", "share", "currency", "grams_co2e", "kg_co2e")
    ]
    assert {r["owner"]: int(r["grams_co2e"]) for r in rows[:-1]} == expected
    assert (rows[-1]["owner"], rows[-1]["grams_co2e"], rows[-1]["kg_co2e"]) == ("TOTAL", "1368", "1.368")
    assert sum(int(r["grams_co2e"]) for r in rows[:-1]) == 456 * HOURS  # the nodes' and disks' grams

    code, out, _ = chargeback(database_url, policy, "--cluster", "carbon")
    assert code == 0 and "kg CO2e" in out and "1.368" in out


def test_hours_without_emissions_are_named_and_their_lines_have_no_grams(
    db: Database,
    database_url: str,
    carbon_opencost: sandbox_opencost.OpenCostServer,
    opencost: sandbox_opencost.OpenCostServer,
    kube: sandbox_kube.KubeServer,
    tmp_path: Path,
) -> None:
    collect(database_url, carbon_opencost.url, kube, "carbon")
    collect(database_url, opencost.url, kube, "plain")  # the suite's scenario: no carbon estimates (404)
    policy = policy_file(tmp_path, "separate")
    code, out, err = chargeback(database_url, policy, "--format", "json")
    assert code == 0, err
    body = json.loads(out)
    assert body["carbon"]["total_grams"] == 1368 and body["carbon"]["complete"] is False
    assert body["carbon"]["clusters"] == [
        {"cluster": "carbon", "hours_stored": 3, "hours_with_emissions": 3, "hours_without": None},
        {
            "cluster": "plain",
            "hours_stored": 3,
            "hours_with_emissions": 0,
            "hours_without": "2026-11-20T07:00Z..2026-11-20T09:00Z",
        },
    ]
    assert (
        "WARNING: carbon: cluster plain: 3 of 3 stored hours without emissions (2026-11-20T07:00Z..2026-11-20T09:00Z);"
        " grams CO2e cover the hours with emissions only"
    ) in err.splitlines()
    # The plain cluster's teams are the carbon cluster's too: their lines hold the carbon cluster's
    # grams and nothing for the plain one's hours, which are named above, not counted as 0 g.
    assert {line["owner"]: line["grams_co2e"] for line in body["lines"]} == SEPARATE

    code, out, err = chargeback(database_url, policy, "--cluster", "plain", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows and all(r["grams_co2e"] == "" and r["kg_co2e"] == "" for r in rows)
    # No hour of the report has emissions (carbon is not in use there): the column is empty, not
    # partial, and no warning is printed on every chargeback of a cluster without carbon.
    assert "WARNING: carbon" not in err
