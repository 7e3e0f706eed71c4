"""We test these aspects of emissions beside cost, end to end: ``finops collect`` from a sandbox
OpenCost serving ``/assets/carbon`` into a real PostgreSQL, then ``finops report carbon``:

- each hour stores its nodes' and disks' grams (OpenCost's tonnes x 10^6) and each row's share by
  cost, and the report's lines are the grams computed by hand below, adding up to the nodes' and
  disks' grams exactly, per team, namespace and application, as a table, JSON and CSV;
- an OpenCost without carbon estimates (404) stores the hours without emissions, and the report
  says which stored hours have none rather than reading them as 0 g;
- an answer of ``/assets/carbon`` lacking a node's key of ``/assets`` stores the hours' rows and
  costs without emissions (the ledger does not stall), with a warning naming the missing key;
- ``--from``/``--to`` and ``--month`` are exclusive.

The cluster (prices chosen so every share is exact): node-a 4 cores x 0.05 + 8 GiB x 0.0125 =
0.30 an hour, 300 g CO2e; node-b 2 x 0.05 + 4 x 0.0125 = 0.15, 150 g; two disks, 3 g each.

- node-a: web (checkout) 1 core + 2 GiB = 0.075, index (discovery) 2 + 2 = 0.125, idle 0.10:
  300 g as 75 / 125 / 100.
- node-b: cart (checkout) 0.075, lonely (legacy, no owner) 0.0375, idle 0.0375: 150 g as 75 exact,
  37.5 and 37.5: the tie's gram goes to the earlier (lonely, by namespace order): 38 and 37.
- disks: 6 g by volume cost: index's 100 GiB (0.01) and legacy's unmounted 50 GiB (0.005): 4 and 2.

Per hour: checkout 150, discovery 129, __unallocated__ 40, __idle__ 137: 456 g = 300 + 150 + 6.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e.cli_runner import run_finops

HOURS = 3
FROM, TO = "2026-11-20T07:00:00Z", "2026-11-20T10:00:00Z"
WEB = {
    "namespace": "shop",
    "kind": "Deployment",
    "name": "web",
    "node": "node-a",
    "containers": [{"name": "app", "request": {"cpu": 1, "ramGiB": 2}, "usage": {"cpu": 0.5, "ramGiB": 1}}],
}
SCENARIO = {
    "cluster": "carbon",
    "nodes": [
        {"name": "node-a", "cpuCores": 4, "ramGiB": 8, "cpuHourly": "0.05", "ramGiBHourly": "0.0125"},
        {"name": "node-b", "cpuCores": 2, "ramGiB": 4, "cpuHourly": "0.05", "ramGiBHourly": "0.0125"},
    ],
    "namespaces": [
        {"name": "shop", "labels": {"team": "checkout"}},
        {"name": "search", "labels": {"team": "discovery"}},
        {"name": "legacy", "labels": {}},
    ],
    "storage": {"gbHourly": "0.0001"},
    "workloads": [
        WEB,
        {**WEB, "name": "cart", "node": "node-b"},
        {
            **WEB,
            "namespace": "search",
            "kind": "StatefulSet",
            "name": "index",
            "containers": [{"name": "engine", "request": {"cpu": 2, "ramGiB": 2}, "usage": {"cpu": 1, "ramGiB": 1}}],
            "pvs": [{"name": "index-data", "sizeGiB": 100}],
        },
        {
            **WEB,
            "namespace": "legacy",
            "kind": "Pod",
            "name": "lonely",
            "node": "node-b",
            "containers": [
                {"name": "main", "request": {"cpu": 0.5, "ramGiB": 1}, "usage": {"cpu": 0.1, "ramGiB": 0.2}}
            ],
        },
    ],
    "unmountedPVs": [{"namespace": "legacy", "name": "pvc-old", "sizeGiB": 50}],
    "carbon": {"nodes": {"node-a": "0.0003", "node-b": "0.00015"}, "diskHourly": "0.000003"},
}
PER_HOUR = {"checkout": 150, "discovery": 129, "__unallocated__": 40, "__idle__": 137}


@pytest.fixture(scope="module")
def carbon_opencost() -> Iterator[sandbox_opencost.OpenCostServer]:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(SCENARIO)) as server:
        yield server


def collect(database_url: str, opencost_url: str, kube: sandbox_kube.KubeServer, cluster: str) -> str:
    """Collect the hours; what the command logged."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "OPENCOST_URL": opencost_url,
        "KUBE_API_URL": kube.url,
        "CLUSTER_ID": cluster,
    }
    done = run_finops("collect", "--from", FROM, "--to", TO, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"written={HOURS}, skipped=0, empty=0, lost=0"
    return done.stderr


def report(database_url: str, *args: str) -> tuple[int, str, str]:
    done = run_finops("report", "carbon", "--from", FROM, "--to", TO, *args, DATABASE_URL=database_url)
    return done.returncode, done.stdout, done.stderr


def test_the_report_is_the_grams_computed_by_hand_and_adds_up_to_the_nodes(
    db: Database, database_url: str, carbon_opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> None:
    collect(database_url, carbon_opencost.url, kube, "carbon")
    with db.connection() as conn:
        assets = conn.execute(
            "SELECT kind, name, sum(grams) AS grams, count(*) AS hours, min(factor_source) AS source"
            " FROM asset_emissions WHERE cluster = 'carbon' GROUP BY kind, name ORDER BY kind, name"
        ).fetchall()
        per_hour = conn.execute(
            "SELECT e.hour, e.grams, (SELECT sum(grams) FROM allocation_emissions a"
            " WHERE a.cluster = e.cluster AND a.hour = e.hour) AS rows FROM emission_hours e WHERE cluster = 'carbon'"
        ).fetchall()
    assert [(a["kind"], a["name"], a["grams"], a["hours"], a["source"]) for a in assets] == [
        ("disk", "index-data", 3 * HOURS, HOURS, "opencost"),
        ("disk", "pvc-old", 3 * HOURS, HOURS, "opencost"),
        ("node", "node-a", 300 * HOURS, HOURS, "opencost"),
        ("node", "node-b", 150 * HOURS, HOURS, "opencost"),
    ]
    assert [(h["grams"], h["rows"]) for h in per_hour] == [(456, 456)] * HOURS

    code, out, err = report(database_url, "--cluster", "carbon", "--format", "json")
    assert code == 0, err
    body = json.loads(out)
    assert {line["team"]: line["grams"] for line in body["lines"]} == {k: v * HOURS for k, v in PER_HOUR.items()}
    assert [line["team"] for line in body["lines"]] == ["checkout", "discovery", "__unallocated__", "__idle__"]
    assert body["total_grams"] == body["assets_grams"] == 456 * HOURS
    assert body["total_kg"] == "1.368"
    assert body["emissions"] == [
        {"cluster": "carbon", "hours_stored": HOURS, "hours_with_emissions": HOURS, "hours_without": None}
    ]
    assert {(f["kind"], f["source"], f["grams"]) for f in body["factors"]} == {
        ("disk", "opencost", 6 * HOURS),
        ("node", "opencost", 450 * HOURS),
    }

    code, out, _ = report(database_url, "--cluster", "carbon", "--by", "namespace", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows[0].keys() == {"cluster", "namespace", "grams", "kg_co2e"}
    by_namespace = {r["namespace"]: int(r["grams"]) for r in rows}
    assert by_namespace == {"shop": 150 * HOURS, "search": 129 * HOURS, "legacy": 40 * HOURS, "__idle__": 137 * HOURS}

    code, out, _ = report(database_url, "--cluster", "carbon", "--by", "application", "--format", "json")
    lines = {line["application"]: line["grams"] for line in json.loads(out)["lines"]}
    assert code == 0 and lines == {"__unallocated__": 319 * HOURS, "__idle__": 137 * HOURS}  # no Argo CD record

    code, out, _ = report(database_url, "--cluster", "carbon")
    assert code == 0
    assert out.splitlines()[0] == "Emissions per team, 2026-11-20T07:00:00Z to 2026-11-20T10:00:00Z (kg CO2e)"
    assert "TOTAL" in out and "1368" in out and "1.368" in out
    assert "nodes: opencost" in out and "hours with emissions 3 of 3 stored" in out


def test_hours_without_estimates_are_named_not_counted_as_zero(
    db: Database, database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer
) -> None:
    collect(database_url, opencost.url, kube, "plain")  # the suite's scenario: no carbon section, 404
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM emission_hours").fetchone() == {"n": 0}
        assert conn.execute("SELECT count(*) AS n FROM cluster_assets WHERE cluster = 'plain'").fetchone()["n"] > 0
    code, out, err = report(database_url, "--cluster", "plain", "--format", "json")
    assert code == 0, err
    body = json.loads(out)
    assert body["lines"] == [] and body["total_grams"] == 0
    assert body["emissions"] == [
        {
            "cluster": "plain",
            "hours_stored": HOURS,
            "hours_with_emissions": 0,
            "hours_without": "2026-11-20T07:00Z..2026-11-20T09:00Z",
        }
    ]


def test_an_answer_lacking_an_assets_key_stores_the_hours_without_emissions(
    db: Database, database_url: str, kube: sandbox_kube.KubeServer
) -> None:
    lagging = {**SCENARIO, "cluster": "lagging", "carbon": {**SCENARIO["carbon"], "omit": ["node-b"]}}
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(lagging)) as server:
        logged = collect(database_url, server.url, kube, "lagging")
    assert logged.count("answered /assets/carbon without lagging/Node/node-b of /assets") == HOURS, logged
    with db.connection() as conn:
        emitted = conn.execute("SELECT count(*) AS n FROM emission_hours WHERE cluster = 'lagging'").fetchone()
        stored = conn.execute(
            "SELECT count(DISTINCT hour) AS hours, sum(total_cost_micros) AS micros"
            " FROM provider_allocations WHERE cluster = 'lagging'"
        ).fetchone()
        assets = conn.execute("SELECT count(*) AS n FROM cluster_assets WHERE cluster = 'lagging'").fetchone()
    assert emitted == {"n": 0}
    assert stored == {"hours": HOURS, "micros": 465_000 * HOURS}  # node-a 0.30 + node-b 0.15 + disks 0.015
    assert assets["n"] == 4 * HOURS
    code, out, err = report(database_url, "--cluster", "lagging", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["emissions"] == [
        {
            "cluster": "lagging",
            "hours_stored": HOURS,
            "hours_with_emissions": 0,
            "hours_without": "2026-11-20T07:00Z..2026-11-20T09:00Z",
        }
    ]


def test_a_month_and_a_range_are_exclusive(database_url: str) -> None:
    code, _, err = report(database_url, "--month", "2026-11")
    assert code == 2 and err.strip() == "finops: --from and --to: give both, and not with --month"
