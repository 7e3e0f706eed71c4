"""Accepted sync events: persisted before the 202, claimed for measurement, measured once.

The life of an event: ``pending`` (accepted) → ``measuring`` (claimed by one measurement) →
``measured`` (its record stored in the same transaction). A failed measurement puts it back to
``pending``; a claim older than ``STALE_AFTER`` (the measuring pod died) can be taken again; the
hourly run re-drives whatever is still open after ``REDRIVE_AFTER``. The record is keyed on the
event, so however often it is delivered, one event gives one record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from finops.errors import FinOpsError
from finops.ownership import Ref
from infra.postgres import Database

if TYPE_CHECKING:  # the webhook path (accept) does not need the measurement's imports
    from functions.appcost.measure import KubeLister
    from infra.opencost import OpenCostClient

log = logging.getLogger(__name__)

STALE_AFTER = timedelta(minutes=10)
REDRIVE_AFTER = timedelta(minutes=10)
MAX_ATTEMPTS = 8


@dataclass(frozen=True)
class SyncEvent:
    """An accepted, validated webhook."""

    cluster: str
    app_namespace: str
    app_name: str
    project: str | None
    destination_namespace: str
    revision: str
    finished_at: datetime
    resources: Sequence[dict[str, str]]


def accept(db: Database, event: SyncEvent) -> tuple[int, str, bool]:
    """Persist ``event`` idempotently: ``(id, status, new)``; a replay returns the first one."""
    key: dict[str, Any] = {
        "cluster": event.cluster,
        "app_namespace": event.app_namespace,
        "app_name": event.app_name,
        "revision": event.revision,
        "finished_at": event.finished_at,
    }
    row = db.fetch_one(
        "insert_sync_event",
        **key,
        project=event.project,
        destination_namespace=event.destination_namespace,
        resources={"items": list(event.resources)},
    )
    if row is not None:
        return int(row["id"]), str(row["status"]), True
    existing = db.fetch_one("find_sync_event", **key)
    assert existing is not None  # the conflicting row exists: rows are never deleted
    return int(existing["id"]), str(existing["status"]), False


def _resources(stored: dict[str, Any]) -> list[Ref]:
    items = (stored or {}).get("items") or []
    return [(str(r.get("kind", "")), str(r.get("name", ""))) for r in items if r.get("kind") and r.get("name")]


def measure_event(
    db: Database,
    opencost: OpenCostClient,
    kube: KubeLister,
    event_id: int,
    *,
    settle_seconds: float = 0.0,
) -> str:
    """Measure one accepted event and store its record. Returns what happened:
    ``measured``, or ``skipped`` when it is already measured or being measured elsewhere."""
    from functions.appcost.measure import measure_namespace, with_share

    event = db.fetch_one("claim_sync_event", id=event_id, stale_seconds=STALE_AFTER.total_seconds())
    if event is None:
        return "skipped"
    try:
        waited = (datetime.now(UTC) - event["received_at"]).total_seconds()
        if settle_seconds > waited:
            time.sleep(settle_seconds - waited)  # let the new pods' metrics be recorded
        ns = event["destination_namespace"]
        own = [(kind, name) for kind, name in _resources(event["resources"])]
        measurement = with_share(measure_namespace(opencost, ns, now=datetime.now(UTC)), kube, own)
        for warning in measurement.warnings:
            log.warning(warning, extra={"fields": {"sync_event": event_id, "namespace": ns}})
        with db.connection() as conn:
            db.execute(
                "insert_cost_actual",
                conn,
                cluster=event["cluster"],
                app_namespace=event["app_namespace"],
                app_name=event["app_name"],
                measured_on="sync",
                sync_event_id=event_id,
                revision=event["revision"],
                **measurement.record(),
            )
            db.execute("complete_sync_event", conn, id=event_id)
    except FinOpsError as exc:
        db.execute("release_sync_event", id=event_id, error=exc.message, max_attempts=MAX_ATTEMPTS)
        raise
    return "measured"


def redrive(
    db: Database,
    opencost: OpenCostClient,
    kube: KubeLister,
    cluster: str,
    *,
    limit: int = 50,
) -> dict[str, int]:
    """Measure the events still open after ``REDRIVE_AFTER`` (lost deliveries, killed pods)."""
    counts = {"redriven": 0, "redrive_failed": 0}
    overdue = db.fetch_all(
        "overdue_sync_events", cluster=cluster, older_than_seconds=REDRIVE_AFTER.total_seconds(), limit=limit
    )
    for row in overdue:
        try:
            if measure_event(db, opencost, kube, int(row["id"])) == "measured":
                counts["redriven"] += 1
        except FinOpsError as exc:
            counts["redrive_failed"] += 1
            log.warning(
                "re-driven sync event failed", extra={"fields": {"sync_event": row["id"], "error": exc.message}}
            )
    return counts
