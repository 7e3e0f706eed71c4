"""Ingest of one hour of 20,000 container allocations: ours against a floor.

- ours: ``collect_allocations``' per-hour path (fetch over HTTP, parse into models with exact
  decimals, convert to rows, stage with COPY, upsert, record the hour) on a fresh hour;
- floor, same run, same table: ``json.loads`` of the same response bytes plus a plain ``COPY``
  of the same rows into ``provider_allocations``.

Each hour's sandbox answer is warmed just before it is timed, so the fetch measures transfer,
not the simulator. Memory:
Python's peak during one hour and during three consecutive hours (it must not grow with the
number of hours: one hour's response at a time), and the process's peak RSS.
"""

from __future__ import annotations

import json
import resource
import time
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta

import httpx

from bench.common import database, median, sandbox_opencost
from finops.allocations import DEFAULT_AGGREGATION
from finops.hours import Hour
from functions.collect_allocations.pricing import ActivePricing
from functions.collect_allocations.rows import COLUMNS, RowBuilder
from functions.collect_allocations.service import CollectOptions, _write_hour
from infra.opencost import OpenCostClient

CONTAINERS = 20_000
REPEATS = 3
BASE = datetime(2026, 1, 5, tzinfo=UTC)


def _hour(n: int) -> Hour:
    return Hour(BASE + timedelta(hours=n))


def main(containers: int = CONTAINERS) -> None:
    options = CollectOptions("bench", DEFAULT_AGGREGATION, 0, "team", "cost-center")
    pricing = ActivePricing(None, "USD", "bench", None)
    with database() as db, sandbox_opencost(containers) as url:
        client = OpenCostClient(url, timeout=120)
        params = {"aggregate": DEFAULT_AGGREGATION, "accumulate": "true", "includeIdle": "true", "shareIdle": "false"}

        def warm(n: int) -> bytes:
            """Ask the simulator for hour ``n`` once, so the timed fetch is served from its cache."""
            h = _hour(n)
            window = f"{h.start:%Y-%m-%dT%H:%M:%SZ},{h.end:%Y-%m-%dT%H:%M:%SZ}"
            return httpx.get(f"{url}/allocation", params={**params, "window": window}, timeout=120).content

        size_mib = len(warm(0)) / 2**20

        def ours(n: int) -> tuple[float, int]:
            warm(n)
            start = time.perf_counter()
            written = _write_hour(
                db, client, options, pricing, _hour(n), True, BASE, str(uuid.uuid4()), timedelta(hours=6), False
            )
            return time.perf_counter() - start, written.rows if written else 0

        def floor(n: int) -> float:
            h = _hour(n)
            builder = RowBuilder(
                cluster="bench",
                aggregation=DEFAULT_AGGREGATION,
                hour=h.start,
                finalized=True,
                pricebook_id=None,
                currency="USD",
                owner_label_key="team",
                cost_center_label_key="cost-center",
                collected_at=BASE,
            )
            sets = client.allocation(h.start, h.end, aggregate=DEFAULT_AGGREGATION, accumulate=True, include_idle=True)
            rows = list(builder.rows(sets[0]))
            with db.connection() as conn:
                db.execute("ensure_allocation_partition", conn, hour=h.start)
            body = warm(n)
            start = time.perf_counter()
            json.loads(body)
            with db.connection() as conn:
                db.copy_rows(conn, "provider_allocations", COLUMNS, rows)
            return time.perf_counter() - start

        ours(2 * REPEATS + 3)  # one untimed run: pool, partition, plan caches
        ours_runs = [ours(n) for n in range(REPEATS)]
        floor_runs = [floor(n) for n in range(REPEATS, 2 * REPEATS)]
        ours_s = median([t for t, _ in ours_runs])
        floor_s = median(floor_runs)

        tracemalloc.start()
        ours(2 * REPEATS)
        one_hour_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.reset_peak()
        for n in (2 * REPEATS + 1, 2 * REPEATS + 2):
            ours(n)
        two_more_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        client.close()

    rows = ours_runs[0][1]
    print(
        f"ingest: one hour of {containers:,} container allocations "
        f"({rows:,} rows incl. idle; response {size_mib:.1f} MiB)"
    )
    print(f"  ours  (fetch + parse + upsert)  median of {REPEATS}: {ours_s * 1000:8.0f} ms")
    print(f"  floor (json.loads + COPY)       median of {REPEATS}: {floor_s * 1000:8.0f} ms")
    print(f"  ratio ours/floor: {ours_s / floor_s:.2f}  (target <= 2.0)")
    print(
        f"  peak Python memory: one hour {one_hour_peak:.0f} MiB; two further hours {two_more_peak:.0f} MiB "
        f"(flat: one hour's response at a time)"
    )
    print(f"  peak RSS of the ingesting process: {rss_mib:.0f} MiB")
