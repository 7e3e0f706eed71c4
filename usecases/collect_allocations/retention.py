"""Retention, a job of each hourly ping: rows older than their table's ``*_RETENTION_DAYS`` are deleted
in bounded batches, and monthly partitions of ``provider_allocations`` older than
``ALLOCATION_RETENTION_MONTHS`` are dropped, with the hours' assets (``cluster_assets``) before the
same cutoff (a few rows per node and hour: one DELETE)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from infra.postgres import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RowRetention:
    """Days each table's rows are kept (``*_RETENTION_DAYS``); 0 keeps them all."""

    job_runs_days: int = 0
    sync_events_days: int = 0
    cost_actuals_days: int = 0
    batch_rows: int = 5000  # one DELETE (one short transaction) at a time
    max_batches: int = 20  # per table and run: a long backlog is worked off over several runs


def delete_expired_rows(db: Database, cluster: str, retention: RowRetention, now: datetime) -> dict[str, int]:
    """The cluster's rows older than their retention, in bounded batches. Records go before the
    sync events they point to; an open (pending, measuring) sync event and each application's
    latest record are never deleted."""
    deleted: dict[str, int] = {}
    for table, days, query in (
        ("job_runs", retention.job_runs_days, "delete_expired_job_runs"),
        ("cost_actuals", retention.cost_actuals_days, "delete_expired_cost_actuals"),
        ("sync_events", retention.sync_events_days, "delete_expired_sync_events"),
    ):
        if not days:
            continue
        cutoff = now - timedelta(days=days)
        total = 0
        for _ in range(retention.max_batches):
            count = db.execute(query, cluster=cluster, cutoff=cutoff, limit=retention.batch_rows)
            total += count
            if count < retention.batch_rows:
                break
        if total:
            deleted[table] = total
    if deleted:
        log.info("retention deleted rows", extra={"fields": {"cluster": cluster, **deleted}})
    return deleted


def drop_expired_partitions(db: Database, months: int, now: datetime) -> list[str]:
    """Drop the monthly partitions that ended more than ``months`` whole months before ``now``'s,
    and delete the assets and emissions of the hours they held and their days per node.

    The three deletes are one transaction: a run stopped between them would otherwise leave an
    hour's emissions without its assets (or the reverse) until the next run."""
    month = now.year * 12 + now.month - 1 - months
    cutoff = datetime(month // 12, month % 12 + 1, 1, tzinfo=UTC)
    dropped = [row["partition"] for row in db.fetch_all("drop_allocation_partitions", cutoff=cutoff)]
    with db.connection() as conn:
        db.execute("delete_expired_cluster_assets", conn, cutoff=cutoff)
        db.execute("delete_expired_emissions", conn, cutoff=cutoff)
        db.execute("delete_expired_node_days", conn, cutoff=cutoff.date())
    if dropped:
        log.info("retention dropped partitions", extra={"fields": {"partitions": dropped}})
    return dropped


@dataclass(frozen=True)
class Retention:
    """What the hourly ping keeps: ``ALLOCATION_RETENTION_MONTHS`` (0 keeps every partition) and
    each table's days."""

    partition_months: int = 0
    rows: RowRetention = RowRetention()


def apply_retention(db: Database, cluster: str, retention: Retention, now: datetime) -> dict[str, Any]:
    """Drop the expired partitions, then delete the cluster's expired rows; their counts."""
    dropped = drop_expired_partitions(db, retention.partition_months, now) if retention.partition_months else []
    deleted = delete_expired_rows(db, cluster, retention.rows, now)
    return {"partitions_dropped": len(dropped), **{f"{table}_deleted": n for table, n in deleted.items()}}
