"""``on_sync``: Argo CD Notifications' webhook after a sync, and the measurement it triggers.

Two kinds of request reach this function:

1. **The webhook** (``Authorization: Bearer $WEBHOOK_TOKEN``): validated, then skipped with 200
   (sync not Succeeded, remote cluster, the gate application), or persisted in ``sync_events``
   (idempotent; with the run's ``job_runs`` row, in one statement) and answered 202 within
   milliseconds. A CloudEvent naming the event goes to ``K_SINK`` before the answer (Knative
   Eventing delivers it back here) or, without a sink, to this function's own URL (the local
   stack). No work happens after the response.
2. **The CloudEvent** ``dev.finops.sync.accepted``: measures the event in a request of its own.
   It carries only the id of an accepted event (and ``notBefore``). With ``EVENT_TOKEN`` set, a
   delivery must carry it (the ``token`` query parameter of the Trigger's subscriber URI, or of
   the URL the hourly run and the backfill re-drive overdue events to); without it, a forged
   event can at most re-measure an accepted, still-pending event (claims are idempotent).
   Deliveries beyond ``EVENTS_PER_SECOND`` (``EVENTS_BURST`` at once) get 429.

The settle delay (``MEASURE_SETTLE_SECONDS``, so the new pods' metrics exist) never holds a
request thread: an event delivered before ``notBefore`` (or, without it, before the settle time
after the event's receipt) is answered 503 with ``Retry-After`` and delivered again later: by
the Broker, whose Trigger retries 503 with its backoff (Knative Eventing honours ``Retry-After``
itself only with the alpha ``delivery-retryafter`` feature), or, without a sink, by the timer that
posts it to this function's own URL once it has settled.

At most ``MAX_IN_FLIGHT`` measurements run per replica (each of its ``WORKERS`` processes holds an
equal share, ``functions.limits``); beyond that, 429.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import flask
import functions_framework

from finops.errors import FinOpsError, InvalidInput, TemporaryError
from finops.hours import parse_timestamp
from functions.edge import (
    current_secret,
    edge,
    read_json,
    require_bearer,
    require_event_token,
    respond,
    settings_for,
    with_event_token,
)
from functions.limits import RateLimit, worker_count_share
from functions.on_sync.webhook import SyncWebhook
from infra import events
from infra.clients import database_from, kube_from, opencost_from
from infra.settings import OnSyncSettings
from usecases.appcost.syncs import NotSettled, SyncEvent, accept_recorded, measure_event
from usecases.runs import Run, record_of

FUNCTION = "on_sync"
MAX_NOTES = 10  # reasons for dropped resources echoed in a response
log = logging.getLogger(__name__)
settings = settings_for(FUNCTION, OnSyncSettings)


class TooManyInFlight(TemporaryError):
    """Too many measurements in flight on this worker; retry later."""

    http_status = 429


class InFlight:
    """A worker's count of measurements, checked before accepting more work."""

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
                raise TooManyInFlight(f"{self._count} measurements in flight on this worker (limit {self.limit})")
            self._count += 1

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self._count -= 1


@functools.cache
def in_flight() -> InFlight:
    """This worker's count of measurements: its share of the replica's ``MAX_IN_FLIGHT``."""
    return InFlight(worker_count_share(settings().MAX_IN_FLIGHT))


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
    require_bearer(request, current_secret(s, "WEBHOOK_TOKEN") or "")
    hook = SyncWebhook.parse(read_json(request))
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
        raise TooManyInFlight(f"{in_flight().limit} measurements already in flight on this worker")
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
            r.as_dict()
            for r in hook.resources or []
            if r.namespace in ("", hook.destinationNamespace)  # the share is the destination's pods only
        ],
    )
    run.http_status = 202  # the event and its run stored in one statement, before the CloudEvent
    event_id, status, new, run.recorded = accept_recorded(run.db, event, record_of(run))
    run.counts.update(sync_event=event_id, replay=not new)
    if new or status == "pending":
        _dispatch(s, event_id)
    body = {"outcome": "accepted", "sync_event": event_id, "status": status, "run_id": run.run_id, **notes}
    return respond(202, body)


def _skipped_resources(hook: SyncWebhook) -> dict[str, Any]:
    """``resources_skipped`` and the first few reasons, when entries were dropped."""
    if not hook.skipped:
        return {}
    return {"resources_skipped": len(hook.skipped), "resources_skipped_notes": hook.skipped[:MAX_NOTES]}


def _dispatch(s: OnSyncSettings, event_id: int) -> None:
    settle = s.MEASURE_SETTLE_SECONDS
    not_before = datetime.now(UTC) + timedelta(seconds=settle)
    data: dict[str, Any] = {"syncEventId": event_id, "notBefore": not_before.isoformat()}
    source = f"/finops/{s.CLUSTER_ID}/on_sync"
    if s.K_SINK:  # delivered at once; answered 503 until notBefore, the Trigger redelivers
        try:
            events.send(s.K_SINK, events.SYNC_ACCEPTED, f"sync-{event_id}", source, data)
        except FinOpsError as exc:  # accepted and persisted: the hourly run re-drives it
            log.warning("sync event not delivered to K_SINK", extra={"fields": {"error": exc.message}})
    else:  # delivered when it has settled, by a timer
        url = with_event_token(f"http://127.0.0.1:{s.PORT}/", current_secret(s, "EVENT_TOKEN"))
        events.send_detached(url, events.SYNC_ACCEPTED, f"sync-{event_id}", source, data, delay=settle)


def _measurement(request: flask.Request, s: OnSyncSettings, run: Run) -> flask.Response:
    run.trigger = "event"
    require_event_token(request, current_secret(s, "EVENT_TOKEN"))
    event_rate().take()
    body = read_json(request)
    event_id = body.get("syncEventId") if isinstance(body, dict) else None
    if not isinstance(event_id, int) or isinstance(event_id, bool) or event_id < 1:
        raise InvalidInput("syncEventId: must be a positive integer")
    run.counts = {"sync_event": event_id}
    not_before = body.get("notBefore")
    if not_before is not None:  # settling: answered before any database work
        if not isinstance(not_before, str):
            raise InvalidInput("notBefore: must be an RFC 3339 timestamp")
        left = (parse_timestamp(not_before, field="notBefore") - datetime.now(UTC)).total_seconds()
        if left > 0:
            return _not_yet(run, event_id, NotSettled(f"sync event {event_id} settles for {left:.1f} s more", left))
    try:
        with in_flight():
            run.db = database_from(s)
            outcome = measure_event(
                run.db, opencost_from(s), kube_from(s), event_id, settle_seconds=s.MEASURE_SETTLE_SECONDS
            )
    except NotSettled as exc:
        return _not_yet(run, event_id, exc)
    if outcome == "skipped":
        run.outcome = "skipped"
        run.error = "already measured or being measured"
    return respond(200, {"outcome": run.outcome, "sync_event": event_id, "run_id": run.run_id})


def _not_yet(run: Run, event_id: int, exc: NotSettled) -> flask.Response:
    """Too early to measure: 503 with ``Retry-After``, so the Broker (its Trigger's retries) or
    the local stack's timer delivers the event again once the sync has settled."""
    after = max(1, math.ceil(exc.retry_after))
    run.outcome, run.http_status, run.error = "skipped", 503, f"{exc.message}; delivered again later"
    body = {"outcome": "skipped", "reason": "settling", "retry": True, "retry_after_seconds": after}
    response = respond(503, {**body, "sync_event": event_id, "run_id": run.run_id})
    response.headers["Retry-After"] = str(after)
    return response


@functions_framework.http
@edge(FUNCTION, settings)
def on_sync(request: flask.Request, s: OnSyncSettings, run: Run) -> flask.Response:
    if request.headers.get("ce-type") == events.SYNC_ACCEPTED:
        return _measurement(request, s, run)
    return _webhook(request, s, run)


@functools.cache
def event_rate() -> RateLimit:
    """This worker's share of the replica's budget of event deliveries."""
    return RateLimit.per_replica(settings().EVENTS_PER_SECOND, settings().EVENTS_BURST)
