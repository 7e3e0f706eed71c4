"""``collect_allocations``: the hourly ping (CronJob) that copies OpenCost allocations.

The edge only: authenticate the ping, parse its body, run the hourly jobs
(``usecases.collect_allocations.hourly``: collection, application history, re-drive, retention;
a history load collects its range only), and map the outcome to HTTP (200 success or partial,
4xx bad ping, 503 retry; a failed job's status once every job has run).
"""

from __future__ import annotations

from datetime import UTC, datetime

import flask

from finops.costjobs import parse_costjob
from functions.edge import edge, respond, settings_for, with_event_token
from functions.pings import RangePing, accept_ping
from infra.clients import database_from, kube_from
from infra.settings import CollectAllocationsSettings, current_secret
from usecases.collect_allocations.hourly import HourlyPing, hourly
from usecases.costjob_status import record_execution, require_costjob
from usecases.runs import Run

FUNCTION = "collect_allocations"
settings = settings_for(FUNCTION, CollectAllocationsSettings)


@edge(FUNCTION, settings)
def collect_allocations(request: flask.Request, s: CollectAllocationsSettings, run: Run) -> flask.Response:
    ping, scheduled = accept_ping(request, s, run, RangePing)
    run.db = database_from(s)
    timeouts: dict[str, float] = {}
    if ping.costJob is not None:  # 404 before any work; then the CostJob's timeouts apply
        costjob = parse_costjob(require_costjob(kube_from(s), ping.costJob))
        ref = ping.costJob
        run.afterwards.append(lambda done: record_execution(kube_from(s, _status_timeout(done)), ref, done))
        timeouts = dict(costjob.timeouts)
        run.counts = {"costjob": str(ping.costJob), "costjob_timeouts": timeouts}
        if costjob.ignored:
            run.counts["costjob_timeouts_ignored"] = list(costjob.ignored)
    if "databaseInitTimeout" in timeouts:
        run.db.check(timeouts["databaseInitTimeout"])
    jobs = hourly(
        run.db,
        s,
        HourlyPing(
            now=datetime.now(UTC),
            run_id=run.run_id,
            scheduled=scheduled,
            history=ping.history_range(),
            redrive_url=with_event_token(s.ON_SYNC_URL, current_secret(s, "EVENT_TOKEN")),
            redrive_source=f"/finops/{s.CLUSTER_ID}/{FUNCTION}",
            fetch_timeout=timeouts.get("openCostFetchTimeout"),
            kube_timeout=timeouts.get("kubernetesOperationTimeout"),
            insert_timeout=timeouts.get("databaseInsertTimeout"),
        ),
    )
    run.counts = {**run.counts, **jobs.counts()}
    jobs.raise_first_failure()
    run.outcome, run.error = jobs.outcome, "; ".join(jobs.warnings) or None
    return respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts, "warnings": jobs.warnings})


def _status_timeout(run: Run) -> float | None:
    """The CostJob's ``statusUpdateTimeout``, if it set one."""
    timeout = (run.counts.get("costjob_timeouts") or {}).get("statusUpdateTimeout")
    return float(timeout) if timeout is not None else None
