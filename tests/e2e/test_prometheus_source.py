"""We test these aspects of ``collect_allocations`` with ``ALLOCATION_SOURCE=prometheus``, served by
functions-framework over HTTP, against a real Prometheus (Debian's) whose TSDB promtool built from
the generated world of ``sandbox.prometheus.demo_world``, the sandbox Kubernetes API holding the
PriceBook, and a real PostgreSQL:

- the money stored for four hours equals a hand computation from the world's definitions, per
  namespace, per team and for idle, to the cent (and within the per-row rounding, in micros);
  every hour's rows add up exactly to what the nodes' allocatable capacity costs;
- the method's details: the completed Job is billed only while Running, the pod without requests
  on its usage, the sidecar on usage above its request, a claim in its namespace, LoadBalancer
  Services per namespace, the GPU on its request, the ``source`` column on rows and ledger, the
  ledger states (lookback final, pinned hour open);
- a replay writes identical rows;
- no namespace carrying the owner label (kube-state-metrics without
  ``--metric-labels-allowlist``) fails the run with that hint and stores nothing;
- the chargeback report of a Prometheus-sourced period has the same shape as an OpenCost-sourced one;
- ``finops run --once --source prometheus`` (``make run`` without OpenCost) builds and serves its own
  Prometheus over the same generated world, stores Prometheus-sourced rows, prints the per-team
  table of the hand computation to the cent, and stops its Prometheus when it exits.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from finops.hours import truncate_to_hour
from finops.periods import Period
from finops.policy import parse_policy
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox.localstack import Stack, serve_function
from sandbox.prometheus import GIB, MIB, demo_world
from tests.e2e.conftest import Pinger
from tests.logs import LOG_DIR as TEST_LOGS
from tests.prometheus import real_prometheus
from usecases.reports.service import ReportQuery, chargeback

CLUSTER = "prom"
FIRST = truncate_to_hour(datetime.now(UTC)) - timedelta(hours=6)
WORLD = demo_world(FIRST, hours=4)
HOURS = [FIRST + timedelta(hours=n) for n in range(4)]
SCHEDULED = (HOURS[3] + timedelta(minutes=7)).isoformat()
TOKEN = "prom-ping-token"

RATES = {
    "cpuHour": Decimal("0.031611"),
    "ramGbHour": Decimal("0.004237"),
    "gpuHour": Decimal("0.95"),
    "pvGbHour": Decimal("0.00005479452"),
    "lbHour": Decimal("0.025"),
}
PRICEBOOK = {
    "apiVersion": "finops.stakater.com/v1alpha1",
    "kind": "PriceBook",
    "metadata": {"name": "standard", "namespace": "finops", "labels": {"finops.stakater.com/active": "true"}},
    "spec": {"currency": "USD", "valuationMode": "currency", "rates": {k: str(v) for k, v in RATES.items()}},
}

# The hand computation's inputs, read off demo_world's definitions (the test below checks they
# still describe it): per billed container, its namespace, the larger of request and usage in
# cores and GiB, its GPUs, and the minutes it is billed in each of the four hours.
CONTAINERS = [
    ("shop", "0.5", "0.75", 0, (60, 60, 60, 60)),  # web-a app: request 0.5 > usage 0.25; usage 768 MiB > 512
    ("shop", "0.25", "0.0625", 0, (60, 60, 60, 60)),  # web-a proxy: usage 0.25 > request 0.125; 64 MiB > 32
    ("shop", "0.5", "0.5", 0, (0, 30, 60, 20)),  # web-b app, minutes 90..200: its requests
    ("search", "1", "2", 0, (60, 60, 30, 0)),  # indexer-0 stops at minute 150
    ("batch", "1", "1", 0, (30, 0, 0, 0)),  # the Job runs minutes 10..40; Succeeded after: not billed
    ("legacy", "0.375", "0.25", 0, (60, 60, 60, 60)),  # no requests: its usage
    ("ml", "2", "4", 1, (30, 60, 60, 60)),  # trainer from minute 30, one GPU requested
]
CLAIMS = [("search", 10, (60, 60, 60, 60)), ("shop", 5, (0, 60, 60, 60))]  # GiB requested
LOAD_BALANCERS = [("shop", (60, 60, 60, 60)), ("ml", (0, 0, 60, 60))]  # the ClusterIP Service costs nothing
CAPACITY = (Decimal(4 + 8), Decimal(16 + 32), Decimal(1))  # cores, GiB, GPUs of the two nodes
TEAMS = {"shop": "checkout", "search": "discovery", "ml": "research", "batch": "data", "legacy": None}
CENT = Decimal("0.01")


def hand_computed() -> tuple[dict[str, Decimal], Decimal]:
    """Exact money per namespace over the four hours, and idle (capacity minus what was billed)."""
    per: dict[str, Decimal] = dict.fromkeys(TEAMS, Decimal(0))
    compute = Decimal(0)
    for namespace, cores, gib, gpus, minutes in CONTAINERS:
        hours = Decimal(sum(minutes)) / 60
        cost = hours * (Decimal(cores) * RATES["cpuHour"] + Decimal(gib) * RATES["ramGbHour"] + gpus * RATES["gpuHour"])
        per[namespace] += cost
        compute += cost
    for namespace, claimed, minutes in CLAIMS:
        per[namespace] += Decimal(sum(minutes)) / 60 * claimed * RATES["pvGbHour"]
    for namespace, minutes in LOAD_BALANCERS:
        per[namespace] += Decimal(sum(minutes)) / 60 * RATES["lbHour"]
    capacity_cores, capacity_gib, capacity_gpus = CAPACITY
    hourly = capacity_cores * RATES["cpuHour"] + capacity_gib * RATES["ramGbHour"] + capacity_gpus * RATES["gpuHour"]
    return per, 4 * hourly - compute


def cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)


@pytest.fixture(scope="module")
def prometheus_url() -> Iterator[str]:
    with real_prometheus(WORLD) as url:
        yield url


@pytest.fixture(scope="module")
def prom_stack(database_url: str) -> Iterator[Stack]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "finops"}}
    with sandbox_kube.serve(objects=[namespace, PRICEBOOK]) as kube:
        yield Stack(
            database_url=database_url,
            opencost_url="http://127.0.0.1:9",  # never called: the source is Prometheus
            kube_url=kube.url,
            ping_token=TOKEN,
            cluster=CLUSTER,
            log_dir=TEST_LOGS,
        )


@pytest.fixture(scope="module")
def prom_ping(prom_stack: Stack, prometheus_url: str) -> Iterator[Pinger]:
    with serve_function(
        prom_stack,
        "collect_allocations",
        ALLOCATION_SOURCE="prometheus",
        PROMETHEUS_URL=prometheus_url,
        HOURS_LOOKBACK="3",
    ) as url:
        yield Pinger(url)


def collected(ping: Pinger, db: Database) -> dict[str, Any]:
    response = ping({"scheduledTime": SCHEDULED}, token=TOKEN)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["outcome"] == "success", body
    return body


def rows(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT * FROM provider_allocations WHERE cluster = %s ORDER BY hour, namespace, name", (CLUSTER,)
        ).fetchall()


def test_the_hand_computation_describes_the_world() -> None:
    pods = {(p.namespace, c.name, p.name): (p, c) for p in WORLD.pods for c in p.containers}

    def figures(namespace: str, container: str, pod: str) -> tuple[object, ...]:
        c = pods[(namespace, container, pod)][1]
        return (c.cpu_request, c.cpu_usage, c.memory_request, c.memory_usage, c.gpu_request)

    assert figures("shop", "app", "web-7d4b9-a") == (0.5, 0.25, 512 * MIB, 768 * MIB, 0)
    assert figures("shop", "proxy", "web-7d4b9-a") == (0.125, 0.25, 64 * MIB, 32 * MIB, 0)
    assert figures("shop", "app", "web-7d4b9-b") == (0.5, 0.125, 512 * MIB, 256 * MIB, 0)
    assert figures("search", "indexer", "indexer-0") == (1, 0.75, 2 * GIB, 1536 * MIB, 0)
    assert figures("batch", "report", "report-29400000-x7k2p") == (1, 0.5, GIB, 512 * MIB, 0)
    assert figures("ml", "trainer", "trainer-5c6d7-q8w") == (2, 1, 4 * GIB, 3 * GIB, 1)
    assert pods[("search", "indexer", "indexer-0")][0].stop == 150
    assert pods[("ml", "trainer", "trainer-5c6d7-q8w")][0].start == 30
    assert [(s.namespace, s.type, s.start) for s in WORLD.services] == [
        ("shop", "LoadBalancer", -15),
        ("search", "ClusterIP", -15),
        ("ml", "LoadBalancer", 120),
    ]
    job, _ = pods[("batch", "report", "report-29400000-x7k2p")]
    assert (job.start, job.done, job.stop) == (10, 40, None)
    web_b, _ = pods[("shop", "app", "web-7d4b9-b")]
    assert (web_b.start, web_b.stop) == (90, 200)
    _, tool = pods[("legacy", "tool", "tool")]
    assert (tool.cpu_request, tool.memory_request, tool.cpu_usage, tool.memory_usage) == (None, None, 0.375, 256 * MIB)
    assert [(n.cpu_cores, n.memory_bytes // GIB, n.gpus) for n in WORLD.nodes] == [(4, 16, 0), (8, 32, 1)]
    assert [(c.namespace, c.bytes // GIB, c.start) for c in WORLD.claims] == [("search", 10, -15), ("shop", 5, 60)]


def test_the_stored_money_is_the_hand_computation_to_the_cent(prom_ping: Pinger, db: Database) -> None:
    body = collected(prom_ping, db)
    assert body["hours_written"] == 4 and body["pricebook"] == "finops/standard"
    stored = rows(db)
    expected, idle = hand_computed()
    for namespace, exact in expected.items():
        mine = [r for r in stored if r["namespace"] == namespace]
        micros = sum(r["total_cost_micros"] for r in mine)
        # Each row rounds each of its (at most 3) costs once, half-even: within 1.5 micros a row.
        assert abs(Decimal(micros) / 10**6 - exact) <= Decimal("0.0000015") * len(mine), namespace
        assert cents(Decimal(micros) / 10**6) == cents(exact), namespace
        assert {r["team"] for r in mine} == {TEAMS[namespace]}
    idle_rows = [r for r in stored if r["entry_kind"] == "idle"]
    assert len(idle_rows) == 8 and {r["namespace"] for r in idle_rows} == {""}  # CPU and RAM; the T4's
    stored_idle = Decimal(sum(r["total_cost_micros"] for r in idle_rows)) / 10**6
    assert cents(stored_idle) == cents(idle)
    # The GPU is split (DCGM lists it): the trainer holds it from minute 30, so the first hour
    # leaves half of the T4 idle (0.475) and the next three none.
    gpu_idle = sorted((r["hour"], r["gpu_cost_micros"], r["gpu_hours"]) for r in idle_rows if r["name"] != "__idle__")
    assert [(micros, hours) for _, micros, hours in gpu_idle] == [(475_000, Decimal("0.5"))] + [(0, 0)] * 3
    assert all(r["gpu_cost_micros"] == 0 for r in idle_rows if r["name"] == "__idle__")
    # Idle is capacity minus billed to the micro: every hour's compute rows add up to its capacity.
    cores, gib, gpus = CAPACITY
    hourly_capacity = cores * RATES["cpuHour"] + gib * RATES["ramGbHour"] + gpus * RATES["gpuHour"]
    for hour in HOURS:
        compute = sum(
            r["cpu_cost_micros"] + r["ram_cost_micros"] + r["gpu_cost_micros"]
            for r in stored
            if r["hour"] == hour and r["cpu_cost_micros"] is not None
        )
        assert Decimal(compute) / 10**6 == hourly_capacity
    by_team: dict[str | None, Decimal] = {}
    for namespace, exact in expected.items():
        by_team[TEAMS[namespace]] = by_team.get(TEAMS[namespace], Decimal(0)) + exact
    for team, exact in by_team.items():
        micros = sum(r["total_cost_micros"] for r in stored if r["team"] == team and r["entry_kind"] != "idle")
        assert cents(Decimal(micros) / 10**6) == cents(exact), team


def test_the_method_bills_what_the_method_says(prom_ping: Pinger, db: Database) -> None:
    collected(prom_ping, db)
    stored = rows(db)

    def of(namespace: str, container: str) -> list[dict[str, Any]]:
        return [r for r in stored if r["namespace"] == namespace and r["container"] == container]

    job = of("batch", "report")  # Running 30 minutes of the first hour, then Succeeded with its requests
    assert [(r["hour"], r["minutes"], r["cpu_core_hours"]) for r in job] == [(HOURS[0], 30, Decimal("0.5"))]
    assert (job[0]["controller_kind"], job[0]["controller"]) == ("job", "report-29400000")
    tool = of("legacy", "tool")  # no requests: billed on usage, every hour
    assert [(r["cpu_core_request_avg"], r["cpu_core_hours"]) for r in tool] == [(0, Decimal("0.375"))] * 4
    assert {r["ram_byte_hours"] for r in tool} == {Decimal(256 * MIB)} and {r["team"] for r in tool} == {None}
    proxy = of("shop", "proxy")  # usage above the request: the usage
    assert {(r["cpu_core_request_avg"], r["cpu_core_usage_avg"], r["cpu_core_hours"]) for r in proxy} == {
        (Decimal("0.125"), Decimal("0.25"), Decimal("0.25"))
    }
    assert {(r["controller_kind"], r["controller"], r["node"]) for r in proxy} == {("deployment", "web", "node-a")}
    gpu = of("ml", "trainer")
    assert [r["gpu_hours"] for r in gpu] == [Decimal("0.5"), 1, 1, 1]
    assert [r["gpu_cost_micros"] for r in gpu] == [475_000, 950_000, 950_000, 950_000]
    unmounted = {(r["namespace"], r["hour"]): r for r in stored if r["entry_kind"] == "unmounted"}
    assert unmounted[("search", HOURS[0])]["pv_byte_hours"] == 10 * GIB
    assert unmounted[("search", HOURS[0])]["team"] == "discovery"
    assert [unmounted[("shop", h)]["lb_cost_micros"] for h in HOURS] == [25_000] * 4
    assert ("ml", HOURS[1]) not in unmounted and unmounted[("ml", HOURS[2])]["lb_cost_micros"] == 25_000
    assert ("search", HOURS[3]) in unmounted and unmounted[("search", HOURS[3])]["lb_cost_micros"] == 0
    assert {r["source"] for r in stored} == {"prometheus"}
    with db.connection() as conn:
        ledger = conn.execute(
            "SELECT hour, state, source, row_count FROM allocation_hours WHERE cluster = %s ORDER BY hour", (CLUSTER,)
        ).fetchall()
    assert [(r["hour"], r["state"], r["source"]) for r in ledger] == [
        (HOURS[0], "final", "prometheus"),
        (HOURS[1], "final", "prometheus"),
        (HOURS[2], "final", "prometheus"),
        (HOURS[3], "open", "prometheus"),
    ]
    assert sum(r["row_count"] for r in ledger) == len(stored)


def test_a_replay_writes_identical_rows(prom_ping: Pinger, db: Database) -> None:
    collected(prom_ping, db)
    first = [{k: v for k, v in r.items() if k != "collected_at"} for r in rows(db)]
    with db.connection() as conn:  # every hour fetched and replaced again, not only the open one
        conn.execute("UPDATE allocation_hours SET state = 'open' WHERE cluster = %s", (CLUSTER,))
    body = collected(prom_ping, db)
    assert body["hours_written"] == 4
    assert [{k: v for k, v in r.items() if k != "collected_at"} for r in rows(db)] == first


def test_missing_namespace_labels_fail_with_the_allowlist_hint(
    prom_stack: Stack, prometheus_url: str, db: Database
) -> None:
    with serve_function(
        prom_stack,
        "collect_allocations",
        ALLOCATION_SOURCE="prometheus",
        PROMETHEUS_URL=prometheus_url,
        HOURS_LOOKBACK="0",
        OWNER_LABEL="owner",  # no namespace of the world carries it: as if kube-state-metrics dropped it
    ) as url:
        response = httpx.post(
            url, json={"scheduledTime": SCHEDULED}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
    assert response.status_code == 500, response.text
    error = response.json()["error"]
    assert "--metric-labels-allowlist=namespaces=[owner,cost-center]" in error and "\n" not in error
    assert rows(db) == []


POLICY = {
    "owner_label": "team",
    "idle": "separate",
    "idle_owner": "platform",
    "shared": {"namespaces": ["kube-system"], "split": "proportional"},
    "currency": "USD",
}


def shape(value: Any) -> Any:
    """A document's keys, recursively (list items merged; a cluster's name as a key is a
    placeholder): what a consumer of the report reads."""
    if isinstance(value, dict):
        return {("<cluster>" if key in (CLUSTER, "test") else key): shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for item in value:
            found = shape(item)
            if isinstance(found, dict):
                merged.update(found)
        return [merged] if merged else []
    return None


def test_both_sources_give_the_same_report_shape(prom_ping: Pinger, ping: Pinger, db: Database) -> None:
    collected(prom_ping, db)
    assert ping({"scheduledTime": "2026-11-20T10:07:00Z"}).status_code == 200  # the OpenCost sandbox's cluster
    policy = parse_policy(POLICY)
    day = FIRST.replace(hour=0)
    prometheus = chargeback(db, policy, ReportQuery(Period(day, day + timedelta(days=2)), cluster=CLUSTER))
    opencost_day = datetime(2026, 11, 20, tzinfo=UTC)
    opencost = chargeback(
        db, policy, ReportQuery(Period(opencost_day, opencost_day + timedelta(days=1)), cluster="test")
    )
    assert prometheus.to_document()["lines"] and opencost.to_document()["lines"]
    assert shape(prometheus.to_document()) == shape(opencost.to_document())


TABLE_LINE = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")


def test_finops_run_with_the_prometheus_source_prints_the_hand_computation(database_url: str, db: Database) -> None:
    """The demo's PriceBook has the rates above, and its world is ``demo_world`` from the first of
    the four pinged hours: the hand computation holds for the table ``finops run`` prints."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("finops")), "run", "--once", "--hours", "4", "--source", "prometheus"],
        env={**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert len(re.findall(r"^  \S+Z  HTTP 200  success  rows=\d+$", out, re.MULTILINE)) == 4, out
    table = {m[2]: (m[1], int(m[3]), Decimal(m[7])) for m in map(TABLE_LINE.match, out.splitlines()) if m}
    expected, idle = hand_computed()
    assert set(table) == {*expected, "__idle__"}, out
    for namespace, exact in expected.items():
        team, _, total = table[namespace]
        assert total == cents(exact) and team == (TEAMS[namespace] or "__unallocated__"), namespace
    assert table["__idle__"][2] == cents(idle)
    assert table["batch"][1] == 1 and table["shop"][1] == 4  # the Job's one billed hour
    grand = re.search(r"^TOTAL\s+([\d.]+)$", out, re.MULTILINE)
    assert grand is not None and Decimal(grand[1]) == sum(line[2] for line in table.values())
    with db.connection() as conn:
        sources = conn.execute("SELECT DISTINCT source FROM provider_allocations").fetchall()
        hours = conn.execute("SELECT count(*) AS n FROM allocation_hours WHERE source = 'prometheus'").fetchone()
    assert sources == [{"source": "prometheus"}] and hours == {"n": 4}
    served = re.search(r"Prometheus \(Debian\)\s+(http://\S+)", out)
    assert served is not None, out
    with pytest.raises(httpx.TransportError):  # stopped with the command
        httpx.get(f"{served[1]}/-/ready", timeout=2)
