"""Ingest of one hour at 20,000, 100,000 and 200,000 containers: ours against a floor.

- ours: ``collect_allocations``' per-hour path (fetch to a spool file, streamed parse with exact
  decimals into ``COPY``, the hour's assets, record the hour) on a fresh hour;
- floor: ``json.loads`` of the same response bytes (garbage collector off) plus a plain ``COPY``
  of the same rows into ``provider_allocations``.

Every figure runs in a fresh process (``bench.ingest_point``), so a peak RSS is that figure's
alone (not the floor's, not a warm-up's). The sandbox computes each size's answer once; the timed
fetches are then served from that file (and the hour's ``/assets`` answer from its own) by a
plain HTTP server here, so they measure transfer, not the simulator. Last, the 200,000-container
hour is ingested from the sandbox itself once in one request and once in namespace batches
(``OPENCOST_SHARD_NAMESPACES``), timed end to end (OpenCost's computing included), and the two
clusters' rows are compared column for column.

The ratio printed is ours over the floor, wall and CPU, at each size, with ours' peak RSS (bounded
by a window of the answer, whatever the hour's size). At 100,000 containers the same ingest is
followed by the hour's fleet file (``FLEET_BUCKET``, to a local folder), timed against it.
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
FLEET_SIZE = 100_000  # the hour whose fleet file is timed (FLEET_BUCKET's cost on the ingest)


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
    mode: str, url: str, dsn: str, cluster: str, hour: int, shards: int = 0, cold: bool = False, fleet: str = ""
) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.ingest_point", mode, "--url", url, "--dsn", dsn, "--cluster", cluster]
    argv += ["--hour", str(hour), "--shard-namespaces", str(shards)] + (["--cold"] if cold else [])
    argv += ["--fleet", fleet] if fleet else []
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
        hour, fleet_line = 0, ""
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
                if size == FLEET_SIZE:  # the same ingest, then the hour's fleet file
                    hour += 1
                    fleet = point("ours", url, dsn, "fleet", hour, fleet=f"{scratch}/fleet/")
                    fleet_line = (
                        f"  fleet file of the {size:,}-container hour: {fleet['fleet_seconds']:.2f} s after an ingest "
                        f"of {fleet['seconds']:.2f} s: +{fleet['fleet_seconds'] / fleet['seconds']:.0%} (target <= 10%)"
                    )
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
        print(fleet_line)
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


if __name__ == "__main__":
    main()
