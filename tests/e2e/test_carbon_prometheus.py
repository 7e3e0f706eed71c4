"""We test these aspects of emissions from the operator's emission table with the Prometheus source,
end to end: ``finops collect`` with ``ALLOCATION_SOURCE=prometheus`` and ``CARBON_EMISSION_TABLE``
over a real Prometheus (Debian's, its TSDB built from the small world below), pricing from the
sandbox Kubernetes API's PriceBook, into a real PostgreSQL; then ``finops report carbon``:

- each node's grams are its factor's grams per hour x its minutes / 60, rounded once, stored with
  the table's source and the node's region label; a node added mid-hour counts its minutes;
- the first matching line applies: ``node-b`` is an m5.xlarge but its ``pool=batch`` line is first;
- each node's grams are split by the rows' cost on it and its idle (capacity cost minus the rows),
  and the report's lines are the grams computed by hand below, adding up to the nodes' exactly;
- a node no line matches leaves the hours without emissions (named by the report, never 0 g), with
  a warning naming the node and its instance type; a malformed table stops the command naming the
  variable and the entry's field.

The world (prices: 0.05 a core-hour, 0.0125 a GiB-hour; table: ``pool=batch`` 45.5 g/h, then
``m5.xlarge`` 120 g/h), two hours:

- node-a (m5.xlarge, eu-west-1): 4 cores + 8 GiB = 0.30 an hour, 120 g. ``shop/web`` (checkout)
  1 core + 2 GiB = 0.075, ``search/index`` (discovery) 2 + 2 = 0.125, idle 0.10: 30 / 50 / 40.
- node-b (m5.xlarge, pool=batch, no region label), added at minute 20 with ``legacy/lonely`` (no
  owner, 0.5 core + 1 GiB): hour 1, 40 minutes: 45.5 x 40 / 60 = 30.33 -> 30 g over lonely 0.025
  and idle 0.075: 7.5 and 22.5, the tie's gram to the earlier line: 8 / 22. Hour 2: 45.5 -> 46 g
  (half-even) over 0.0375 and 0.1125: 11.5 and 34.5: 12 / 34.

Per hour: 150 g (120 + 30), then 166 g (120 + 46). Over both: checkout 60, discovery 100,
__unallocated__ 20, __idle__ 136: 316 g.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from finops.hours import truncate_to_hour
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox.prometheus import GIB, MIB, World
from sandbox.prometheus.world import Container, Node, Pod
from tests.e2e.cli_runner import Outcome, one_line_error, run_finops
from tests.prometheus import real_prometheus

FIRST = truncate_to_hour(datetime.now(UTC)) - timedelta(hours=4)
HOURS = 2
FROM, TO = FIRST.isoformat(), (FIRST + timedelta(hours=HOURS)).isoformat()
WORLD = World(
    first_hour=FIRST,
    hours=HOURS,
    nodes=(
        Node(
            "node-a",
            4,
            8 * GIB,
            labels=(("node.kubernetes.io/instance-type", "m5.xlarge"), ("topology.kubernetes.io/region", "eu-west-1")),
        ),
        Node(
            "node-b",
            2,
            4 * GIB,
            labels=(("node.kubernetes.io/instance-type", "m5.xlarge"), ("pool", "batch")),
            start=20,
        ),
    ),
    namespaces={"shop": {"team": "checkout"}, "search": {"team": "discovery"}, "legacy": {}},
    pods=(
        Pod("shop", "web-0", "node-a", (Container("app", 1, 0.5, 2 * GIB, GIB),), "StatefulSet", "web"),
        Pod("search", "index-0", "node-a", (Container("engine", 2, 1, 2 * GIB, GIB),), "StatefulSet", "index"),
        Pod("legacy", "lonely", "node-b", (Container("main", 0.5, 0.125, GIB, 256 * MIB),), start=20),
    ),
)
SOURCE = "Example grid factors 2026 (test)"
TABLE = f"""\
source: {SOURCE}
nodes:
  - label: pool=batch
    gramsPerHour: "45.5"
  - instanceType: m5.xlarge
    gramsPerHour: 120
"""
PRICEBOOK = {
    "apiVersion": "finops.stakater.com/v1alpha1",
    "kind": "PriceBook",
    "metadata": {"name": "standard", "namespace": "finops", "labels": {"finops.stakater.com/active": "true"}},
    "spec": {
        "currency": "USD",
        "valuationMode": "currency",
        "rates": {"cpuHour": "0.05", "ramGbHour": "0.0125", "gpuHour": "0", "pvGbHour": "0", "lbHour": "0"},
    },
}
TOTAL = {"checkout": 60, "discovery": 100, "__unallocated__": 20, "__idle__": 136}


@pytest.fixture(scope="module")
def prometheus_url() -> Iterator[str]:
    with real_prometheus(WORLD) as url:
        yield url


@pytest.fixture(scope="module")
def pricebook_kube() -> Iterator[sandbox_kube.KubeServer]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "finops"}}
    with sandbox_kube.serve(objects=[namespace, PRICEBOOK]) as kube:
        yield kube


def collect(database_url: str, prometheus: str, kube: sandbox_kube.KubeServer, cluster: str, table: Path) -> Outcome:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "ALLOCATION_SOURCE": "prometheus",
        "PROMETHEUS_URL": prometheus,
        "KUBE_API_URL": kube.url,
        "CLUSTER_ID": cluster,
        "CARBON_EMISSION_TABLE": str(table),
    }
    return run_finops("collect", "--from", FROM, "--to", TO, env=env)


def report(database_url: str, cluster: str, *args: str) -> dict[str, Any]:
    done = run_finops(
        "report", "carbon", "--from", FROM, "--to", TO, "--cluster", cluster, *args, DATABASE_URL=database_url
    )
    assert done.returncode == 0, done.stderr
    body: dict[str, Any] = json.loads(done.stdout) if "json" in args else {"text": done.stdout}
    return body


def test_the_report_is_the_grams_computed_by_hand_from_the_table(
    db: Database, database_url: str, prometheus_url: str, pricebook_kube: sandbox_kube.KubeServer, tmp_path: Path
) -> None:
    table = tmp_path / "emission-table.yaml"
    table.write_text(TABLE)
    done = collect(database_url, prometheus_url, pricebook_kube, "carbon-prom", table)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"written={HOURS}, skipped=0, empty=0, lost=0"
    with db.connection() as conn:
        assets = conn.execute(
            "SELECT hour, name, grams, factor_source, region FROM asset_emissions WHERE cluster = 'carbon-prom'"
            " ORDER BY hour, name"
        ).fetchall()
        hours = conn.execute(
            "SELECT e.grams, e.factor_source, e.asset_count, (SELECT sum(grams) FROM allocation_emissions a"
            " WHERE a.cluster = e.cluster AND a.hour = e.hour) AS rows"
            " FROM emission_hours e WHERE cluster = 'carbon-prom' ORDER BY hour"
        ).fetchall()
        node_b = conn.execute(
            "SELECT hour, name, grams FROM allocation_emissions WHERE cluster = 'carbon-prom' AND node = 'node-b'"
            " ORDER BY hour, name"
        ).fetchall()
    second = FIRST + timedelta(hours=1)
    assert [(a["hour"], a["name"], a["grams"], a["factor_source"], a["region"]) for a in assets] == [
        (FIRST, "node-a", 120, SOURCE, "eu-west-1"),
        (FIRST, "node-b", 30, SOURCE, None),
        (second, "node-a", 120, SOURCE, "eu-west-1"),
        (second, "node-b", 46, SOURCE, None),
    ]
    assert [(h["grams"], h["factor_source"], h["asset_count"], h["rows"]) for h in hours] == [
        (150, SOURCE, 2, 150),
        (166, SOURCE, 2, 166),
    ]
    lonely = "legacy/__unallocated__/__unallocated__/lonely/main"
    assert [(r["hour"], r["name"], r["grams"]) for r in node_b] == [
        (FIRST, "__idle__", 22),
        (FIRST, lonely, 8),
        (second, "__idle__", 34),
        (second, lonely, 12),
    ]

    body = report(database_url, "carbon-prom", "--format", "json")
    assert {line["team"]: line["grams"] for line in body["lines"]} == TOTAL
    assert body["total_grams"] == body["assets_grams"] == 316
    assert body["emissions"] == [
        {"cluster": "carbon-prom", "hours_stored": HOURS, "hours_with_emissions": HOURS, "hours_without": None}
    ]
    assert {(f["source"], f["region"], f["grams"]) for f in body["factors"]} == {
        (SOURCE, None, 76),
        (SOURCE, "eu-west-1", 240),
    }
    by_namespace = report(database_url, "carbon-prom", "--by", "namespace", "--format", "json")
    assert {line["namespace"]: line["grams"] for line in by_namespace["lines"]} == {
        "shop": 60,
        "search": 100,
        "legacy": 20,
        "__idle__": 136,
    }
    text = report(database_url, "carbon-prom")["text"]
    assert f"nodes: {SOURCE}, eu-west-1" in text and "hours with emissions 2 of 2 stored" in text


def test_a_node_without_a_factor_leaves_the_hours_without_emissions(
    db: Database, database_url: str, prometheus_url: str, pricebook_kube: sandbox_kube.KubeServer, tmp_path: Path
) -> None:
    table = tmp_path / "emission-table.yaml"
    table.write_text(TABLE.replace("instanceType: m5.xlarge", "instanceType: m6i.large"))
    done = collect(database_url, prometheus_url, pricebook_kube, "carbon-gap", table)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"written={HOURS}, skipped=0, empty=0, lost=0"
    warned = [line for line in done.stderr.splitlines() if "CARBON_EMISSION_TABLE" in line]
    assert warned == [
        f"finops: warning: no factor of CARBON_EMISSION_TABLE matches node-a (instance type m5.xlarge): "
        f"hour {hour:%Y-%m-%dT%H:%MZ} stored without emissions"
        for hour in (FIRST, FIRST + timedelta(hours=1))
    ]
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM emission_hours WHERE cluster = 'carbon-gap'").fetchone() == {
            "n": 0
        }
    body = report(database_url, "carbon-gap", "--format", "json")
    assert body["lines"] == [] and body["total_grams"] == 0
    last = FIRST + timedelta(hours=1)
    assert body["emissions"] == [
        {
            "cluster": "carbon-gap",
            "hours_stored": HOURS,
            "hours_with_emissions": 0,
            "hours_without": f"{FIRST:%Y-%m-%dT%H:%MZ}..{last:%Y-%m-%dT%H:%MZ}",
        }
    ]

    table.write_text(TABLE.replace('gramsPerHour: "45.5"', "gramsPerHour: 45.5"))
    refused = collect(database_url, prometheus_url, pricebook_kube, "carbon-bad", table)
    assert refused.returncode != 0
    assert "CARBON_EMISSION_TABLE" in one_line_error(refused)
    assert "nodes[0].gramsPerHour: 45.5 is a float" in refused.stderr
