"""A fleet month from the fleet bucket: 20 clusters x 2,000 containers x 30 days (28.8 M hourly
rows) as Parquet files in the bucket's layout, read by the fleet chargeback.

- ours: ``usecases.reports.fleet.fleet_chargeback`` through DuckDB: the month's files listed,
  read through pyarrow, the daily rollup summed over the month, the policy applied, the coverage
  built; and the same through chDB (ClickHouse's engine), beside it;
- floor, same run, same files: a bare DuckDB ``GROUP BY cluster, namespace, day`` over
  ``read_parquet`` of the same files (the least any report of them pays).

Also printed: the peak RSS of a fresh process running our DuckDB report, and the files' size per
cluster-day (the sizing page's figure). The files are written to a local folder, as the collector
writes them (``infra.fleet.write_hour``), with rows built directly: 2,000 containers per cluster
in 200 namespaces of 20 teams, every hour of November, costs varying by container and hour.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import high_water_mib, median, peak_rss
from finops.policy import parse_policy
from infra.fleet import COLUMNS, DICTIONARY, schema
from usecases.reports.fleet import fleet_chargeback
from usecases.reports.service import month_period

CLUSTERS = 20
CONTAINERS = 2_000
DAYS = 30
MONTH = "2026-11"
FIRST = datetime(2026, 11, 1, tzinfo=UTC)
REPEATS = 3
POLICY = {"currency": "USD", "idle": "distribute", "shared": {"namespaces": ["ns-000"], "split": "proportional"}}
FLOOR = """
SELECT cluster, namespace, epoch_us(hour) // 86400000000 AS day, sum(total_cost_micros) AS micros
FROM read_parquet(?)
GROUP BY ALL
"""


def generate(folder: Path, clusters: int = CLUSTERS, containers: int = CONTAINERS, days: int = DAYS) -> int:
    """The fleet's hourly files under ``folder``, a cluster per process on every core; returns
    their total size in bytes."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor() as pool:
        jobs = [pool.submit(_cluster_files, folder, c, containers, days) for c in range(clusters)]
        return sum(job.result() for job in jobs)


def _cluster_files(folder: Path, c: int, containers: int, days: int) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    shape = schema()
    size = 0
    cluster = f"cluster-{c:02d}"
    base: dict[str, pa.Array] = {}
    for name in COLUMNS:
        if shape.field(name).type == pa.int64():
            base[name] = pa.array([(i * 7919 + c * 104729) % 900_000 + 1_000 for i in range(containers)], pa.int64())
        elif name not in ("hour", "data_start", "data_end"):
            base[name] = pa.array([_text(name, cluster, i) for i in range(containers)], pa.string())
    for h in range(24 * days):
        hour = FIRST + timedelta(hours=h)
        stamp = pa.array([hour] * containers, pa.timestamp("us", tz="UTC"))
        columns = base | {"hour": stamp, "data_start": stamp, "data_end": stamp}
        columns["total_cost_micros"] = pc.add(base["total_cost_micros"], h % 13)
        path = folder / f"cluster={cluster}/date={hour:%Y-%m-%d}/hour={hour:%H}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table([columns[name] for name in COLUMNS], schema=shape), path, use_dictionary=DICTIONARY)
        size += path.stat().st_size
    return size


def _text(name: str, cluster: str, i: int) -> str | None:
    namespace = f"ns-{i % 200:03d}"
    return {
        "cluster": cluster,
        "namespace": namespace,
        "name": f"{namespace}/pod-{i}/c",
        "aggregation": "namespace,controllerKind,controller,pod,container",
        "entry_kind": "idle" if i == 0 else "workload",
        "team": f"team-{i % 20:02d}",
        "cost_center": f"cc-{i % 5}",
        "currency": "USD",
        "source": "opencost",
        "pod": f"pod-{i}",
        "container": "c",
        "node": f"node-{i % 30}",
    }.get(name, "1.5" if name.endswith(("hours", "avg", "cores", "bytes", "minutes", "count")) else None)


def _report(folder: str, engine: str = "duckdb") -> object:
    return fleet_chargeback(folder, parse_policy(POLICY), month_period(MONTH), engine=engine)


def _floor(folder: str) -> object:
    import duckdb

    with duckdb.connect() as con:
        return con.execute(FLOOR, [f"{folder}cluster=*/date=*/hour=*.parquet"]).fetchall()


def _timed(fn: object, *args: object) -> float:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn(*args)  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return median(samples)


def _rss_point(folder: str) -> None:
    before = high_water_mib()
    _report(folder)
    print(json.dumps({"before": before, "peak": high_water_mib()}))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = f"{tmp}/"
        started = time.perf_counter()
        size = generate(Path(tmp))
        generated = time.perf_counter() - started
        report = _report(folder)
        assert report.total == _report(folder, "chdb").total  # type: ignore[attr-defined]
        ours = _timed(_report, folder)
        floor = _timed(_floor, folder)
        chdb = _timed(_report, folder, "chdb")
        rss_before, rss_peak = peak_rss("bench.fleet", folder)
    rows = CLUSTERS * CONTAINERS * 24 * DAYS
    print(
        f"fleet: {CLUSTERS} clusters x {CONTAINERS:,} containers x {DAYS} days ({rows:,} hourly rows, "
        f"{CLUSTERS * 24 * DAYS:,} files, {size / 2**20:,.0f} MiB; written in {generated:.0f} s), total {report.total}"  # type: ignore[attr-defined]
    )
    print(f"  ours  fleet chargeback through DuckDB      median of {REPEATS}: {ours * 1000:8.0f} ms")
    print(f"  floor DuckDB GROUP BY cluster, namespace, day median of {REPEATS}: {floor * 1000:8.0f} ms")
    print(f"  ratio ours/floor: {ours / floor:.2f} (target 1.5)")
    print(f"  beside: the same report through chDB      median of {REPEATS}: {chdb * 1000:8.0f} ms")
    print(f"  peak RSS of a fresh process running the DuckDB report: {rss_peak:.0f} MiB (before: {rss_before:.0f} MiB)")
    per_day = size / (CLUSTERS * DAYS)
    print(f"  per cluster-day: {CONTAINERS * 24:,} rows, {per_day / 2**20:.2f} MiB of Parquet")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        _rss_point(sys.argv[2])
    else:
        main()
