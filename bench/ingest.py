"""Ingest of one hour at 20,000, 100,000 and 200,000 containers: ours against a floor.

- ours: ``collect_allocations``' per-hour path (fetch to a spool file, streamed parse with exact
  decimals into ``COPY``, the hour's assets, record the hour) on a fresh hour;
- floor: ``json.loads`` of the same response bytes (garbage collector off) plus a plain ``COPY``
  of the same rows into ``provider_allocations``.

Every figure runs in a fresh process (``bench.ingest_point``), so a peak RSS is that figure's
alone (not the floor's, not a warm-up's). The sandbox computes each size's answer once; the timed
fetches are then served from that file (and the hour's ``/assets`` answer from its own) by a
plain HTTP server here, so they measure transfer, not the simulator. (Until this was so, the
server answered ``/assets`` with the allocations' file too: ours parsed the whole answer a second
time, in memory, and the benchmark showed 1.2 to 1.7 and a peak RSS growing with the hour, 1.6 GiB
at 200,000 containers.) Last, the 200,000-container hour is ingested from the sandbox itself once in
one request and once in namespace batches (``OPENCOST_SHARD_NAMESPACES``), timed end to end
(OpenCost's computing included), and the two clusters' rows are compared column for column.

Measured on 2 CPUs shared with other work (``ours / floor`` wall, then CPU; medians; peak RSS):

- before (issue 17 part 1 as first written: every field decoded, exact ``Decimal`` for every
  number, rows through psycopg's ``write_row``): 100,000 containers 5.39 / 4.08 s (1.32), CPU
  3.29 / 2.70 s (1.22), about 130 MiB;
- fields no row stores skipped, rows as ``COPY`` text, costs' micros inlined (load 13): 20,000:
  0.69 / 0.51 s (1.35), CPU 1.18; 100,000: 4.64 / 3.18 s (1.46), CPU 2.93 / 2.54 s (1.15);
  200,000: 0.99, CPU 0.85; 120 MiB;
- quantities kept as their JSON text (load 1.6): 20,000: 0.93, CPU 0.82; 100,000: 3.49 / 3.61 s
  (0.97), CPU 2.46 / 2.82 s (0.87); 200,000: 1.06, CPU 0.80; 125 MiB;
- with psycopg's queued (threaded) COPY writer, two runs: 100,000: 1.05 and 1.10, CPU 0.93 and
  0.91 (20,000: 1.11 and 1.04; 200,000: 0.94 and 0.86): no better, not kept;
- as kept (times' text cached per hour), two runs (load 3.5, 1.4): 20,000: 0.77 / 0.76 s (1.02)
  and 0.61 / 0.57 s (1.06), CPU 0.92 and 0.90; 100,000: 2.40 / 2.63 s (0.91) and 2.54 / 3.10 s
  (0.82), CPU 1.96 / 2.52 s (0.78) and 2.10 / 2.93 s (0.72); 200,000: 0.85 and 0.96, CPU 0.74
  and 0.83; peak RSS 125-130 MiB at every size. At 20,000 the wall ratio stays about 1: ours
  includes the download to the spool file, which the floor does before its clock starts;
- COPY written 64 KiB at a time instead of 1 MiB (``infra.postgres.copy_text.BATCH``: a write
  larger than the socket's buffer waited while PostgreSQL parsed it), on a slower day (the floor
  took 5.01 s at 100,000): 20,000: 0.99, CPU 0.88; 100,000: 4.76 / 5.01 s (0.95), CPU 0.84;
  200,000: 0.79, CPU 0.69; 124-137 MiB. Inside ``make bench`` the same day: 0.85 / 0.99 / 0.78,
  CPU 0.73 / 0.88 / 0.67, 123-134 MiB;
- the same code on a faster day (the floor 4.2 to 5.2 s at 100,000), alone and inside ``make
  bench``: 20,000: 0.85 and 1.08, CPU 0.77 and 0.86; 100,000: 0.79 and 0.92, CPU 0.68 and 0.84;
  200,000: 0.72 and 0.91, CPU 0.67 and 0.77; 125-136 MiB;
- the same code on another machine (the floor 2.71 s at 100,000), inside ``make bench``: 20,000:
  1.13, CPU 0.95; 100,000: 0.79, CPU 0.71; 200,000: 0.81, CPU 0.68; 124-134 MiB;
- on a machine three times slower (the floor 7.81 s at 100,000), inside ``make bench``: 20,000:
  1.10, CPU 0.98; 100,000: 8.26 / 7.81 s (1.06), CPU 0.93; 200,000: 1.15, CPU 0.97; 123-134 MiB.
  Of ours at 100,000: the download 0.56 s, the parse and ``COPY`` 5.6 (CPU 5.3), the fold 0.65, all
  of it waiting for PostgreSQL, which sorted the hour to a temporary file (no statistics for rows
  just written); hashed instead (migration 019), the fold took 0.45 s, and alone the same day:
  20,000: 1.13, CPU 0.98; 100,000: 7.08 / 7.27 s (0.97), CPU 0.91; 200,000: 0.92, CPU 0.86;
  123-138 MiB.
- the next day, a machine three times faster again, inside ``make bench``: on PostgreSQL 15,
  20,000: 0.92, CPU 0.83; 100,000: 2.55 / 2.98 s (0.86), CPU 0.86; 200,000: 0.78, CPU 0.69;
  on the embedded 18, 20,000: 1.08, CPU 0.96; 100,000: 2.70 / 2.88 s (0.94), CPU 0.86; 200,000:
  0.81, CPU 0.69; 124-134 MiB. Alone an hour later (the floor 2.14-2.25 s at 100,000): 1.03,
  1.03 and 1.03, CPU 0.92, 0.92 and 0.90; the tree before the rows' refusal of too-large costs
  0.98, CPU 0.88 (ours 2.17 / 2.22 s); 20,000: 1.02-1.10; 200,000: 0.70-0.81; 123-134 MiB.
- msgspec replaced by the standard library's ``json`` (numbers as exact ``Decimal``s) and
  pydantic's ``validate_python`` (issue 31), at load 8 to 32 on 2 CPUs, three runs each: 20,000:
  CPU 0.91 / 0.39 s (2.34; the tree before: 0.36 / 0.39 s, 0.93); 100,000: CPU 4.78 / 1.96 s
  (2.44; before: 1.85 / 2.30 s, 0.80), wall 18.3 / 5.6 s (3.25; before 4.96 / 4.30 s, 1.15);
  132 MiB both. The stream and the rows alone (no database) at 100,000: CPU 4.0 s against 1.45
  with msgspec; sampled (before the collector's pause, 4.8 s), ``json.loads`` took 39%,
  pydantic's ``validate_python`` 26%, ``RowBuilder.lines`` 19%, the window's bytes 8%.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.common import median, sandbox_opencost
from finops.allocations import DEFAULT_AGGREGATION
from infra.postgres import Database, apply_migrations, connect
from sandbox.postgres import embedded_postgres, scratch_database

SIZES = (20_000, 100_000, 200_000)
REPEATS = {20_000: 3, 100_000: 2, 200_000: 1}
SHARD_SIZE = 200_000
SHARD_NAMESPACES = 10  # the synthetic cluster has 50 namespaces: 5 batches


@contextlib.contextmanager
def file_server(answers: dict[str, Path]) -> Iterator[str]:
    """A GET of one of ``answers``' paths (``/allocation``, ``/assets``) answers its file's bytes
    (OpenCost's answers recorded from the sandbox), whatever the query; any other path 404."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = answers.get(self.path.split("?", 1)[0])
            if path is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(path.stat().st_size))
            self.end_headers()
            with path.open("rb") as source:
                shutil.copyfileobj(source, self.wfile, 1 << 20)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def point(
    mode: str, url: str, dsn: str, cluster: str, hour: int, shards: int = 0, cold: bool = False
) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.ingest_point", mode, "--url", url, "--dsn", dsn, "--cluster", cluster]
    argv += ["--hour", str(hour), "--shard-namespaces", str(shards)] + (["--cold"] if cold else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=os.environ)
    if done.returncode:
        raise RuntimeError(f"bench.ingest_point {mode} failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


WINDOW = "2026-01-05T00:00:00Z,2026-01-05T01:00:00Z"
RECORDED = {  # what the hour's path asks OpenCost for: its allocations and its assets
    "/allocation": {
        "aggregate": DEFAULT_AGGREGATION,
        "accumulate": "true",
        "includeIdle": "true",
        "shareIdle": "false",
    },
    "/assets": {"accumulate": "true", "filterTypes": "Node,Disk,LoadBalancer"},
}


def record(url: str, scratch: Path, size: int) -> dict[str, Path]:
    """The sandbox's answers for hour 0 (``RECORDED``), each into a file of ``scratch``."""
    answers: dict[str, Path] = {}
    for path, params in RECORDED.items():
        answers[path] = scratch / f"{path.strip('/')}-{size}.json"
        with (
            httpx.stream("GET", f"{url}{path}", params={**params, "window": WINDOW}, timeout=600) as response,
            answers[path].open("wb") as out,
        ):
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 20):
                out.write(chunk)
    return answers


def differing_rows(db: Database, one: str, other: str) -> int:
    """Rows of cluster ``one`` not in ``other`` and the reverse, every column but the cluster."""
    columns = "namespace, name, aggregation, hour, entry_kind, controller_kind, controller, pod, container, node, "
    columns += "data_start, data_end, minutes, cpu_cores, cpu_core_hours, ram_bytes, ram_byte_hours, gpu_hours, "
    columns += "pv_byte_hours, cpu_cost_micros, gpu_cost_micros, ram_cost_micros, pv_cost_micros, "
    columns += "network_cost_micros, lb_cost_micros, total_cost_micros, team, cost_center, currency"
    query = (
        f"SELECT count(*) AS n FROM ((SELECT {columns} FROM provider_allocations WHERE cluster = %(a)s"
        f" EXCEPT ALL SELECT {columns} FROM provider_allocations WHERE cluster = %(b)s)"
        f" UNION ALL (SELECT {columns} FROM provider_allocations WHERE cluster = %(b)s"
        f" EXCEPT ALL SELECT {columns} FROM provider_allocations WHERE cluster = %(a)s)) d"
    )
    with db.connection() as conn:
        row = conn.execute(query, {"a": one, "b": other}).fetchone()
    return int(row["n"]) if row else -1


@contextlib.contextmanager
def database() -> Iterator[tuple[Database, str]]:
    """A migrated scratch database and its DSN (the figures' processes connect to it too)."""
    with contextlib.ExitStack() as stack:
        server = os.environ.get("DATABASE_URL") or stack.enter_context(embedded_postgres())
        dsn = stack.enter_context(scratch_database(server, prefix="finops_bench"))
        db = connect(dsn, max_size=2)
        apply_migrations(db)
        try:
            yield db, dsn
        finally:
            db.close()


def main() -> None:
    with database() as (db, dsn), tempfile.TemporaryDirectory(prefix="finops-bench-") as scratch:
        print("ingest: one hour, a fresh process per figure (ours: fetch + streamed parse + COPY + assets + ledger)")
        print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times vary with it; CPU less)")
        print(
            f"  {'containers':>10}  {'answer':>9}  {'ours':>8}  {'floor':>8}  {'ratio':>5}"
            f"  {'ours CPU':>8}  {'floor CPU':>9}  {'ratio':>5}  {'ours peak RSS':>13}"
        )
        hour = 0
        for size in SIZES:
            with sandbox_opencost(size) as url:
                answers = record(url, Path(scratch), size)
            mib = answers["/allocation"].stat().st_size / 2**20
            with file_server(answers) as url:
                ours, floors = [], []
                for _ in range(REPEATS[size]):
                    hour += 1
                    ours.append(point("ours", url, dsn, f"ours-{size}", hour))
                    floors.append(point("floor", url, dsn, f"floor-{size}", hour))
            for path in answers.values():
                path.unlink()
            ours_s, floor_s = median([o["seconds"] for o in ours]), median([f["seconds"] for f in floors])
            ours_cpu, floor_cpu = median([o["cpu_seconds"] for o in ours]), median([f["cpu_seconds"] for f in floors])
            rss = max(o["rss_mib"] for o in ours)
            print(
                f"  {size:>10,}  {mib:>5.0f} MiB  {ours_s:>6.2f} s  {floor_s:>6.2f} s  {ours_s / floor_s:>5.2f}"
                f"  {ours_cpu:>6.2f} s  {floor_cpu:>7.2f} s  {ours_cpu / floor_cpu:>5.2f}"
                f"  {rss:>9.0f} MiB   (median of {REPEATS[size]}; target <= 1.0 and < 256 MiB)"
            )
        with sandbox_opencost(SHARD_SIZE) as url:
            single = point("ours", url, dsn, "single", 500, cold=True)
            sharded = point("ours", url, dsn, "sharded", 500, shards=SHARD_NAMESPACES, cold=True)
        diff = differing_rows(db, "single", "sharded")
        print(
            f"  shards at {SHARD_SIZE:,} containers from the sandbox (its computing included): one request "
            f"{single['seconds']:.1f} s, {SHARD_NAMESPACES} namespaces a batch {sharded['seconds']:.1f} s "
            f"(peak RSS {single['rss_mib']:.0f} / {sharded['rss_mib']:.0f} MiB); rows {sharded['rows']:,}, "
            f"differing from the single request's: {diff}"
        )
