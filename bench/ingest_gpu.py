"""Ingest of one hour of 20,000 containers, 2,000 of them on shared GPUs, against the same hour
without GPU figures.

- ours: ``collect_allocations``' per-hour path (``bench.ingest_point ours``: fetch over HTTP to a
  spool file, streamed parse into ``COPY``, the hour's assets, the GPU split, the day's rollup, the
  ledger, the commit) on the sandbox's synthetic hour with ``gpu_containers=2000``: every one of
  the 200 nodes has one time-sliced GPU shared by 10 pods, each of which reports a
  ``gpuAllocation``, and the node assets price the GPUs, so the split runs;
- floor: the same path on the same hour without GPUs (``synthetic(20000)``: the same containers
  on the same nodes, no ``gpuAllocation``, no GPU assets), so nothing to split.

Both answers are computed once by the sandbox OpenCost and then served from files (as in
``bench.ingest``), so the timed fetches are transfer, not the simulator. Every figure runs in a
fresh process; the two hours are interleaved, in alternating order, repeat after repeat, and the
medians are compared: wall time, the process's CPU, and that CPU plus its PostgreSQL backends'
(where the split's statements run; read from ``/proc`` when the server is on this machine, a
steadier figure than wall time on a busy one). The stored rows are then checked: each GPU hour has its split (every GPU
row priced by it, an ``__idle__/gpu:<model>`` row, ``allocation_hours.gpu_basis`` set), each plain
hour has none.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from bench.common import median, sandbox_opencost
from bench.ingest import database, file_server, point, record
from infra.postgres import Database

CONTAINERS = 20_000
GPU_CONTAINERS = 2_000
GPUS = 200  # one per node (a node per 100 containers)
GPU_HOURLY_MICROS = 800_000  # the synthetic GPU's 0.80 an hour
REPEATS = 9
TARGET = 1.1


def check_split(db: Database, hours: int) -> str:
    """What the stored rows say of the split, per cluster; ``RuntimeError`` unless every GPU hour
    was split (and no plain hour was), which would make the comparison meaningless."""
    query = """
        SELECT h.cluster, h.hour, h.gpu_basis,
               count(*) FILTER (WHERE p.entry_kind = 'workload' AND p.gpu_cost_micros > 0) AS gpu_rows,
               count(*) FILTER (WHERE p.name LIKE '\\_\\_idle\\_\\_/gpu:%%') AS idle_rows,
               coalesce(sum(p.gpu_cost_micros), 0) AS gpu_micros
        FROM allocation_hours h JOIN provider_allocations p USING (cluster, aggregation, hour)
        WHERE h.cluster IN ('gpu', 'plain') AND h.hour < '2026-01-06'
        GROUP BY h.cluster, h.hour, h.gpu_basis
    """
    with db.connection() as conn:
        found: list[dict[str, Any]] = conn.execute(query).fetchall()
    gpu = [r for r in found if r["cluster"] == "gpu"]
    plain = [r for r in found if r["cluster"] == "plain"]
    split = [
        r
        for r in gpu
        if r["gpu_basis"]
        and r["gpu_rows"] == GPU_CONTAINERS
        and r["idle_rows"] == 1
        and r["gpu_micros"] == GPUS * GPU_HOURLY_MICROS
    ]
    unsplit = [r for r in plain if r["gpu_basis"] is None and r["idle_rows"] == 0 and r["gpu_micros"] == 0]
    if len(split) != hours or len(unsplit) != hours:
        raise RuntimeError(f"bench.ingest_gpu: the split did not run as expected: {found}")
    return (
        f"  stored: each of the {hours} GPU hours split by {split[0]['gpu_basis']!r} ({GPU_CONTAINERS:,} GPU rows "
        f"priced, one __idle__/gpu:<model> row, the {GPUS} GPUs' cost to the micro); no plain hour split"
    )


def main() -> None:
    with database() as (db, dsn), tempfile.TemporaryDirectory(prefix="finops-bench-") as scratch:
        print(
            f"ingest_gpu: one hour of {CONTAINERS:,} containers, {GPU_CONTAINERS:,} of them on {GPUS} time-sliced "
            "GPUs, against the same hour without GPUs (fetch + parse + COPY + assets + GPU split + rollup + commit)"
        )
        print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times vary with it; CPU less)")
        answers = {}
        for name, gpus in (("plain", 0), ("gpu", GPU_CONTAINERS)):
            folder = Path(scratch) / name
            folder.mkdir()
            with sandbox_opencost(CONTAINERS, gpus) as url:
                answers[name] = record(url, folder, CONTAINERS)
        figures: dict[str, list[dict[str, Any]]] = {"plain": [], "gpu": []}
        with file_server(answers["plain"]) as plain_url, file_server(answers["gpu"]) as gpu_url:
            urls = {"plain": plain_url, "gpu": gpu_url}
            for repeat in range(REPEATS):  # interleaved, in alternating order
                for name in ("plain", "gpu") if repeat % 2 == 0 else ("gpu", "plain"):
                    figures[name].append(point("ours", urls[name], dsn, name, repeat + 1))
        print(
            f"  {'hour':<16}  {'answer':>9}  {'wall':>8}  {'CPU':>8}  {'+ PostgreSQL':>12}  {'GPU split':>9}"
            f"  {'peak RSS':>8}"
        )
        medians: dict[str, tuple[float, float, float | None]] = {}
        for name, label in (("plain", "without GPUs"), ("gpu", f"{GPU_CONTAINERS:,} on GPUs")):
            mine = figures[name]
            both = [f["cpu_seconds"] + f["postgres_cpu_seconds"] for f in mine if f["postgres_cpu_seconds"] is not None]
            medians[name] = (
                median([f["seconds"] for f in mine]),
                median([f["cpu_seconds"] for f in mine]),
                median(both) if len(both) == len(mine) else None,
            )
            wall, cpu, with_server = medians[name]
            server = "-" if with_server is None else f"{with_server:.2f} s"
            print(
                f"  {label:<16}  {answers[name]['/allocation'].stat().st_size / 2**20:>5.0f} MiB  {wall:>6.2f} s"
                f"  {cpu:>6.2f} s  {server:>12}  {median([f['split_seconds'] for f in mine]):>7.3f} s"
                f"  {max(f['rss_mib'] for f in mine):>4.0f} MiB"
            )
        (wall, cpu, server_cpu), (plain_wall, plain_cpu, plain_server) = medians["gpu"], medians["plain"]
        ratios = f"wall {wall / plain_wall:.2f}, CPU {cpu / plain_cpu:.2f}"
        if server_cpu is not None and plain_server is not None:
            ratios += f", CPU with PostgreSQL's {server_cpu / plain_server:.2f}"
        print(f"  with/without GPUs: {ratios}   (median of {REPEATS}; target <= {TARGET})")
        print(check_split(db, REPEATS))


if __name__ == "__main__":
    main()
