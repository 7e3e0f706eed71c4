"""``finops verify``: the consistency check of the stored allocations.

For every cluster and aggregation: the hour ledger against the rows (every stored hour has a
ledger state, its row count is the rows' count, final hours hold only final rows and no other hour
holds any), the daily rollups against the rollup of the hourly rows (both ways, every figure),
days still marked for a rebuild, and each application's recorded days (``app_daily_costs``)
against its own rows summed again (hours, every cost, currency; and the scope they were recorded
in). An empty list means rows, ledger, rollups and the applications' days agree.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from finops.hours import Hour
from infra.postgres import Database


def verify(db: Database, cluster: str | None = None) -> list[str]:
    """Every disagreement found, one line each (empty when consistent)."""
    problems: list[str] = []
    for scope in db.fetch_all("ledger_scopes", cluster=cluster):
        key: dict[str, Any] = {"cluster": scope["cluster"], "aggregation": scope["aggregation"]}
        where = f"{scope['cluster']} ({scope['aggregation']})"
        for row in db.fetch_all("verify_ledger", **key):
            state = row["state"] or "no ledger hour"
            problems.append(
                f"{where} {Hour(row['hour'])}: ledger says {state} with {row['row_count']} row(s); "
                f"stored {row['rows']} row(s), {row['final_rows']} final"
            )
        for row in db.fetch_all("marked_days", **key):
            problems.append(f"{where} {row['day']}: rollup not rebuilt yet (the next collect_allocations run does it)")
        span = {"first_day": scope["first_day"], "end_day": scope["last_day"] + timedelta(days=1)}
        for row in db.fetch_all("verify_rollups", **key, **span):
            owner = row["team"] or "no owner"
            problems.append(
                f"{where} {row['day']}: {row['problem']}: namespace {row['namespace']!r} "
                f"({row['entry_kind']}, {owner}) total {row['total_cost_micros']} micros"
            )
        for row in db.fetch_all("verify_app_days", **key):
            problems.append(
                f"{where} {row['day']}: application {row['app_namespace']}/{row['app_name']}: {row['problem']}: "
                f"recorded {row['hours']} hour(s), {row['total_cost_micros']} micros; "
                f"its rows now {row['hours_now']} hour(s), {row['total_now']} micros"
            )
    return problems
