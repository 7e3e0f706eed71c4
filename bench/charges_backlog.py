"""A 180-day backlog: 200 Subscriptions activated 180 days before the pinned hour (fee + cpuHour,
one pod per Deployment with an allocation row for every hour, all hours final), priced by repeated
``collect_charges`` pings with a time budget until ``remaining`` is 0.

The pings run in a fresh child process that does nothing else (the world is set up here, the
sandbox Kubernetes API is served from here), so its peak RSS (``ru_maxrss``) is the pricing's:
what one ``collect_charges`` replica needs for a backlog of any length (target < 512 MiB).
``BENCH_CHARGES_UNBOUNDED=1`` also prices the same backlog with no budget (one run) in another
fresh process, for comparison (it doubles this benchmark's time).

    python -m bench.charges_backlog            # the benchmark
    python -m bench.charges_backlog child ...  # the pricing process (what the benchmark starts)
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.charges_world import AGGREGATION, add_usage, billing_objects, pricebook_row, serve_world
from bench.common import database
from finops.hours import HOUR
from infra.postgres import Database

SUBSCRIPTIONS = 200
DAYS = 180
PODS = 1
BUDGET_SECONDS = 15.0
PINNED = datetime(2026, 10, 14, 12, tzinfo=UTC)
ACTIVATED = PINNED - timedelta(days=DAYS) + timedelta(minutes=30)
TARGET_MIB = 512
MAX_RUNS = 100


def child(dsn: str, kube_url: str, cluster: str, budget: float | None) -> None:
    """The pricing process: pings until nothing remains; one JSON line per run, then the peak RSS."""
    from infra.kube.client import KubeClient
    from infra.postgres import connect
    from usecases.collect_charges.service import Limits, collect_charges

    db = connect(dsn, max_size=4)
    kube = KubeClient.from_url(kube_url, timeout_seconds=60)
    baseline = _memory_kib("VmRSS")
    try:
        for run in range(MAX_RUNS):
            start = time.perf_counter()
            now = PINNED + timedelta(minutes=5 + run)
            result = collect_charges(
                db, kube, cluster, AGGREGATION, None, scheduled=PINNED, now=now, limits=Limits(budget_seconds=budget)
            )
            counts = result.counts()
            print(
                json.dumps(
                    {
                        "seconds": time.perf_counter() - start,
                        "rows": counts["rows_written"],
                        "batches": counts["batches"],
                        "remaining": counts["remaining"],
                        "priced": counts["subscriptions_priced"],
                        "patched": counts["statuses_patched"],
                        "errors": counts["errors"],
                    }
                ),
                flush=True,
            )
            if counts["errors"] or not counts["remaining"]:
                break
    finally:
        kube.close()
        db.close()
    peak, maxrss = _memory_kib("VmHWM"), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"baseline_kib": baseline, "peak_kib": peak, "maxrss_kib": maxrss}), flush=True)


def _memory_kib(field: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (the peak) of this process since its exec, in KiB. Linux's
    ``ru_maxrss`` of an exec'd child starts at its parent's RSS at the fork (exec folds the old
    address space's high-water mark in), so it says nothing about a child smaller than its parent."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@dataclass
class Pricing:
    runs: list[dict[str, Any]]
    wall: float
    baseline_mib: float
    peak_mib: float
    maxrss_mib: float

    @property
    def rows(self) -> int:
        return sum(int(r["rows"]) for r in self.runs)


def _price_in_child(dsn: str, kube_url: str, cluster: str, budget: float | None) -> Pricing:
    command = [sys.executable, "-m", "bench.charges_backlog", "child", dsn, kube_url, cluster, str(budget or "")]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the pricing process failed ({done.returncode}):\n{done.stderr[-4000:]}")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    runs, memory = lines[:-1], lines[-1]
    if not runs or runs[-1]["remaining"] or any(r["errors"] for r in runs):
        raise RuntimeError(f"the backlog was not priced: {runs}\n{done.stderr[-4000:]}")
    return Pricing(runs, wall, memory["baseline_kib"] / 1024, memory["peak_kib"] / 1024, memory["maxrss_kib"] / 1024)


def _reset(db: Database) -> None:
    """Forget the charges (TRUNCATE: no dead rows for the next pricing to wade through)."""
    with db.connection() as conn:
        conn.execute("TRUNCATE subscription_charges, subscription_charge_watermarks, subscription_index")


def main() -> None:
    unbounded = os.environ.get("BENCH_CHARGES_UNBOUNDED") == "1"
    with database() as db:
        dsn = str(db.pool.conninfo)
        start = time.perf_counter()
        book = pricebook_row(db, "backlog")
        usage = add_usage(
            db,
            "backlog",
            book,
            subscriptions=SUBSCRIPTIONS,
            pods=PODS,
            first=ACTIVATED.replace(minute=0),
            last=PINNED - HOUR,
            state="final",
        )
        with db.connection() as conn:
            conn.execute("ANALYZE provider_allocations")
            conn.execute("ANALYZE allocation_hours")
        setup = time.perf_counter() - start
        with serve_world(billing_objects(SUBSCRIPTIONS, ACTIVATED)) as (server, _):
            budgeted = _price_in_child(dsn, server.url, "backlog", BUDGET_SECONDS)
        once = None
        if unbounded:
            _reset(db)
            with serve_world(billing_objects(SUBSCRIPTIONS, ACTIVATED)) as (server, _):
                once = _price_in_child(dsn, server.url, "backlog", None)

    hours = (PINNED - ACTIVATED.replace(minute=0)) // HOUR + 1
    seconds = [r["seconds"] for r in budgeted.runs]
    print(
        f"charges backlog: {SUBSCRIPTIONS} Subscriptions activated {DAYS} days ago (fee + cpuHour, {PODS} pod each):"
        f" {hours:,} hours each, {usage:,} allocation rows (set up in {setup:.0f} s)"
    )
    print(
        f"  pings with budget_seconds={BUDGET_SECONDS:g} (default chunk 168 h, batch 20,000 rows), in a fresh"
        f" process: {len(budgeted.runs)} runs, {budgeted.rows:,} rows,"
        f" {budgeted.wall:.1f} s with start-up"
    )
    print(f"    seconds per run: {', '.join(f'{s:.1f}' for s in seconds)}  (max {max(seconds):.1f})")
    print(f"    rows per second of pricing: {budgeted.rows / sum(seconds):,.0f}")
    print(
        f"    peak RSS of the pricing process (VmHWM): {budgeted.peak_mib:.0f} MiB (RSS after imports and clients:"
        f" {budgeted.baseline_mib:.0f} MiB)  (target < {TARGET_MIB} MiB; its ru_maxrss,"
        f" {budgeted.maxrss_mib:.0f} MiB, starts at this process's RSS at the fork)"
    )
    if once is not None:
        print(
            f"  one unbounded run (budget None), in a fresh process: {once.runs[0]['seconds']:.1f} s,"
            f" {once.rows:,} rows, {once.runs[0]['batches']} batches,"
            f" peak RSS (VmHWM) {once.peak_mib:.0f} MiB"
        )
    else:
        print("  (BENCH_CHARGES_UNBOUNDED=1 adds one unbounded run of the same backlog, for its peak RSS)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        dsn, url, cluster, budget = sys.argv[2:6]
        child(dsn, url, cluster, float(budget) if budget else None)
    else:
        main()
