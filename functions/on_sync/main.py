"""``on_sync``: Argo CD Notifications' webhook after a sync, and the measurement it triggers.

Two kinds of request reach this function:

1. **The webhook** (``Authorization: Bearer $WEBHOOK_TOKEN``): validated, then skipped with 200
   (sync not Succeeded, remote cluster, the gate application), or persisted in ``sync_events``
   (idempotent) and answered 202 within milliseconds. A CloudEvent naming the event goes to
   ``K_SINK`` (Knative Eventing delivers it back here) or, without a sink, to this function's
   own URL (the local stack). No work happens after the response.
2. **The CloudEvent** ``dev.finops.sync.accepted``: measures the event in a request of its own.
   It carries only the id of an accepted event, so it needs no token: a duplicate or forged one
   can at most re-measure an accepted, still-pending event (claims are idempotent).

At most ``MAX_IN_FLIGHT`` measurements run per replica; beyond that, 429.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

import flask
import functions_framework

from finops.errors import FinOpsError, InvalidInput, TemporaryError
from functions.appcost.syncs import SyncEvent, accept, measure_event
from functions.edge import (
    database_from,
    error_response,
    health,
    kube_from,
    opencost_from,
    parse_body,
    read_json,
    require_bearer,
    respond,
    settings_for,
)
from functions.on_sync.webhook import SyncWebhook
from functions.runs import Run, recorded_run
from infra import events
from infra.settings import OnSyncSettings

FUNCTION = "on_sync"
MAX_NOTES = 10  # reasons for dropped resources echoed in a response
log = logging.getLogger(__name__)
settings = settings_for(FUNCTION, OnSyncSettings)


class TooManyInFlight(TemporaryError):
    """Too many measurements in flight on this replica; retry later."""

    http_status = 429


class InFlight:
    """A per-replica count of measurements, checked before accepting more work."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._count = 0
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        return self._count >= self.limit

    def __enter__(self) -> None:
        with self._lock:
            if self._count >= self.limit:
                raise TooManyInFlight(f"{self._count} measurements in flight on this replica (limit {self.limit})")
            self._count += 1

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self._count -= 1


@functools.cache
def in_flight() -> InFlight:
    """This replica's count of measurements."""
    return InFlight(settings().MAX_IN_FLIGHT)


def _skip_reason(hook: SyncWebhook, gate: str) -> str | None:
    if hook.syncResult is not None and hook.syncResult != "Succeeded":
        return f"sync result is {hook.syncResult}, not Succeeded"
    if not hook.is_local:
        return "the application deploys to another cluster"
    if gate != "off" and hook.identity == gate:
        return "the cluster-access gate application is not measured"
    if hook.destinationNamespace is None:
        return "the application has no destination namespace"
    return None


def _webhook(request: flask.Request, s: OnSyncSettings, run: Run) -> flask.Response:
    require_bearer(request, s.WEBHOOK_TOKEN.get_secret_value())
    hook = parse_body(request, SyncWebhook)
    run.trigger = "argocd"
    run.counts = {"app": hook.identity, "revision": hook.revision_key}
    notes = _skipped_resources(hook)
    if notes:
        run.counts["resources_skipped"] = notes["resources_skipped"]
    reason = _skip_reason(hook, s.CLUSTER_SCOPE_APP)
    if reason is not None:
        run.outcome = "skipped"
        run.error = reason
        return respond(200, {"outcome": "skipped", "reason": reason, "run_id": run.run_id, **notes})
    if in_flight().full:
        raise TooManyInFlight(f"{in_flight().limit} measurements already in flight on this replica")
    assert hook.destinationNamespace is not None
    run.db = database_from(s)
    event = SyncEvent(
        cluster=s.CLUSTER_ID,
        app_namespace=hook.appNamespace,
        app_name=hook.app,
        project=hook.project,
        destination_namespace=hook.destinationNamespace,
        revision=hook.revision_key,
        finished_at=hook.finishedAt,
        resources=[
            r.model_dump()
            for r in hook.resources or []
            if r.namespace in ("", hook.destinationNamespace)  # the share is the destination's pods only
        ],
    )
    event_id, status, new = accept(run.db, event)
    run.counts.update(sync_event=event_id, replay=not new)
    if new or status == "pending":
        _dispatch(s, event_id)
    run.http_status = 202
    body = {"outcome": "accepted", "sync_event": event_id, "status": status, "run_id": run.run_id, **notes}
    return respond(202, body)


def _skipped_resources(hook: SyncWebhook) -> dict[str, Any]:
    """``resources_skipped`` and the first few reasons, when entries were dropped."""
    if not hook.skipped:
        return {}
    return {"resources_skipped": len(hook.skipped), "resources_skipped_notes": hook.skipped[:MAX_NOTES]}


def _dispatch(s: OnSyncSettings, event_id: int) -> None:
    data = {"syncEventId": event_id}
    source = f"/finops/{s.CLUSTER_ID}/on_sync"
    if s.K_SINK:
        try:
            events.send(s.K_SINK, events.SYNC_ACCEPTED, f"sync-{event_id}", source, data)
        except FinOpsError as exc:  # accepted and persisted: the hourly run re-drives it
            log.warning("sync event not delivered to K_SINK", extra={"fields": {"error": exc.message}})
    else:
        events.send_detached(f"http://127.0.0.1:{s.PORT}/", events.SYNC_ACCEPTED, f"sync-{event_id}", source, data)


def _measurement(request: flask.Request, s: OnSyncSettings, run: Run) -> flask.Response:
    run.trigger = "event"
    body = read_json(request)
    event_id = body.get("syncEventId") if isinstance(body, dict) else None
    if not isinstance(event_id, int) or isinstance(event_id, bool) or event_id < 1:
        raise InvalidInput("syncEventId: must be a positive integer")
    run.counts = {"sync_event": event_id}
    with in_flight():
        run.db = database_from(s)
        outcome = measure_event(
            run.db, opencost_from(s), kube_from(s), event_id, settle_seconds=s.MEASURE_SETTLE_SECONDS
        )
    if outcome == "skipped":
        run.outcome = "skipped"
        run.error = "already measured or being measured"
    return respond(200, {"outcome": run.outcome, "sync_event": event_id, "run_id": run.run_id})


@functions_framework.http
def on_sync(request: flask.Request) -> flask.Response:
    if (healthy := health(request)) is not None:
        return healthy
    s = settings()
    run: Run | None = None
    try:
        with recorded_run(FUNCTION, s.CLUSTER_ID) as run:
            if request.headers.get("ce-type") == events.SYNC_ACCEPTED:
                return _measurement(request, s, run)
            return _webhook(request, s, run)
    except Exception as exc:  # classified and logged by recorded_run
        return error_response(exc, run.run_id if run else None)


def warm_up() -> None:
    """Cold start: validate settings, open the pool and migrate."""
    database_from(settings())
