"""A month of 2,000 namespaces exported as FOCUS 1.3 Parquet: ours against pyarrow alone.

- ours: ``usecases.reports.exports.export_focus(..., version=1.3, fmt=parquet)`` to a local file:
  the daily rollups read from PostgreSQL, the chargeback settled, every origin charge split and
  rounded (``finops.focus_split``), the rows written by pyarrow in row groups;
- floor, same run, same rows: ``pyarrow.parquet.write_table`` of the very rows ours wrote, given
  as Python values already typed (the least any exporter of these rows pays).

Also printed: where our time goes (the rollup query, building and rounding the rows, writing),
the same export as FOCUS 1.2 and as CSV, and the peak RSS of a fresh process running the export
(the data generation's memory not counted). The data is ``bench.chargeback``'s month: 2,000
namespaces of 40 teams over 31 days, idle kept apart, two shared namespaces and a fixed fee.

Then the reconciled month: ``bench.reconcile``'s 30-node cluster (3,000 containers every hour of
November, a bill line per node and day, a credit and a tax) exported on ``--basis billed`` as 1.3
Parquet, split from the bill's lines, against the same floor, with its peak RSS.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench import chargeback, reconcile
from bench.common import database, high_water_mib, peak_rss
from finops.focus_rows import DATETIMES, DECIMALS, FocusVersion
from finops.policy import parse_policy
from finops.reconcile_policy import Basis
from infra.objectstore import ObjectStore
from infra.postgres import Database, connect
from usecases.reports import exports, focus_files, service
from usecases.reports.focus_files import FileFormat
from usecases.reports.reconciled import read as reconciled_read

REPEATS = 3
MONTH = "2026-10"


def _export(
    db: Database, folder: str, version: FocusVersion = FocusVersion.V1_3, fmt: FileFormat = FileFormat.PARQUET
) -> Any:
    policy = parse_policy(chargeback.POLICY)
    return exports.export_focus(
        db, policy, MONTH, f"{folder}/", ObjectStore(), cluster="bench", version=version, fmt=fmt
    )


def _median(fn: Callable[[], object]) -> float:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _typed(path: Path) -> tuple[pa.Schema, list[dict[str, Any]]]:
    table = pq.read_table(path)
    return table.schema, table.to_pylist()


def _written(export: Any, folder: str, spent: dict[str, float]) -> dict[str, float]:
    """``spent`` plus the time of writing ``export``'s rows to Parquet."""
    start = time.perf_counter()
    with open(f"{folder}/split.parquet", "wb") as out:
        focus_files.write(export, out, FileFormat.PARQUET)
    return spent | {"rows to Parquet": time.perf_counter() - start}


def _split(db: Database, folder: str) -> dict[str, float]:
    """Where one export's time goes."""
    policy = parse_policy(chargeback.POLICY)
    start = time.perf_counter()
    export = exports.focus_export(db, policy, MONTH, cluster="bench", version=FocusVersion.V1_3)
    return _written(export, folder, {"query, settle, split and round": time.perf_counter() - start})


def _billed(db: Database, folder: str) -> Any:
    policy = parse_policy(reconcile.POLICY)
    return exports.export_focus(
        db, policy, reconcile.MONTH, f"{folder}/", ObjectStore(), cluster=reconcile.CLUSTER, basis="billed",
        fmt=FileFormat.PARQUET,
    )  # fmt: skip


def _billed_split(db: Database, folder: str) -> dict[str, float]:
    """Where one billed export's time goes."""
    policy = parse_policy(reconcile.POLICY)
    start = time.perf_counter()
    reconciled_read(db, policy, service.month_period(reconcile.MONTH), [reconcile.CLUSTER], Basis.BILLED)
    read = time.perf_counter() - start
    start = time.perf_counter()
    export = exports.focus_export(db, policy, reconcile.MONTH, cluster=reconcile.CLUSTER, basis="billed")
    spent = {"read and reconcile": read, "split and round": time.perf_counter() - start - read}
    return _written(export, folder, spent)


def _rss_point(dsn: str, billed: bool) -> None:
    db = connect(dsn, max_size=2)
    before = high_water_mib()
    with tempfile.TemporaryDirectory() as folder:
        (_billed if billed else _export)(db, folder)
    peak = high_water_mib()
    db.close()
    print(json.dumps({"before": before, "peak": peak}))


def main() -> None:
    with database() as db, tempfile.TemporaryDirectory() as folder:
        with db.connection() as conn:
            db.copy_rows(conn, "allocation_daily", chargeback.COLUMNS, chargeback._rows())
            conn.execute("ANALYZE allocation_daily")
        result = _export(db, folder)
        ours = _median(lambda: _export(db, folder))
        schema, rows = _typed(Path(result.url))
        floor = _median(lambda: pq.write_table(pa.Table.from_pylist(rows, schema=schema), f"{folder}/floor.parquet"))
        v12 = _median(lambda: _export(db, folder, FocusVersion.V1_2))
        csv = _median(lambda: _export(db, folder, fmt=FileFormat.CSV))
        spent = _split(db, folder)
        dsn = db.pool.conninfo
        assert isinstance(dsn, str)
        rss_before, rss_peak = peak_rss("bench.focus_export", dsn)
    typed = sum(1 for field in schema if field.name in DECIMALS | DATETIMES)
    print(
        f"focus_export: a month of {chargeback.NAMESPACES:,} namespaces x {chargeback.DAYS} days as FOCUS 1.3 "
        f"Parquet: {result.rows:,} rows x {len(schema)} columns ({typed} decimal or timestamp), total {result.total}"
    )
    print(f"  ours  export_focus to Parquet, 1.3        median of {REPEATS}: {ours * 1000:8.0f} ms")
    print(f"  floor pyarrow write_table, the same rows  median of {REPEATS}: {floor * 1000:8.0f} ms")
    print(f"  ratio ours/floor: {ours / floor:.1f} (target 1.5)")
    print(f"  the same month as FOCUS 1.2 Parquet: {v12 * 1000:.0f} ms; as 1.3 CSV: {csv * 1000:.0f} ms")
    total = sum(spent.values())
    where = ", ".join(f"{name} {seconds * 1000:.0f} ms ({seconds / total:.0%})" for name, seconds in spent.items())
    print(f"  one export, {total * 1000:.0f} ms: {where}")
    print(f"  peak RSS of a fresh process running the export: {rss_peak:.0f} MiB (before: {rss_before:.0f} MiB)")
    reconciled()


def reconciled() -> None:
    with database() as db, tempfile.TemporaryDirectory() as folder:
        hourly = reconcile.generate(db, reconcile.CONTAINERS, reconcile.DAYS)
        result = _billed(db, folder)  # the first also stores the month's settled days per node
        ours = _median(lambda: _billed(db, folder))
        schema, rows = _typed(Path(result.url))
        floor = _median(lambda: pq.write_table(pa.Table.from_pylist(rows, schema=schema), f"{folder}/floor.parquet"))
        spent = _billed_split(db, folder)
        dsn = db.pool.conninfo
        assert isinstance(dsn, str)
        rss_before, rss_peak = peak_rss("bench.focus_export", dsn, "--billed")
    print(
        f"focus_export, reconciled: {reconcile.NODES} nodes, {reconcile.CONTAINERS:,} containers x "
        f"{24 * reconcile.DAYS} hours ({hourly:,} hourly rows) on basis=billed as FOCUS 1.3 Parquet: "
        f"{result.rows:,} rows, total {result.total}"
    )
    print(f"  ours  export_focus --basis billed to Parquet median of {REPEATS}: {ours * 1000:8.0f} ms")
    print(f"  floor pyarrow write_table, the same rows    median of {REPEATS}: {floor * 1000:8.0f} ms")
    print(f"  ratio ours/floor: {ours / floor:.1f} (target 1.5)")
    total = sum(spent.values())
    where = ", ".join(f"{name} {seconds * 1000:.0f} ms ({seconds / total:.0%})" for name, seconds in spent.items())
    print(f"  one export, {total * 1000:.0f} ms: {where}")
    print(f"  peak RSS of a fresh process running the export: {rss_peak:.0f} MiB (before: {rss_before:.0f} MiB)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        _rss_point(sys.argv[2], billed="--billed" in sys.argv[3:])
    elif sys.argv[1:2] == ["--reconciled"]:
        reconciled()
    else:
        main()
