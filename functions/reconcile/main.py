"""``reconcile``: PriceBook, Offering and Subscription changes, delivered as CloudEvents by a Knative
``ApiServerSource`` in Reference mode (``dev.knative.apiserver.ref.add|update|delete``, the data
naming the object). Each event reconciles the object it names and what depends on it, and an event
for a generation already observed (a status-only change, such as ``collect_charges`` writing
``status.costs``) does no work. A POST that is not such an event runs a full pass, as
``collect_charges`` does every hour.

Events carry no credentials (Knative delivers them inside the cluster, ``cluster-local``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import flask
import functions_framework

from functions.edge import database_from, error_response, health, kube_from, read_json, respond, settings_for
from functions.reconcile.service import parse_event_ref, reconcile_all, reconcile_event
from functions.reconcile.targets import mto_target, opencost_target
from functions.runs import Run, recorded_run
from infra.settings import ReconcileSettings

FUNCTION = "reconcile"
EVENT_PREFIX = "dev.knative.apiserver.ref."
settings = settings_for(FUNCTION, ReconcileSettings)


@functions_framework.http
def reconcile(request: flask.Request) -> flask.Response:
    if (healthy := health(request)) is not None:
        return healthy
    s = settings()
    run: Run | None = None
    try:
        with recorded_run(FUNCTION, s.CLUSTER_ID) as run:
            event_type = request.headers.get("ce-type")
            run.trigger = "event" if event_type else "manual"
            ref = parse_event_ref(read_json(request)) if str(event_type).startswith(EVENT_PREFIX) else None
            run.db = database_from(s)
            now = datetime.now(UTC)
            kube, cluster, opencost, mto = kube_from(s), s.CLUSTER_ID, opencost_target(s), mto_target(s)
            if ref is None:
                result = reconcile_all(kube, run.db, cluster, opencost, now, mto).result
            else:
                result = reconcile_event(kube, run.db, cluster, ref, opencost, now, mto)
            run.counts = {**result.counts(), "event_type": event_type}
            if ref is not None:
                run.counts["object"] = f"{ref.kind} {ref.namespace}/{ref.name}".replace(" /", " ")
            if result.errors:
                run.outcome = "partial"
                run.error = "; ".join(f"{k}: {v}" for k, v in result.errors.items())
        return respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts})
    except Exception as exc:  # classified and logged by recorded_run
        return error_response(exc, run.run_id if run else None)


def warm_up() -> None:
    """Cold start: validate settings, open the pool and migrate."""
    database_from(settings())
