"""Each final hour as a Parquet file in the fleet bucket (``FLEET_BUCKET``), for reports across
many clusters read by an analytical engine (``usecases.reports.fleet``).

Layout, Hive-style, one file per cluster and hour::

    <FLEET_BUCKET>cluster=<id>/date=<YYYY-MM-DD>/hour=<HH>.parquet

Only final hours are written: an hour gets its file once it is final, and a final hour is never
rewritten in PostgreSQL, so the set of files *is* the set of final hours (no manifest to keep in
step): a reader never sees an open hour. If a final hour is written again (a lost hour loaded
again by a history load), its ledger entry is marked for upload anew and its file is replaced.

When: in the collector's run, after the hours' transactions commit, oldest first, within the
run's time budget. The ledger (``allocation_hours.fleet_uploaded_at``) says which final hours are
in the bucket; an upload that fails (the store unavailable, a timeout, a dropped connection)
leaves its hour and the later ones marked, the run reports it as a warning, and the next run
uploads them. An upload is one PUT of the whole file (``infra.objectstore``), so a file is whole
or absent; a run killed after the PUT and before the ledger's update uploads the same file again,
with the same bytes (the rows in key order, no write time in the file).

Columns (``infra.fleet``): the stored row's, with their types: money in integer micros (``int64``), times as
``timestamp[us, UTC]``, quantities (PostgreSQL ``numeric``, kept exactly as OpenCost sent them)
as strings, the pricing source and currency, owner (``team``) and cost centre, the entry kind.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from finops.errors import FinOpsError
from infra.fleet import write_hour
from infra.objectstore import ObjectStore, is_s3
from infra.postgres import Database

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.apache.parquet"


def hour_key(prefix: str, cluster: str, hour: datetime) -> str:
    """Where the hour's file goes under ``prefix`` (the bucket URL, ending in ``/``)."""
    return f"{prefix}cluster={cluster}/date={hour:%Y-%m-%d}/hour={hour:%H}.parquet"


@dataclass
class FleetUploads:
    uploaded: list[datetime] = field(default_factory=list)
    pending: int = 0  # final hours still to upload when the run stopped
    error: str | None = None


def upload_final_hours(
    db: Database, store: ObjectStore, prefix: str, cluster: str, aggregation: str, *, deadline: float
) -> FleetUploads:
    """Upload the final hours not yet in the bucket, oldest first, until none is left, the
    ``deadline`` (``time.monotonic()``) passes, or the store refuses (the rest stay marked)."""
    result = FleetUploads()
    key: dict[str, Any] = {"cluster": cluster, "aggregation": aggregation}
    pending = db.fetch_all("fleet_pending_hours", **key)
    for number, entry in enumerate(pending):
        if number and time.monotonic() >= deadline:  # the first always goes: every run makes progress
            result.pending = len(pending) - number
            break
        hour = entry["hour"].astimezone(UTC)
        rows = db.fetch_csv("fleet_hour_rows", **key, hour=hour)
        target = hour_key(prefix, cluster, hour)
        if not is_s3(target):  # a local fleet folder: the hour's date folder is ours to make
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        try:
            with store.writer(target, CONTENT_TYPE) as out:
                count = write_hour(rows, out)
        except FinOpsError as exc:  # unavailable, refused or unauthorized: named, and retried next run
            result.pending, result.error = len(pending) - number, str(exc)
            break
        db.execute("mark_fleet_uploaded", **key, hour=hour, collected_at=entry["collected_at"])
        result.uploaded.append(hour)
        log.info("hour uploaded to the fleet bucket", extra={"fields": {"hour": hour.isoformat(), "rows": count}})
    return result
