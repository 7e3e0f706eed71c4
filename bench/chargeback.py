"""A month's chargeback for a cluster of 2,000 namespaces: ours against a floor.

- ours: ``GET /api/v1/chargeback`` of ``cost_api`` served by functions-framework over HTTP (the
  SQL aggregation over the daily rollups, the exact per-cluster allocation, JSON), and the same
  through the service function directly;
- floor, same run: ``SELECT count(*)`` over the same month's rollup rows.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import httpx

from bench.common import database
from finops.policy import parse_policy
from sandbox.localstack import Stack, serve_function
from usecases.reports import service

NAMESPACES = 2_000
DAYS = 31
TEAMS = 40
REPEATS = 5
AGGREGATION = "namespace,controllerKind,controller,pod,container"
POLICY = {
    "currency": "USD",
    "idle": "separate",
    "shared": {"namespaces": ["ns-0000", "ns-0001"], "fixed": [{"name": "control-plane", "amount": "73.00"}]},
}

COLUMNS = (  # allocation_daily's, in _rows()' order
    "cluster",
    "aggregation",
    "day",
    "namespace",
    "entry_kind",
    "team",
    "cost_center",
    "currency",
    "hours",
    "cpu_cost_micros",
    "gpu_cost_micros",
    "ram_cost_micros",
    "pv_cost_micros",
    "lb_cost_micros",
    "network_cost_micros",
    "total_cost_micros",
    "billed_core_hours",
    "requested_core_hours",
    "used_core_hours",
    "billed_gib_hours",
    "requested_gib_hours",
    "used_gib_hours",
)


def _rows() -> list[tuple[object, ...]]:
    rng = random.Random(7)
    rows: list[tuple[object, ...]] = []
    for day in range(DAYS):
        d = date(2026, 10, 1) + timedelta(days=day)
        for n in range(NAMESPACES):
            micros = rng.randrange(1_000, 50_000_000)
            team = "" if n % 97 == 0 else f"team-{n % TEAMS:02d}"
            rows.append(
                (
                    "bench",
                    AGGREGATION,
                    d,
                    f"ns-{n:04d}",
                    "workload",
                    team,
                    f"cc-{n % 7}",
                    "USD",
                    24,
                    micros,
                    0,
                    0,
                    0,
                    0,
                    0,
                    micros,
                    24,
                    24,
                    10,
                    48,
                    48,
                    20,
                )
            )
        rows.append(
            (
                "bench",
                AGGREGATION,
                d,
                "",
                "idle",
                "",
                "",
                "USD",
                24,
                9_000_000_000,
                0,
                0,
                0,
                0,
                0,
                9_000_000_000,
                0,
                0,
                0,
                0,
                0,
                0,
            )
        )
    return rows


def main() -> None:
    with database() as db:
        rows = _rows()
        with db.connection() as conn:
            db.copy_rows(conn, "allocation_daily", COLUMNS, rows)
            conn.execute("ANALYZE allocation_daily")
        policy = parse_policy(POLICY)
        query = service.ReportQuery(service.month_period("2026-10"), "bench")

        def timed(fn: object) -> float:
            samples = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                fn()  # type: ignore[operator]
                samples.append(time.perf_counter() - start)
            return statistics.median(samples)

        def floor() -> None:
            with db.connection() as conn:
                conn.execute(
                    "SELECT count(*) FROM allocation_daily WHERE cluster = 'bench' AND aggregation = %s"
                    " AND day >= '2026-10-01' AND day < '2026-11-01'",
                    (AGGREGATION,),
                ).fetchone()

        floor()
        floor_s = timed(floor)
        service_s = timed(lambda: service.chargeback(db, policy, query))
        report = service.chargeback(db, policy, query)

        dsn = db.pool.conninfo
        with tempfile.TemporaryDirectory() as folder:
            policy_path = Path(folder) / "policy.yaml"
            policy_path.write_text(
                "currency: USD\nidle: separate\nshared:\n  namespaces: [ns-0000, ns-0001]\n"
                "  fixed:\n    - {name: control-plane, amount: '73.00'}\n"
            )
            stack = Stack(
                dsn, "http://127.0.0.1:9", "http://127.0.0.1:9", "bench", "bench", log_dir=Path(folder) / "logs"
            )
            with serve_function(stack, "cost_api", PROXY_TOKEN="bench", POLICY_PATH=str(policy_path)) as url:
                headers = {"Argocd-Application-Name": "argocd:cost-gate", "X-Finops-Proxy-Token": "bench"}
                client = httpx.Client(base_url=url, headers=headers, timeout=60)
                assert client.get("/api/v1/chargeback?month=2026-10").status_code == 200
                http_s = timed(lambda: client.get("/api/v1/chargeback?month=2026-10").raise_for_status())
                client.close()

    print(
        f"chargeback: one month of a {NAMESPACES:,}-namespace cluster ({len(rows):,} daily rollup rows, "
        f"{len(report.lines)} lines, total {report.total} {report.currency})"
    )
    print(f"  ours  cost_api GET /api/v1/chargeback over HTTP  median of {REPEATS}: {http_s * 1000:7.1f} ms")
    print(f"  ours  the report in-process (SQL + allocation)   median of {REPEATS}: {service_s * 1000:7.1f} ms")
    print(f"  floor SELECT count(*) over the same rows        median of {REPEATS}: {floor_s * 1000:7.1f} ms")
    print(f"  ratio ours(HTTP)/floor: {http_s / floor_s:.1f}; answer well under a second: {http_s < 1.0}")


if __name__ == "__main__":
    main()
