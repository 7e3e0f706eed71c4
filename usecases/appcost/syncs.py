"""Accepted sync events: persisted before the 202, claimed for measurement, measured once.

The life of an event: ``pending`` (accepted) → ``measuring`` (claimed by one measurement) →
``measured`` (its record stored in the same transaction). A failed measurement puts it back to
``pending``; a claim older than ``STALE_AFTER`` (the measuring pod died) can be taken again. The
record is keyed on the event, so however often it is delivered, one event gives one record.

A measurement delivered before ``MEASURE_SETTLE_SECONDS`` have passed since the sync raises
``NotSettled`` (the function answers 503 with ``Retry-After``) instead of sleeping: the Broker,
or the local stack's detached delivery, delivers it again later.

The re-drive: the hourly run (and the backfill) looks for events still open after
``REDRIVE_AFTER`` and sends each one, at most ``REDRIVE_LIMIT`` per run, as a
``dev.finops.sync.accepted`` CloudEvent to the on-sync Service (``ON_SYNC_URL``), which measures
it in a request of its own; nothing is measured in the re-driving request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from finops.errors import FinOpsError, TemporaryError
from finops.ownership import Ref
from infra import events
from infra.clock import SYSTEM, Clock
from infra.postgres import Database
from infra.postgres.common import Statements

if TYPE_CHECKING:  # the webhook's 202 needs none of the measurement's modules (OpenCost's models)
    from infra.opencost import OpenCostClient
    from usecases.appcost.measure import KubeLister

log = logging.getLogger(__name__)

STALE_AFTER = timedelta(minutes=10)
REDRIVE_AFTER = timedelta(minutes=10)
MAX_ATTEMPTS = 8
REDRIVE_LIMIT = 50  # events re-driven per run (the oldest first); the next run sends the rest


class NotSettled(TemporaryError):
    """Measured too early: the sync's new pods may have no metrics yet. Deliver it again later."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


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


def _key(event: SyncEvent) -> dict[str, Any]:
    return {
        "cluster": event.cluster,
        "app_namespace": event.app_namespace,
        "app_name": event.app_name,
        "revision": event.revision,
        "finished_at": event.finished_at,
    }


def _row(event: SyncEvent) -> dict[str, Any]:
    return {
        **_key(event),
        "project": event.project,
        "destination_namespace": event.destination_namespace,
        "resources": {"items": list(event.resources)},
    }


def accept(db: Statements, event: SyncEvent) -> tuple[int, str, bool]:
    """Persist ``event`` idempotently: ``(id, status, new)``; a replay returns the first one."""
    row = db.fetch_one("insert_sync_event", **_row(event))
    if row is not None:
        return int(row["id"]), str(row["status"]), True
    existing = db.fetch_one("find_sync_event", **_key(event))
    assert existing is not None  # the conflicting row exists: rows are never deleted
    return int(existing["id"]), str(existing["status"]), False


Accepted = tuple[int, str, bool, bool]
"""``(id, status, new, recorded)`` of a webhook's event and whether its run was stored with it."""


def accept_recorded(db: Statements, event: SyncEvent, run: dict[str, Any]) -> Accepted:
    """``accept``, and store ``run`` (a ``job_runs`` row, ``usecases.runs.record_of``) in the same
    statement (``accept_sync_webhook``), its counts completed with ``sync_event`` and ``replay``:
    the webhook's 202 costs one round trip and one commit. A replay returns the first event's id,
    ``new`` false. ``(id, status, new, recorded)``: not recorded only when a concurrent webhook in
    another process was committing the same event (its row is read back with ``accept``, and the
    caller records the run itself)."""
    row = db.fetch_one("accept_sync_webhook", **_row(event), run=_json(run))
    if row is None:  # committed by another process after the statement's snapshot
        return (*accept(db, event), False)
    return int(row["id"]), str(row["status"]), bool(row["new"]), True


def _json(value: dict[str, Any]) -> str:
    """``value`` as JSON text, timestamps in RFC 3339 (``datetime.isoformat``)."""
    return json.dumps(value, default=_timestamp)


def _timestamp(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@dataclass(frozen=True)
class Delivery:
    """Where an accepted event's CloudEvent goes: to ``sink`` at once (``K_SINK``: the Broker,
    whose Trigger redelivers the 503 it gets until the event has settled) or, without a sink, to
    this function's own ``self_url`` once ``settle_seconds`` have passed (a timer)."""

    source: str
    settle_seconds: float
    sink: str | None = None
    self_url: str = ""


def accept_sync(
    db: Statements, event: SyncEvent, run: dict[str, Any], delivery: Delivery, clock: Clock = SYSTEM
) -> Accepted:
    """The webhook's use case: ``accept_recorded``, then the CloudEvent that has the event
    measured, unless a replay finds it measured (or being measured) already."""
    accepted = accept_recorded(db, event, run)
    event_id, status, new, _ = accepted
    if new or status == "pending":
        dispatch(delivery, event_id, clock)
    return accepted


def dispatch(delivery: Delivery, event_id: int, clock: Clock = SYSTEM) -> None:
    """Send the CloudEvent that has ``event_id`` measured (``notBefore``: when it has settled).
    A sink that refuses it is logged: the event is persisted, and the hourly run re-drives it."""
    not_before = clock.now() + timedelta(seconds=delivery.settle_seconds)
    data: dict[str, Any] = {"syncEventId": event_id, "notBefore": not_before.isoformat()}
    if delivery.sink:
        try:
            events.send(delivery.sink, events.SYNC_ACCEPTED, f"sync-{event_id}", delivery.source, data)
        except FinOpsError as exc:
            log.warning("sync event not delivered to K_SINK", extra={"fields": {"error": exc.message}})
    else:
        events.send_detached(
            delivery.self_url,
            events.SYNC_ACCEPTED,
            f"sync-{event_id}",
            delivery.source,
            data,
            delay=delivery.settle_seconds,
            clock=clock,
        )


def ensure_settled(event_id: int, not_before: datetime | None, clock: Clock = SYSTEM) -> None:
    """``NotSettled`` while a delivery's ``notBefore`` is still ahead (checked before any database
    work; without it, ``measure_event`` judges by the event's receipt)."""
    left = 0.0 if not_before is None else (not_before - clock.now()).total_seconds()
    if left > 0:
        raise NotSettled(f"sync event {event_id} settles for {left:.1f} s more", left)


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
    clock: Clock = SYSTEM,
) -> str:
    """Measure one accepted event and store its record. Returns what happened:
    ``measured``, or ``skipped`` when it is already measured or being measured elsewhere.
    Raises ``NotSettled`` (the claim released) before ``settle_seconds`` after its receipt."""
    from usecases.appcost.measure import measure_namespace, with_share

    event = db.fetch_one("claim_sync_event", id=event_id, stale_seconds=STALE_AFTER.total_seconds())
    if event is None:
        return "skipped"
    left = settle_seconds - (clock.now() - event["received_at"]).total_seconds()
    if left > 0:  # let the new pods' metrics be recorded: measured on a later delivery
        db.execute("release_sync_event", id=event_id, error=None, max_attempts=MAX_ATTEMPTS)
        raise NotSettled(f"sync event {event_id} settles for {left:.1f} s more (MEASURE_SETTLE_SECONDS)", left)
    try:
        ns = event["destination_namespace"]
        own = [(kind, name) for kind, name in _resources(event["resources"])]
        measurement = with_share(measure_namespace(opencost, ns, now=clock.now()), kube, own)
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


def redrive(db: Database, cluster: str, url: str, source: str, *, limit: int = REDRIVE_LIMIT) -> dict[str, int]:
    """Send a measurement event to ``url`` (the on-sync Service) for each event still open after
    ``REDRIVE_AFTER`` (a lost delivery, a killed pod), oldest first, at most ``limit``. The
    deliveries are detached: on-sync measures each one in its own request, and an event whose
    measurement is lost again stays open for the next run."""
    overdue = db.fetch_all(
        "overdue_sync_events", cluster=cluster, older_than_seconds=REDRIVE_AFTER.total_seconds(), limit=limit
    )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    for row in overdue:
        event_id = int(row["id"])
        events.send_detached(
            url, events.SYNC_ACCEPTED, f"sync-{event_id}-redrive-{stamp}", source, {"syncEventId": event_id}
        )
    if overdue:
        log.info("re-drove overdue sync events", extra={"fields": {"sync_events": len(overdue), "to": url}})
    return {"redrive_dispatched": len(overdue)}
