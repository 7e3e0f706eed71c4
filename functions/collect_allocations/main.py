"""``collect_allocations``: the hourly ping (CronJob) that copies OpenCost allocations.

The edge only: authenticate the ping, parse its body, build the adapters once per process, run
the service, and map the outcome to HTTP (200 success or partial, 4xx bad ping, 503 retry).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import flask
import functions_framework

from finops.costjobs import parse_costjob
from functions.appcost.syncs import redrive
from functions.collect_allocations.service import CollectOptions, collect, collect_range
from functions.costjobs import record_execution, require_costjob
from functions.edge import (
    database_from,
    error_response,
    health,
    kube_from,
    opencost_from,
    respond,
    settings_for,
)
from functions.pings import RangePing, accept_ping
from functions.runs import Run, recorded_run
from infra.settings import CollectAllocationsSettings

FUNCTION = "collect_allocations"
settings = settings_for(FUNCTION, CollectAllocationsSettings)


@functions_framework.http
def collect_allocations(request: flask.Request) -> flask.Response:
    if (healthy := health(request)) is not None:
        return healthy
    s = settings()
    run: Run | None = None
    ping: RangePing | None = None
    try:
        with recorded_run(FUNCTION, s.CLUSTER_ID) as run:
            ping, scheduled = accept_ping(request, s, run, RangePing)
            history = ping.history_range()
            run.db = database_from(s)
            timeouts: dict[str, float] = {}
            if ping.costJob is not None:  # 404 before any work; then the CostJob's timeouts apply
                costjob = parse_costjob(require_costjob(kube_from(s), ping.costJob))
                timeouts = dict(costjob.timeouts)
                run.counts = {"costjob": str(ping.costJob), "costjob_timeouts": timeouts}
                if costjob.ignored:
                    run.counts["costjob_timeouts_ignored"] = list(costjob.ignored)
            if "databaseInitTimeout" in timeouts:
                run.db.check(timeouts["databaseInitTimeout"])
            opencost = opencost_from(s, timeouts.get("openCostFetchTimeout"))
            kube = kube_from(s, timeouts.get("kubernetesOperationTimeout"))
            options = replace(_options(s), insert_timeout_seconds=timeouts.get("databaseInsertTimeout"))
            now = datetime.now(UTC)
            redriven: dict[str, int] = {}
            if history is not None:  # a history load: [from, to), within the time budget
                result = collect_range(
                    run.db, opencost, kube, options, start=history[0], end=history[1], now=now, run_id=run.run_id
                )
            else:
                result = collect(run.db, opencost, kube, options, scheduled=scheduled, now=now, run_id=run.run_id)
                # The safety net of on_sync: measure sync events accepted but never measured.
                redriven = redrive(run.db, opencost, kube, s.CLUSTER_ID)
                if redriven["redrive_failed"]:
                    result.warnings.append(f"{redriven['redrive_failed']} overdue sync event(s) could not be measured")
            run.counts = {**run.counts, **result.counts(), **redriven}
            run.outcome = result.outcome
            run.error = "; ".join(result.warnings) or None
        response = respond(
            200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts, "warnings": result.warnings}
        )
    except Exception as exc:  # classified and logged by recorded_run
        response = error_response(exc, run.run_id if run else None)
    if ping is not None and ping.costJob is not None and run is not None and run.db is not None:
        status_timeout = (run.counts.get("costjob_timeouts") or {}).get("statusUpdateTimeout")
        record_execution(kube_from(s, status_timeout), ping.costJob, run)
    return response


def _options(s: CollectAllocationsSettings) -> CollectOptions:
    return CollectOptions(
        cluster=s.CLUSTER_ID,
        aggregation=s.OPENCOST_AGGREGATE,
        hours_lookback=s.HOURS_LOOKBACK,
        owner_label=s.OWNER_LABEL,
        cost_center_label=s.COST_CENTER_LABEL,
        retention_months=s.ALLOCATION_RETENTION_MONTHS,
        history_hours=s.OPENCOST_HISTORY_HOURS,
        empty_grace_hours=s.EMPTY_HOUR_GRACE_HOURS,
        budget_seconds=s.COLLECT_BUDGET_SECONDS,
    )


def warm_up() -> None:
    """Cold start: validate settings, open the pool and migrate."""
    database_from(settings())
