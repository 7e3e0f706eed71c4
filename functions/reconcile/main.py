"""``reconcile``: PriceBook, Offering and Subscription changes, delivered as CloudEvents by a Knative
``ApiServerSource`` in Reference mode (``dev.knative.apiserver.ref.add|update|delete``, the data
naming the object). Each event reconciles the object it names and what depends on it
(``usecases.reconcile.service``). A POST that is not such an event runs a full pass, as
``collect_charges`` does every hour; it needs the ``PING_TOKEN`` bearer, as the pings do.

An event delivery (any ``ce-type``) must carry ``EVENT_TOKEN`` when it is set, as the ``token``
query parameter of the ApiServerSource's sink URI (docs/tutorial/first-cluster.md, "Harden it"), and
is rate-limited per replica (``EVENTS_PER_SECOND``, ``EVENTS_BURST``: beyond them 429 with
``Retry-After``, which the source retries). An event other than ``ref.*`` also runs a full pass.
"""

from __future__ import annotations

from datetime import UTC, datetime

import flask

from functions.edge import edge, read_json, require_bearer, require_event_token, respond, settings_for
from functions.limits import event_rate
from infra.clients import database_from, kube_from
from infra.settings import ReconcileSettings, current_secret
from usecases.reconcile.service import parse_event_ref, reconcile_all, reconcile_event
from usecases.reconcile.targets import mto_target, opencost_target, pricing_setting
from usecases.runs import Run

FUNCTION = "reconcile"
EVENT_PREFIX = "dev.knative.apiserver.ref."
settings = settings_for(FUNCTION, ReconcileSettings)


@edge(FUNCTION, settings)
def reconcile(request: flask.Request, s: ReconcileSettings, run: Run) -> flask.Response:
    event_type = request.headers.get("ce-type")
    if event_type:  # a delivery: its token (when EVENT_TOKEN is set), then this replica's rate
        run.trigger = "event"
        require_event_token(request, current_secret(s, "EVENT_TOKEN"))
        event_rate(s.EVENTS_PER_SECOND, s.EVENTS_BURST).take()
    else:  # a full pass on request, authenticated like the hourly pings
        run.trigger = "manual"
        require_bearer(request, current_secret(s, "PING_TOKEN") or "")
    ref = parse_event_ref(read_json(request)) if str(event_type).startswith(EVENT_PREFIX) else None
    run.db = database_from(s)
    now = datetime.now(UTC)
    kube, cluster, opencost, mto = kube_from(s), s.CLUSTER_ID, opencost_target(s), mto_target(s)
    if ref is None:
        result = reconcile_all(kube, run.db, cluster, opencost, now, mto, pricing_setting(s)).result
    else:
        result = reconcile_event(kube, run.db, cluster, ref, opencost, now, mto, pricing_setting(s))
    run.counts = {**result.counts(), "event_type": event_type}
    if ref is not None:
        run.counts["object"] = f"{ref.kind} {ref.namespace}/{ref.name}".replace(" /", " ")
    if result.errors:
        run.outcome = "partial"
        run.error = "; ".join(f"{k}: {v}" for k, v in result.errors.items())
    return respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts})
