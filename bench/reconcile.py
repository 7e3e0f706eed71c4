"""A month's chargeback on the ``billed`` basis for a 30-node cluster: ours against two floors.

- ours: ``GET /api/v1/chargeback?basis=billed`` of ``cost_api`` served by functions-framework
  over HTTP, and ``usecases.reports.service.chargeback(..., basis="billed")`` in-process: the
  month's hourly rows grouped per day, node and namespace (``reconcile_rows``), the assets per day
  (``reconcile_assets``), the bill lines (``bill_lines``), the exact reconciliation in Python
  (``finops.reconciliation``), then the allocation and the variance document;
- floors, same run, same rows: the same report on ``basis=estimate`` (the daily rollups), and the
  bare scan a bill basis cannot avoid while rollups keep no node: ``SELECT node, namespace,
  sum(total_cost_micros) ... GROUP BY node, namespace`` over the month's hourly rows.

Also printed: the billed report's peak RSS (in a fresh process, so the data generation's memory is
not counted), and where its time goes: the time spent in each named query (``Database.fetch_all``
wrapped here, SQL plus transfer plus row building) against the rest (Python). ``--profile`` adds
cProfile's top functions of one in-process billed report.

Sizes: 30 nodes, 300 namespaces and 3,000 containers every hour of November (720 hours, 2.16M
hourly rows), a mid-sized production cluster; pods are rescheduled daily, so each namespace's ten
containers sit on ten nodes, on other nodes every day (3,000 node and namespace groups a day).
Smaller sizes would hide what grows with the month's rows; twice the rows would break the
benchmark's two-minute budget. The data is written directly (``COPY``), consistent with itself:
each node's asset (CPU + RAM) is its containers' cost plus the node's idle, the cluster's
``__idle__`` row is the nodes' idle, the rollups are rebuilt from the rows (``rebuild_day``), every
hour is in the ledger as final, and the bill has one usage line per node and day (85 % of the
estimate), a credit and a tax line tagged with the cluster.

The first billed report of the month is timed on its own: it stores each settled day per node
(``allocation_node_daily``), which later reports read instead of the hourly rows. Where the time of
a later report goes is printed too: ``reconcile_rows`` (PostgreSQL's own execution of it, from
``EXPLAIN ANALYZE``, and what it spilled to temp files) against the other queries and Python.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import httpx

from bench.common import database, high_water_mib, peak_rss
from finops.allocations import DEFAULT_AGGREGATION
from finops.chargeback import Report
from finops.policy import Policy, parse_policy
from infra.postgres import Database, connect
from infra.postgres.database import QUERIES
from sandbox.localstack import Stack, serve_function
from usecases.reports import service
from usecases.rollups import rebuild_day

NODES = 30
NAMESPACES = 300
CONTAINERS = 3_000
DAYS = 30
MONTH = "2026-11"
FIRST = datetime(2026, 11, 1, tzinfo=UTC)
REPEATS = 3
CLUSTER = "bench"
BILL_FACTOR = (85, 100)  # what the cloud charged each node against its estimate
FIXED = "73.00"  # the policy's fixed shared cost (control plane), on every report
POLICY = {
    "currency": "USD",
    "idle": "separate",
    "shared": {"namespaces": ["ns-000", "ns-001"], "fixed": [{"name": "control-plane", "amount": FIXED}]},
}
POLICY_YAML = (
    "currency: USD\nidle: separate\nshared:\n  namespaces: [ns-000, ns-001]\n"
    f"  fixed:\n    - {{name: control-plane, amount: '{FIXED}'}}\n"
)
ROW_COLUMNS = (
    "cluster, namespace, name, aggregation, hour, entry_kind, controller_kind, controller, pod, container, node, "
    "minutes, cpu_core_request_avg, cpu_core_usage_avg, cpu_core_hours, ram_byte_request_avg, ram_byte_usage_avg, "
    "ram_byte_hours, cpu_cost_micros, ram_cost_micros, total_cost_micros, team, cost_center, currency, is_finalized"
)
ASSET_COLUMNS = (
    "cluster, aggregation, hour, kind, name, provider_id, cpu_cost_micros, ram_cost_micros, total_cost_micros"
)
BILL_COLUMNS = (
    "source, row_number, format, charge_start, charge_end, billed_cost_micros, currency, charge_category, "
    "service, resource_id, account, tags"
)


def provider_id(node: int) -> str:
    return f"aws:///eu-west-1a/i-{node:017x}"


def _container(c: int, hour: int) -> tuple[int, int, int, int]:
    """(namespace, node, cpu micros, ram micros) of container ``c`` in ``hour``."""
    k, n = divmod(c, NAMESPACES)
    node = (3 * k + n + hour // 24) % NODES  # a namespace's containers on distinct nodes, moved daily
    return n, node, 9_000 + c * 37 % 4_001 + hour % 5 * 10, 3_000 + c * 13 % 1_999


def _idle(node: int) -> tuple[int, int]:
    """A node's unallocated (CPU, RAM) micros per hour."""
    return 240_000 + node * 4_000, 80_000 + node * 1_000


def _hour_text(hour: int, containers: int) -> tuple[str, str, list[int]]:
    """One hour's allocation rows and node assets as ``COPY`` text; each node's compute estimate."""
    at = (FIRST + timedelta(hours=hour)).isoformat()
    lines: list[str] = []
    cpu = [0] * NODES
    ram = [0] * NODES
    for c in range(containers):
        n, node, c_cpu, c_ram = _container(c, hour)
        cpu[node] += c_cpu
        ram[node] += c_ram
        team = r"\N" if n % 97 == 0 else f"team-{n % 40:02d}"
        pod = f"app-{c // NAMESPACES}-{hour // 24}"
        lines.append(
            f"{CLUSTER}\tns-{n:03d}\tns-{n:03d}/ReplicaSet/app-{c // NAMESPACES}/{pod}/main\t{DEFAULT_AGGREGATION}"
            f"\t{at}\tworkload\tReplicaSet\tapp-{c // NAMESPACES}\t{pod}\tmain\tnode-{node:02d}\t60\t0.25\t0.1"
            f"\t0.25\t536870912\t268435456\t536870912\t{c_cpu}\t{c_ram}\t{c_cpu + c_ram}\t{team}\tcc-{n % 7}"
            "\tUSD\tt\n"
        )
    idle_cpu = sum(_idle(node)[0] for node in range(NODES))
    idle_ram = sum(_idle(node)[1] for node in range(NODES))
    lines.append(
        f"{CLUSTER}\t\t__idle__\t{DEFAULT_AGGREGATION}\t{at}\tidle\t\\N\t\\N\t\\N\t\\N\t\\N\t60\t\\N\t\\N\t64\t\\N"
        f"\t\\N\t274877906944\t{idle_cpu}\t{idle_ram}\t{idle_cpu + idle_ram}\t\\N\t\\N\tUSD\tt\n"
    )
    assets: list[str] = []
    estimates: list[int] = []
    for node in range(NODES):
        node_cpu, node_ram = cpu[node] + _idle(node)[0], ram[node] + _idle(node)[1]
        estimates.append(node_cpu + node_ram)
        assets.append(
            f"{CLUSTER}\t{DEFAULT_AGGREGATION}\t{at}\tnode\tnode-{node:02d}\t{provider_id(node)}"
            f"\t{node_cpu}\t{node_ram}\t{node_cpu + node_ram}\n"
        )
    return "".join(lines), "".join(assets), estimates


def generate(db: Database, containers: int, days: int) -> int:
    """The month's rows, assets, ledger, rollups and bill; returns the number of hourly rows."""
    db.execute("ensure_allocation_partition", hour=FIRST)
    node_days: dict[tuple[int, int], int] = {}
    with db.connection() as conn, conn.cursor() as cur:
        assets: list[str] = []  # one COPY at a time on a connection: the assets are written after
        with cur.copy(f"COPY provider_allocations ({ROW_COLUMNS}) FROM STDIN") as rows:
            for hour in range(24 * days):
                text, asset_text, estimates = _hour_text(hour, containers)
                rows.write(text)
                assets.append(asset_text)
                for node, estimate in enumerate(estimates):
                    node_days[(hour // 24, node)] = node_days.get((hour // 24, node), 0) + estimate
        with cur.copy(f"COPY cluster_assets ({ASSET_COLUMNS}) FROM STDIN") as copy:
            for asset_text in assets:
                copy.write(asset_text)
        cur.execute(
            "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, currency, run_id, asset_count)"
            " SELECT %s, %s, %s::timestamptz + h * interval '1 hour', 'final', %s, 'USD', %s, %s"
            " FROM generate_series(0, %s) h",
            (CLUSTER, DEFAULT_AGGREGATION, FIRST, containers + 1, str(uuid.uuid4()), NODES, 24 * days - 1),
        )
        with cur.copy(f"COPY cloud_costs ({BILL_COLUMNS}) FROM STDIN") as copy:
            for number, ((day, node), estimate) in enumerate(sorted(node_days.items()), start=1):
                start = FIRST + timedelta(days=day)
                billed = estimate * BILL_FACTOR[0] // BILL_FACTOR[1]
                line = (start, start + timedelta(days=1), billed, "USD", "usage", "AmazonEC2", f"i-{node:017x}")
                copy.write_row(("s3://bench/bill.csv", number, "focus", *line, "111122223333", "{}"))
            tags = json.dumps({"eks:cluster-name": CLUSTER})
            end = FIRST + timedelta(days=days)
            for number, (amount, category) in enumerate(((-250_000_000, "discount"), (900_000_000, "tax")), start=1):
                extra = (FIRST, end, amount, "USD", category, "AmazonEC2", None)
                copy.write_row(("s3://bench/bill.csv", len(node_days) + number, "focus", *extra, "111122223333", tags))
    for day in range(days):
        rebuild_day(db, CLUSTER, DEFAULT_AGGREGATION, (FIRST + timedelta(days=day)).date())
    with db.connection() as conn:  # as autovacuum would have by now (VACUUM runs outside a transaction)
        conn.autocommit = True
        for table in ("provider_allocations", "cluster_assets", "allocation_daily", "cloud_costs", "allocation_hours"):
            conn.execute(f"VACUUM ANALYZE {table}")
        conn.autocommit = False
    return 24 * days * (containers + 1)


def report(db: Database, policy: Policy, basis: str) -> Report:
    query = service.ReportQuery(service.month_period(MONTH), CLUSTER)
    return service.chargeback(db, policy, query, basis=basis)


def check(db: Database, billed: Report) -> None:
    """A fast wrong report is no benchmark: with the bill covering every day, the billed report's
    total is the bill's lines plus the policy's fixed cost, to the cent."""
    with db.connection() as conn:
        found = conn.execute("SELECT sum(billed_cost_micros) AS micros FROM cloud_costs").fetchone()
    assert found is not None
    expected = (Decimal(int(found["micros"])) / 1_000_000 + Decimal(FIXED)).quantize(Decimal("0.01"), ROUND_HALF_EVEN)
    if billed.total != expected:
        raise AssertionError(f"bench: the billed report's total {billed.total} is not the bill's {expected}")


def floor_sql(db: Database, days: int) -> None:
    with db.connection() as conn:
        conn.execute(
            "SELECT node, namespace, sum(total_cost_micros) FROM provider_allocations"
            " WHERE cluster = %s AND aggregation = %s AND hour >= %s AND hour < %s GROUP BY node, namespace",
            (CLUSTER, DEFAULT_AGGREGATION, FIRST, FIRST + timedelta(days=days)),
        ).fetchall()


def timed(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


@contextlib.contextmanager
def query_times(db: Database) -> Iterator[dict[str, float]]:
    """Seconds spent in each named query while the block runs (``fetch_all`` wrapped on ``db``)."""
    spent: dict[str, float] = {}
    original = db.fetch_all

    def fetch_all(query: str, /, conn: Any = None, **params: Any) -> list[dict[str, Any]]:
        start = time.perf_counter()
        try:
            return original(query, conn, **params)
        finally:
            spent[query] = spent.get(query, 0.0) + time.perf_counter() - start

    setattr(db, "fetch_all", fetch_all)  # noqa: B010 (an instance's method, wrapped for the bench)
    try:
        yield spent
    finally:
        delattr(db, "fetch_all")


def server_side(db: Database, days: int) -> tuple[float, float]:
    """PostgreSQL's own execution of ``reconcile_rows`` (no transfer, no Python rows; ``EXPLAIN
    ANALYZE`` with timing off, so the clock reads cost little): (ms, MiB written to temp files,
    i.e. the sort or hash spilled past ``work_mem``)."""
    params = {"cluster": CLUSTER, "aggregation": DEFAULT_AGGREGATION, "start": FIRST}
    params["end"] = FIRST + timedelta(days=days)
    explain = "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) "
    with db.connection() as conn:
        found = conn.execute(explain + QUERIES["reconcile_rows"], params).fetchone()
    assert found is not None
    plan = next(iter(found.values()))[0]
    return float(plan["Execution Time"]), plan["Plan"].get("Temp Written Blocks", 0) * 8 / 1024


def _rss_point(dsn: str) -> None:
    db = connect(dsn, max_size=2)
    policy = parse_policy(POLICY)
    before = high_water_mib()
    report(db, policy, "billed")
    peak = high_water_mib()
    db.close()
    print(json.dumps({"before": before, "peak": peak}))


def profile(db: Database, policy: Policy, top: int = 10) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(report, db, policy, "billed")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(containers: int = CONTAINERS, days: int = DAYS, *, with_profile: bool = False) -> None:
    started = time.perf_counter()
    with database() as db, tempfile.TemporaryDirectory() as folder:
        rows = generate(db, containers, days)
        generated = time.perf_counter() - started
        dsn = db.pool.conninfo
        assert isinstance(dsn, str)  # bench.common.database() passes a string
        policy = parse_policy(POLICY)
        policy_path = Path(folder) / "policy.yaml"
        policy_path.write_text(POLICY_YAML)
        stack = Stack(dsn, "http://127.0.0.1:9", "http://127.0.0.1:9", "bench", CLUSTER, log_dir=Path(folder))
        headers = {"Argocd-Application-Name": "argocd:cost-gate", "X-Finops-Proxy-Token": "bench"}
        with (
            serve_function(stack, "cost_api", PROXY_TOKEN="bench", POLICY_PATH=str(policy_path)) as url,
            httpx.Client(base_url=url, headers=headers, timeout=300) as client,
        ):
            path = f"/api/v1/chargeback?month={MONTH}&basis=billed"
            start_first = time.perf_counter()
            billed = report(db, policy, "billed")  # the first stores the month's settled days per node
            first_s = time.perf_counter() - start_first
            estimate = report(db, policy, "estimate")
            check(db, billed)
            floor_sql(db, days)
            client.get(path).raise_for_status()
            # Alternated, repeat after repeat, so a load drifting on a shared machine weighs on all alike.
            samples: dict[str, list[float]] = {"sql": [], "estimate": [], "service": [], "http": []}
            for _ in range(REPEATS):
                samples["sql"].append(timed(lambda: floor_sql(db, days), 1))
                samples["estimate"].append(timed(lambda: report(db, policy, "estimate"), 1))
                samples["service"].append(timed(lambda: report(db, policy, "billed"), 1))
                samples["http"].append(timed(lambda: client.get(path).raise_for_status(), 1))
        sql_s, estimate_s, service_s, http_s = (statistics.median(samples[k]) for k in samples)
        with query_times(db) as spent:
            start = time.perf_counter()
            report(db, policy, "billed")
            split_total = time.perf_counter() - start
        groups = len(db.fetch_all("reconcile_rows", cluster=CLUSTER, aggregation=DEFAULT_AGGREGATION,
                                  start=FIRST, end=FIRST + timedelta(days=days)))  # fmt: skip
        stored = len(db.fetch_all("node_days", cluster=CLUSTER, aggregation=DEFAULT_AGGREGATION,
                                  first=FIRST.date(), last=FIRST.date() + timedelta(days=days)))  # fmt: skip
        pg_ms, spilled = server_side(db, days)
        rss_before, rss_peak = peak_rss("bench.reconcile", dsn)
        profiled = profile(db, policy) if with_profile else ""
    fetched = sum(spent.values())
    rows_s = spent.get("reconcile_rows", 0.0) + spent.get("stored_node_rows", 0.0)
    print(
        f"reconcile: a month's chargeback on basis=billed, {NODES} nodes, {NAMESPACES} namespaces, {containers:,} "
        f"containers x {24 * days} hours ({rows:,} hourly rows, {groups:,} day/node/namespace groups; "
        f"data written in {generated:.0f} s)"
    )
    print(
        f"  billed total {billed.total} {billed.currency} ({len(billed.lines)} lines), "
        f"estimate {estimate.total} ({len(estimate.lines)} lines)"
    )
    print(f"  ours  the first billed report (stores {stored} settled days per node): {first_s * 1000:8.0f} ms")
    print(f"  ours  cost_api GET ?basis=billed over HTTP      median of {REPEATS}: {http_s * 1000:8.0f} ms")
    print(f"  ours  the billed report in-process             median of {REPEATS}: {service_s * 1000:8.0f} ms")
    print(f"  floor the same report on basis=estimate         median of {REPEATS}: {estimate_s * 1000:8.0f} ms")
    print(f"  floor SQL GROUP BY node, namespace (the scan)   median of {REPEATS}: {sql_s * 1000:8.0f} ms")
    print(
        f"  ratio billed/estimate: {service_s / estimate_s:.1f} (HTTP {http_s / estimate_s:.1f}); "
        f"billed/SQL floor: {service_s / sql_s:.1f} (HTTP {http_s / sql_s:.1f})"
    )
    print(f"  peak RSS of a fresh process running the billed report: {rss_peak:.0f} MiB (before: {rss_before:.0f} MiB)")
    python_s = split_total - fetched
    print(
        f"  one billed report, {split_total * 1000:.0f} ms: SQL {fetched * 1000:.0f} ms ({fetched / split_total:.0%}), "
        f"Python {python_s * 1000:.0f} ms ({python_s / split_total:.0%})"
    )
    print(
        f"    SQL: the rows per day, node and namespace {rows_s * 1000:.0f} ms (PostgreSQL alone over the hourly rows "
        f"{pg_ms:.0f} ms, {spilled:.0f} MiB "
        f"spilled to temp files), the other queries {(fetched - rows_s) * 1000:.0f} ms"
    )
    if profiled:
        print(profiled)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        _rss_point(sys.argv[2])
    else:
        main(with_profile="--profile" in sys.argv[1:])
