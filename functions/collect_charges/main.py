"""``collect_charges``: the hourly ping (CronJob) that prices Subscriptions into charges.

The edge only: authenticate the ping, parse it, run the service, map the outcome to HTTP and,
unlike the operator, record the run on the CostJob that pinged (when the ping names one).
"""

from __future__ import annotations

from datetime import UTC, datetime

import flask
import functions_framework

from functions.collect_charges.service import Limits
from functions.collect_charges.service import collect_charges as run_charges
from functions.costjobs import record_execution, require_costjob
from functions.edge import (
    database_from,
    error_response,
    health,
    kube_from,
    respond,
    settings_for,
)
from functions.pings import Ping, accept_ping
from functions.reconcile.targets import mto_target, opencost_target
from functions.runs import Run, recorded_run
from infra.settings import CollectChargesSettings

FUNCTION = "collect_charges"
settings = settings_for(FUNCTION, CollectChargesSettings)


@functions_framework.http
def collect_charges(request: flask.Request) -> flask.Response:
    if (healthy := health(request)) is not None:
        return healthy
    s = settings()
    run: Run | None = None
    ping: Ping | None = None
    try:
        with recorded_run(FUNCTION, s.CLUSTER_ID) as run:
            ping, scheduled = accept_ping(request, s, run, Ping)
            run.db = database_from(s)
            if ping.costJob is not None:
                require_costjob(kube_from(s), ping.costJob)
            result = run_charges(
                run.db, kube_from(s), s.CLUSTER_ID, s.OPENCOST_AGGREGATE, opencost_target(s),
                scheduled=scheduled, now=datetime.now(UTC), mto=mto_target(s),
                limits=Limits(s.CHARGES_CHUNK_HOURS, s.CHARGES_BATCH_ROWS, s.CHARGES_BUDGET_SECONDS),
            )  # fmt: skip
            run.counts = result.counts()
            run.outcome = result.outcome
            run.error = "; ".join(result.problems()) or None
        response = respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts, "errors": result.errors})
    except Exception as exc:  # classified and logged by recorded_run
        response = error_response(exc, run.run_id if run else None)
    if ping is not None and ping.costJob is not None and run is not None and run.db is not None:
        record_execution(kube_from(s), ping.costJob, run)
    return response


def warm_up() -> None:
    """Cold start: validate settings, open the pool and migrate."""
    database_from(settings())
