"""``on_sync``: Argo CD Notifications' webhook (``WEBHOOK_TOKEN``): skipped with 200, or its event
and run stored in one statement and answered 202, the CloudEvent that has it measured sent on
(``usecases.appcost.syncs``); and that CloudEvent (``EVENT_TOKEN``, ``EVENTS_PER_SECOND``),
measured in a request of its own: 503 with ``Retry-After`` before it has settled, 429 beyond
``MAX_IN_FLIGHT`` measurements per replica."""

from __future__ import annotations

import math

import flask

from functions.edge import (
    edge,
    read_json,
    require_bearer,
    require_event_token,
    respond,
    settings_for,
    with_event_token,
)
from functions.limits import event_rate, in_flight
from functions.on_sync.webhook import SyncWebhook, parse_delivery
from infra import events
from infra.clients import database_from, kube_from, opencost_from
from infra.settings import OnSyncSettings, current_secret
from usecases.appcost.syncs import Delivery, NotSettled, accept_sync, ensure_settled, measure_event
from usecases.runs import Run, record_of

FUNCTION = "on_sync"
settings = settings_for(FUNCTION, OnSyncSettings)
WARM = (events.warm,)  # built by each worker at start (functions.warmup), off the first webhook's path


@edge(FUNCTION, settings)
def on_sync(request: flask.Request, s: OnSyncSettings, run: Run) -> flask.Response:
    if request.headers.get("ce-type") == events.SYNC_ACCEPTED:
        return _measurement(request, s, run)
    return _webhook(request, s, run)


def _webhook(request: flask.Request, s: OnSyncSettings, run: Run) -> flask.Response:
    require_bearer(request, current_secret(s, "WEBHOOK_TOKEN") or "")
    hook = SyncWebhook.parse(read_json(request))
    notes = hook.notes()
    run.trigger, run.counts = "argocd", {"app": hook.identity, "revision": hook.revision_key}
    run.counts.update({k: v for k, v in notes.items() if k == "resources_skipped"})
    if (reason := hook.skip_reason(s.CLUSTER_SCOPE_APP)) is not None:
        run.outcome, run.error = "skipped", reason
        return respond(200, {"outcome": "skipped", "reason": reason, "run_id": run.run_id, **notes})
    in_flight(s.MAX_IN_FLIGHT).check()
    run.db, run.http_status = database_from(s), 202  # the event and its run stored in one statement
    own = f"http://127.0.0.1:{s.PORT}/"  # without a sink the event comes back here, carrying its token
    self_url = "" if s.K_SINK else with_event_token(own, current_secret(s, "EVENT_TOKEN"))
    delivery = Delivery(f"/finops/{s.CLUSTER_ID}/on_sync", s.MEASURE_SETTLE_SECONDS, s.K_SINK, self_url)
    event_id, status, new, run.recorded = accept_sync(run.db, hook.event(s.CLUSTER_ID), record_of(run), delivery)
    run.counts.update(sync_event=event_id, replay=not new)
    return respond(
        202, {"outcome": "accepted", "sync_event": event_id, "status": status, "run_id": run.run_id, **notes}
    )


def _measurement(request: flask.Request, s: OnSyncSettings, run: Run) -> flask.Response:
    run.trigger = "event"
    require_event_token(request, current_secret(s, "EVENT_TOKEN"))
    event_rate(s.EVENTS_PER_SECOND, s.EVENTS_BURST).take()
    event_id, not_before = parse_delivery(read_json(request))
    run.counts = {"sync_event": event_id}
    try:
        ensure_settled(event_id, not_before)  # before any database work
        with in_flight(s.MAX_IN_FLIGHT):
            run.db, settle = database_from(s), s.MEASURE_SETTLE_SECONDS
            outcome = measure_event(run.db, opencost_from(s), kube_from(s), event_id, settle_seconds=settle)
    except NotSettled as exc:  # 503 with Retry-After: the Broker or our own timer delivers it again
        after = max(1, math.ceil(exc.retry_after))
        run.outcome, run.http_status, run.error = "skipped", 503, f"{exc.message}; delivered again later"
        body = {"outcome": "skipped", "reason": "settling", "retry": True, "retry_after_seconds": after}
        return respond(503, {**body, "sync_event": event_id, "run_id": run.run_id}, retry_after=after)
    if outcome == "skipped":
        run.outcome, run.error = "skipped", "already measured or being measured"
    return respond(200, {"outcome": run.outcome, "sync_event": event_id, "run_id": run.run_id})
