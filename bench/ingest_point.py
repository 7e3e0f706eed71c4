"""One figure of the ingest benchmark, in a fresh process (``python -m bench.ingest_point``).

Why a process per figure: peak RSS (``ru_maxrss``) only ever grows, so a figure measured after
another would report the larger of the two. Each process warms up untimed (ours: the same ingest
of another hour, itself streamed, so within the same memory bound; the floor: a small COPY), then
does one thing and prints ``{"seconds", "cpu_seconds", "rows", "rss_mib"}`` as JSON (CPU: this
process's own, PostgreSQL's excluded, a steadier figure than wall time on a busy machine; ours also
``split_seconds``, the part of its hour's stream that split the hour's GPUs, and
``postgres_cpu_seconds``, the CPU of the database's own backends meanwhile, read from ``/proc``
when the server runs on this machine, else null):

- ``ours``: ``collect_allocations``' per-hour path (``_write_hour``: fetch to a spool file, stream
  it through validation and conversion into ``COPY``, record the hour) for a fresh hour;
  with ``--fleet DIR``, then the collector's next step, the final hour written to that fleet
  folder as Parquet (``fleet_seconds``);
- ``floor``: ``json.loads`` of the same answer's bytes, with the garbage collector off (as the
  fastest the standard library parses), plus a plain ``COPY`` of the same rows, built beforehand
  and not timed. The bytes are fetched before the clock starts.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from finops.allocations import DEFAULT_AGGREGATION
from finops.hours import Hour
from infra.objectstore import ObjectStore
from infra.opencost import OpenCostClient
from infra.opencost.models import RESPONSE
from infra.postgres import Database, connect
from usecases.collect_allocations.answers import ShardOptions
from usecases.collect_allocations.fleet import upload_final_hours
from usecases.collect_allocations.gpus import HourGpus
from usecases.collect_allocations.pricing import ActivePricing
from usecases.collect_allocations.rows import COLUMNS, RowBuilder
from usecases.collect_allocations.service import CollectOptions, HourContext, _write_hour

BASE = datetime(2026, 1, 5, tzinfo=UTC)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["ours", "floor"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--cluster", default="bench")
    parser.add_argument("--hour", type=int, default=0)
    parser.add_argument("--shard-namespaces", type=int, default=0)
    parser.add_argument("--cold", action="store_true", help="no warm-up (a whole-run comparison)")
    parser.add_argument("--fleet", default=None, help="ours: then write the final hour to this fleet folder, timed")
    args = parser.parse_args()
    hour = Hour(BASE + timedelta(hours=args.hour))
    db = connect(args.dsn, max_size=2)
    db.execute("ensure_allocation_partition", hour=hour.start)
    if args.mode == "ours":
        options = CollectOptions(
            args.cluster, DEFAULT_AGGREGATION, 0, "team", "cost-center", shards=ShardOptions(args.shard_namespaces, 0)
        )
        client = OpenCostClient(args.url, timeout=600)
        split_seconds = timed_split()

        def ingest(target: Hour) -> int:
            pricing = ActivePricing(None, "USD", "bench", None)
            ctx = HourContext(options, pricing, BASE, str(uuid.uuid4()), timedelta(hours=6), retry_lost=False)
            written = _write_hour(db, client, ctx, target, True)
            return written.rows if written else 0

        # Untimed, in this process: connection, type adapters, plans. Its peak memory is the
        # same bound as the timed run's (streamed), so the figure's peak RSS stays its own.
        if not args.cold:
            ingest(Hour(hour.start + timedelta(days=7)))
        if args.fleet:  # untimed: the warm-up hour's file, so the timed upload is this hour's alone
            upload(db, args.fleet, args.cluster)
        split_seconds.clear()
        backends = backend_cpu(db)
        start, cpu = time.perf_counter(), time.process_time()
        rows = ingest(hour)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        after = backend_cpu(db)
        postgres_cpu = None
        if backends is not None and after is not None:  # a backend started in between counts from zero
            postgres_cpu = sum(cpu - backends.get(pid, 0.0) for pid, cpu in after.items())
        if args.fleet:
            start = time.perf_counter()
            upload(db, args.fleet, args.cluster)
            fleet_seconds = time.perf_counter() - start
    else:
        window = f"{hour.start:%Y-%m-%dT%H:%M:%SZ},{hour.end:%Y-%m-%dT%H:%M:%SZ}"
        params = {"aggregate": DEFAULT_AGGREGATION, "accumulate": "true", "includeIdle": "true", "window": window}
        body = httpx.get(f"{args.url}/allocation", params=params, timeout=600).content
        builder = RowBuilder(
            cluster=args.cluster,
            aggregation=DEFAULT_AGGREGATION,
            hour=hour.start,
            finalized=True,
            pricebook_id=None,
            currency="USD",
            owner_label_key="team",
            cost_center_label_key="cost-center",
            collected_at=BASE,
        )
        prepared = list(builder.rows(RESPONSE.validate_json(body)["data"][0]))  # type: ignore[index,arg-type]
        warm = [("warm-" + args.cluster, *row[1:]) for row in prepared[:500]]
        with db.connection() as conn:  # untimed: the same warm-up of COPY, on a copy of a few rows
            db.copy_rows(conn, "provider_allocations", COLUMNS, warm)
        gc.collect()
        gc.disable()
        start, cpu = time.perf_counter(), time.process_time()
        json.loads(body)
        with db.connection() as conn:
            rows = db.copy_rows(conn, "provider_allocations", COLUMNS, prepared)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        gc.enable()
    db.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {"seconds": seconds, "cpu_seconds": cpu, "rows": rows, "rss_mib": rss}
    if args.mode == "ours":
        figures |= {"split_seconds": sum(split_seconds), "postgres_cpu_seconds": postgres_cpu}
    print(json.dumps(figures | ({"fleet_seconds": fleet_seconds} if args.fleet else {})))
    return 0


def backend_cpu(db: Database) -> dict[int, float] | None:
    """CPU seconds so far of each server process of this database (the scratch database: its
    backends are this process's connections), from ``/proc``; None when it cannot be read (a
    server on another machine)."""
    with db.connection() as conn:
        pids = [
            row["pid"] for row in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        ]
    seconds: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if text[text.index("(") + 1 : text.rindex(")")] != "postgres":  # not a backend of this machine's server
            return None
        fields = text[text.rindex(")") + 2 :].split()
        seconds[pid] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def timed_split() -> list[float]:
    """Time the hour's GPU split (``HourGpus.rewrite``, called as the hour's stream ends): the
    seconds of each call are appended to the list returned."""
    seconds: list[float] = []
    rewrite = HourGpus.rewrite

    def timed(self: HourGpus, held: list[str]) -> list[str]:
        start = time.perf_counter()
        try:
            return rewrite(self, held)
        finally:
            seconds.append(time.perf_counter() - start)

    HourGpus.rewrite = timed  # type: ignore[method-assign]
    return seconds


def upload(db: Database, folder: str, cluster: str) -> None:
    """The collector's next step with ``FLEET_BUCKET``: the final hours' files."""
    done = upload_final_hours(db, ObjectStore(), folder, cluster, DEFAULT_AGGREGATION, deadline=float("inf"))
    if done.error or not done.uploaded:
        raise RuntimeError(f"fleet upload: {done.error or 'nothing to upload'}")


if __name__ == "__main__":
    sys.exit(main())
