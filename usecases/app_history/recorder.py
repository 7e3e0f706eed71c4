"""The daily cost history recorder: one row per application per UTC day, in its own scope.

Run by every hourly ``collect_allocations`` ping, after the hours are collected. It reads only our
own tables (``provider_allocations``, the hour ledger, the daily rollups, ``cost_actuals``): no
OpenCost call.

- **What counts.** A day is recorded once it is over and its 24 hours are all ``final`` in the
  ledger (a missing, open or lost hour keeps it out; a history load that finalizes the hour lets
  it in). Its row is the sum of the application's own allocation rows that day
  (``finops_in_app_scope``), per resource, with the workload idle, the hours with rows and the
  currency. Final hours never change, so a recorded day is never rewritten.
- **Scope.** The application's latest record decides it (``usecases.app_history.scope``). Every
  run first stores each application's current scope (``app_daily_scopes``) and deletes the days
  stored in any other scope, in one transaction: when the latest record gains or loses its share,
  or its selector or destination changes, the series is rebuilt in the new scope, never mixed.
- **Backfill and retention.** A new (or rebuilt) series starts at the first day its destination
  namespace had cost, at most ``DAILY_HISTORY_DAYS`` back; days older than that are deleted. The
  first day is searched once per series, and again when the ledger reaches further back than at
  the last search (a history load), so loaded history is recorded too. Days
  are recorded newest first (a chart fills from today backwards), at most ``MAX_DAYS_PER_RUN`` per
  run in batches of ``BATCH_DAYS``; the next ping continues (``daily_days_remaining``).
- **Batches and concurrency.** One grouped ``INSERT ... SELECT ... ON CONFLICT DO NOTHING`` per
  batch of days covers every application at once. Each transaction takes the cluster's recorder
  lock (``pg_advisory_xact_lock``), so two recorders at once serialise and the second finds the
  days written; a replay writes nothing. Either way the table ends the same.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, timedelta
from typing import Any

from finops.hours import midnight
from infra.postgres import Database

log = logging.getLogger(__name__)

BATCH_DAYS = 7  # days per INSERT (one transaction)
MAX_DAYS_PER_RUN = 63  # a 400-day backfill takes about 7 hourly pings


@dataclass(frozen=True)
class RecorderOptions:
    cluster: str
    aggregation: str
    history_days: int = 400  # DAILY_HISTORY_DAYS
    batch_days: int = BATCH_DAYS
    max_days: int = MAX_DAYS_PER_RUN


@dataclass
class RecordResult:
    applications: int = 0
    series_rebuilt: int = 0  # applications whose scope changed (their days deleted, recorded again)
    days_recorded: int = 0  # days processed (each for every application missing it)
    rows_written: int = 0
    rows_expired: int = 0
    days_remaining: int = 0

    def counts(self) -> dict[str, Any]:
        return {
            "daily_applications": self.applications,
            "daily_series_rebuilt": self.series_rebuilt,
            "daily_days_recorded": self.days_recorded,
            "daily_rows_written": self.rows_written,
            "daily_rows_expired": self.rows_expired,
            "daily_days_remaining": self.days_remaining,
        }


def history_start(today: date, history_days: int) -> date:
    """The oldest day kept: ``history_days`` whole days before ``today``."""
    return today - timedelta(days=history_days)


def record_daily(db: Database, options: RecorderOptions, *, today: date) -> RecordResult:
    """Bring every application's series of ``options.cluster`` up to date as far as one run may."""
    result = RecordResult()
    key: dict[str, Any] = {"cluster": options.cluster, "aggregation": options.aggregation}
    cutoff = history_start(today, options.history_days)
    with db.connection() as conn:
        db.execute("lock_app_daily", conn, cluster=options.cluster)
        changed = db.fetch_all("upsert_app_daily_scopes", conn, **key)
        result.series_rebuilt = sum(1 for row in changed if not row["new"])
        db.execute("delete_vanished_app_daily_scopes", conn, cluster=options.cluster)
        db.execute("delete_app_days_out_of_scope", conn, cluster=options.cluster)
        result.rows_expired = db.execute("delete_expired_app_days", conn, cluster=options.cluster, cutoff=cutoff)
        ledger = (db.fetch_one("ledger_start", conn, **key) or {}).get("hour")
        ledger_day = ledger.astimezone(UTC).date() if ledger is not None else today
        db.execute("set_app_first_days", conn, **key, cutoff=cutoff, ledger_day=ledger_day)
        result.applications = len(
            db.fetch_all("app_scopes", conn, cluster=options.cluster, app_namespace=None, app_name=None)
        )
    while result.days_recorded < options.max_days:
        limit = min(options.batch_days, options.max_days - result.days_recorded)
        with db.connection() as conn:
            db.execute("lock_app_daily", conn, cluster=options.cluster)
            days = [
                row["day"]
                for row in db.fetch_all("app_days_to_record", conn, **key, cutoff=cutoff, today=today, limit=limit)
            ]
            if not days:
                break
            result.rows_written += db.execute(
                "record_app_days",
                conn,
                **key,
                days=days,
                start=midnight(min(days)),
                end=midnight(max(days) + timedelta(days=1)),
            )
        result.days_recorded += len(days)
    result.days_remaining = len(
        db.fetch_all("app_days_to_record", **key, cutoff=cutoff, today=today, limit=options.history_days)
    )
    if result.rows_written or result.rows_expired or result.series_rebuilt:
        log.info("daily history recorded", extra={"fields": {"cluster": options.cluster, **result.counts()}})
    return result
