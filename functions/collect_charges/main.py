"""``collect_charges``: the hourly ping (CronJob) that prices Subscriptions into charges.

The edge only: authenticate the ping, parse it, run the service, map the outcome to HTTP and,
unlike the operator, record the run on the CostJob that pinged (when the ping names one).
"""

from __future__ import annotations

from datetime import UTC, datetime

import flask

from functions.edge import edge, respond, settings_for
from functions.pings import Ping, accept_ping
from infra.clients import database_from, kube_from
from infra.settings import CollectChargesSettings
from usecases.collect_charges.service import Limits
from usecases.collect_charges.service import collect_charges as run_charges
from usecases.costjob_status import record_execution, require_costjob
from usecases.reconcile.targets import mto_target, opencost_target, pricing_setting
from usecases.runs import Run

FUNCTION = "collect_charges"
settings = settings_for(FUNCTION, CollectChargesSettings)


@edge(FUNCTION, settings)
def collect_charges(request: flask.Request, s: CollectChargesSettings, run: Run) -> flask.Response:
    ping, scheduled = accept_ping(request, s, run, Ping)
    run.db = database_from(s)
    if ping.costJob is not None:
        require_costjob(kube_from(s), ping.costJob)
        ref = ping.costJob
        run.afterwards.append(lambda done: record_execution(kube_from(s), ref, done))
    result = run_charges(
        run.db,
        kube_from(s),
        s.CLUSTER_ID,
        s.OPENCOST_AGGREGATE,
        opencost_target(s),
        scheduled=scheduled,
        now=datetime.now(UTC),
        mto=mto_target(s),
        pricing=pricing_setting(s),
        limits=Limits(s.CHARGES_CHUNK_HOURS, s.CHARGES_BATCH_ROWS, s.CHARGES_BUDGET_SECONDS),
    )
    run.counts = result.counts()
    run.outcome = result.outcome
    run.error = "; ".join(result.problems()) or None
    return respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts, "errors": result.errors})
