"""The daily rollup refresh after one hour of 20,000 containers: the fold against the old rebuild.

- ours: ``usecases.rollups``' fold of one hour written into its day (``unfold_hour`` before the
  hour's rows are replaced, ``fold_hour`` after, in the hour's transaction), for a new hour and for
  a replaced one (its old rows subtracted, its new rows added);
- the old refresh, same run, same tables: ``rebuild_day``, the whole day recomputed from its
  hourly rows (what every run did after writing an hour).

Each is timed at a day's 1st hour (the day holds that hour alone) and at a day's 24th (the day is
full), with other full days in the same month partition. The two days are measured alternately,
repeat after repeat, so a load that drifts on a shared machine weighs on both alike; medians are
printed. The fold must stay flat as the day fills; the rebuild grows with it. Rows are generated
in SQL (untimed): the benchmark is the rollup, not the ingest.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

from bench.common import database, median
from infra.postgres import Database
from usecases.rollups import fold_hour, rebuild_day, unfold_hour

CONTAINERS = 20_000
NAMESPACES = 500
OTHER_DAYS = 2  # full days in the month partition besides the two measured
REPEATS = 5
REBUILDS = 3  # a rebuild of a full day costs seconds
CLUSTER = "bench"
AGGREGATION = "namespace,controllerKind,controller,pod,container"
FULL_DAY = datetime(2026, 3, 10, tzinfo=UTC)  # 24 hours stored; its 24th is measured
FIRST = datetime(2026, 3, 11, tzinfo=UTC)  # the next day's 1st hour, alone in its day
LAST = FULL_DAY + timedelta(hours=23)

# One hour of synthetic rows: CONTAINERS containers over NAMESPACES namespaces (owners on 9 of
# every 10), figures with decimals as OpenCost sends them, and the cluster's idle row. ``salt``
# changes every figure, so a replaced hour has other rows than the one it replaces.
HOUR_ROWS = """
INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind, controller_kind,
    controller, pod, container, minutes, cpu_core_request_avg, cpu_core_usage_avg, cpu_core_hours,
    ram_byte_request_avg, ram_byte_usage_avg, ram_byte_hours, cpu_cost_micros, ram_cost_micros,
    total_cost_micros, team, cost_center, currency, is_finalized)
SELECT %(cluster)s, 'ns-' || lpad((c %% %(namespaces)s)::text, 4, '0'), 'c-' || c, %(aggregation)s, %(hour)s,
       'workload', 'Deployment', 'app-' || (c / 10), 'pod-' || c, 'main', 60,
       0.25 + (c %% 7) * 0.125 + %(salt)s * 0.001, 0.1 + (c %% 5) * 0.05, 0.25 + (c %% 7) * 0.125,
       536870912 + (c %% 9) * 1048576.5, 268435456 + (c %% 3) * 4096, 536870912 + (c %% 9) * 1048576.5,
       12000 + c %% 997 + %(salt)s, 3000 + c %% 499, 15000 + c %% 997 + c %% 499 + %(salt)s,
       CASE WHEN c %% 10 <> 0 THEN 'team-' || (c %% %(namespaces)s %% 40) END, 'cc-1', 'USD', false
FROM generate_series(1, %(containers)s) c
UNION ALL
SELECT %(cluster)s, '', '__idle__', %(aggregation)s, %(hour)s, 'idle', NULL, NULL, NULL, NULL, 60,
       NULL, NULL, 64, NULL, NULL, 274877906944, 900000 + %(salt)s, 300000, 1200000 + %(salt)s, NULL, NULL, 'USD',
       false
"""

LEDGER = """
INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, currency, run_id)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, 'open', %(containers)s + 1, 'USD', %(run_id)s)
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET row_count = EXCLUDED.row_count
"""


def _write(db: Database, hour: datetime, containers: int, *, salt: int = 0, replace: bool = False) -> float:
    """Write one hour as ``_write_hour`` does (unfold, delete, insert, ledger, fold) in one
    transaction; returns the seconds spent in the fold (unfold + fold) alone."""
    key = {"cluster": CLUSTER, "aggregation": AGGREGATION, "hour": hour}
    params = {**key, "namespaces": NAMESPACES, "containers": containers, "salt": salt, "run_id": str(uuid.uuid4())}
    with db.connection() as conn:
        start = time.perf_counter()
        folding = unfold_hour(db, conn, key, "USD")
        spent = time.perf_counter() - start
        if replace:
            db.execute("delete_allocation_hour", conn, **key)
        conn.execute(HOUR_ROWS, params)
        conn.execute(LEDGER, params)
        start = time.perf_counter()
        fold_hour(db, conn, key, folding)
        spent += time.perf_counter() - start
    if not folding:
        raise AssertionError(f"bench: hour {hour} was not folded (its day is marked)")
    return spent


def _remove(db: Database, hour: datetime) -> None:
    """Take an hour out again (rows, ledger entry and its share of the rollup), untimed."""
    key = {"cluster": CLUSTER, "aggregation": AGGREGATION, "hour": hour}
    with db.connection() as conn:
        if not unfold_hour(db, conn, key, "USD"):
            raise AssertionError(f"bench: hour {hour} was not folded (its day is marked)")
        db.execute("delete_allocation_hour", conn, **key)
        conn.execute("DELETE FROM allocation_hours WHERE cluster = %(cluster)s AND hour = %(hour)s", key)


def _rebuild(db: Database, day: datetime) -> float:
    start = time.perf_counter()
    rebuild_day(db, CLUSTER, AGGREGATION, day.date())
    return time.perf_counter() - start


def main(containers: int = CONTAINERS, other_days: int = OTHER_DAYS) -> None:
    fold: dict[datetime, list[float]] = {FIRST: [], LAST: []}
    replace: dict[datetime, list[float]] = {FIRST: [], LAST: []}
    rebuild: dict[datetime, list[float]] = {FIRST: [], LAST: []}
    with database() as db:
        db.execute("ensure_allocation_partition", hour=FULL_DAY)
        for n in range(24 * other_days + 24):
            _write(db, FULL_DAY - timedelta(days=other_days) + timedelta(hours=n), containers)
        _write(db, FIRST, containers)
        with db.connection() as conn:  # as autovacuum would have by now (VACUUM runs outside a transaction)
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE provider_allocations")
            conn.execute("VACUUM ANALYZE allocation_daily")
            conn.autocommit = False
        for repeat in range(REPEATS):
            for hour in (FIRST, LAST):
                _remove(db, hour)
                fold[hour].append(_write(db, hour, containers, salt=repeat))
                replace[hour].append(_write(db, hour, containers, salt=repeat + 1, replace=True))
        for _ in range(REBUILDS):
            for hour in (FIRST, LAST):
                rebuild[hour].append(_rebuild(db, hour))
    ms = {
        name: {h: median(t) * 1000 for h, t in times.items()}
        for name, times in (("fold", fold), ("replace", replace), ("rebuild", rebuild))
    }
    print(
        f"rollups: refreshing a day's rollup after one hour of {containers:,} containers ({NAMESPACES} namespaces), "
        f"{other_days} other full day(s) in the month partition"
    )
    for name, label, runs in (
        ("fold", "ours  fold of a new hour     ", REPEATS),
        ("replace", "ours  fold of a replaced hour", REPEATS),
        ("rebuild", "old   full-day rebuild       ", REBUILDS),
    ):
        print(
            f"  {label}  median of {runs}: 1st hour of a day {ms[name][FIRST]:6.0f} ms   "
            f"24th hour {ms[name][LAST]:6.0f} ms   (24th/1st {ms[name][LAST] / ms[name][FIRST]:.2f})"
        )
    print("  target: fold 24th/1st <= 1.5 (flat: one hour's rows, whatever the day holds)")
    print(
        f"  ratio old rebuild / fold at the 24th hour: {ms['rebuild'][LAST] / ms['replace'][LAST]:.1f}x "
        f"(replaced hour), {ms['rebuild'][LAST] / ms['fold'][LAST]:.1f}x (new hour)"
    )


if __name__ == "__main__":
    main()
