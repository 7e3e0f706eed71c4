"""Shared benchmark plumbing: a real PostgreSQL and a sandbox process."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from infra.postgres import Database, apply_migrations, connect
from sandbox.postgres import embedded_postgres, scratch_database


@contextlib.contextmanager
def database() -> Iterator[Database]:
    """A migrated scratch database on ``DATABASE_URL``'s server, else on an embedded one."""
    with contextlib.ExitStack() as stack:
        server = os.environ.get("DATABASE_URL") or stack.enter_context(embedded_postgres())
        dsn = stack.enter_context(scratch_database(server, prefix="finops_bench"))
        db = connect(dsn, max_size=4)
        apply_migrations(db)
        try:
            yield db
        finally:
            db.close()


@contextlib.contextmanager
def sandbox_opencost(containers: int, gpu_containers: int = 0) -> Iterator[str]:
    """The sandbox OpenCost in its own process, so our process's memory is ours alone; with
    ``gpu_containers``, that many of the synthetic cluster's containers share time-sliced GPUs."""
    argv = [sys.executable, "-m", "sandbox.opencost", "--synthetic", str(containers), "--port", "0"]
    process = subprocess.Popen(
        argv + (["--gpu-containers", str(gpu_containers)] if gpu_containers else []),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        process.terminate()
        process.wait(10)


def median(values: list[float]) -> float:
    return statistics.median(values)


def high_water_mib() -> float:
    """This process's peak RSS so far. Not ``getrusage``'s ``ru_maxrss``: Linux keeps it across
    ``fork`` and ``exec``, so a child would report the parent's peak (the generated data)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("bench: no VmHWM in /proc/self/status (Linux only)")


def peak_rss(module: str, dsn: str, *more: str) -> tuple[float, float]:
    """(MiB after start-up, peak MiB) of a fresh ``python -m <module> --rss <dsn> [more]``, which
    prints ``{"before": ..., "peak": ...}`` (``high_water_mib`` around its one run) as its last line."""
    argv = [sys.executable, "-m", module, "--rss", dsn, *more]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=os.environ)
    if done.returncode:
        raise RuntimeError(f"{module} --rss failed: {done.stderr[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return float(found["before"]), float(found["peak"])
