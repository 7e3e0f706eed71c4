"""``reconcile``: PriceBook, Offering and Subscription changes, delivered as CloudEvents by a Knative
``ApiServerSource`` (or any POST). Each delivery reconciles everything (level-based, idempotent),
so a lost or duplicated event is harmless; ``collect_charges`` runs the same every hour.

Events carry no credentials (Knative delivers them inside the cluster, ``cluster-local``); the
handler reads nothing from the event but the fact that something changed.
"""

from __future__ import annotations

from datetime import UTC, datetime

import flask
import functions_framework

from functions.edge import database_from, error_response, health, kube_from, respond, settings_for
from functions.reconcile.service import reconcile_all
from functions.reconcile.targets import mto_target, opencost_target
from functions.runs import Run, recorded_run
from infra.settings import ReconcileSettings

FUNCTION = "reconcile"
settings = settings_for(FUNCTION, ReconcileSettings)


@functions_framework.http
def reconcile(request: flask.Request) -> flask.Response:
    if (healthy := health(request)) is not None:
        return healthy
    s = settings()
    run: Run | None = None
    try:
        with recorded_run(FUNCTION, s.CLUSTER_ID) as run:
            run.trigger = "event" if request.headers.get("ce-type") else "manual"
            run.db = database_from(s)
            result, _, _ = reconcile_all(
                kube_from(s), run.db, s.CLUSTER_ID, opencost_target(s), datetime.now(UTC), mto_target(s)
            )
            run.counts = {**result.counts(), "event_type": request.headers.get("ce-type")}
            if result.errors:
                run.outcome = "partial"
                run.error = "; ".join(f"{k}: {v}" for k, v in result.errors.items())
        return respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts})
    except Exception as exc:  # classified and logged by recorded_run
        return error_response(exc, run.run_id if run else None)


def warm_up() -> None:
    """Cold start: validate settings, open the pool and migrate."""
    database_from(settings())
