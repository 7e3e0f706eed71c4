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
from functions.edge import current_secret, edge, respond, settings_for, with_event_token
from functions.pings import RangePing, accept_ping
from infra.clients import database_from, kube_from, opencost_from, prometheus_from
from infra.prometheus.source import PrometheusAllocations
from infra.settings import CollectAllocationsSettings
from usecases.app_history.recorder import RecorderOptions, record_daily
from usecases.appcost.syncs import redrive
from usecases.collect_allocations.answers import ShardOptions
from usecases.collect_allocations.retention import RowRetention
from usecases.collect_allocations.service import CollectOptions, collect, collect_range
from usecases.collect_allocations.sources import AllocationSource
from usecases.costjob_status import record_execution, require_costjob
from usecases.runs import Run

FUNCTION = "collect_allocations"
settings = settings_for(FUNCTION, CollectAllocationsSettings)


@functions_framework.http
@edge(FUNCTION, settings)
def collect_allocations(request: flask.Request, s: CollectAllocationsSettings, run: Run) -> flask.Response:
    ping, scheduled = accept_ping(request, s, run, RangePing)
    history = ping.history_range()
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
    source = allocation_source(s, timeouts.get("openCostFetchTimeout"))
    kube = kube_from(s, timeouts.get("kubernetesOperationTimeout"))
    options = replace(_options(s), insert_timeout_seconds=timeouts.get("databaseInsertTimeout"))
    now = datetime.now(UTC)
    redriven: dict[str, int] = {}
    daily: dict[str, int] = {}
    if history is not None:  # a history load: [from, to), within the time budget
        result = collect_range(
            run.db, source, kube, options, start=history[0], end=history[1], now=now, run_id=run.run_id
        )
    else:
        result = collect(run.db, source, kube, options, scheduled=scheduled, now=now, run_id=run.run_id)
        # Each application's daily cost history, from the hours stored (no OpenCost call).
        history_options = RecorderOptions(s.CLUSTER_ID, s.OPENCOST_AGGREGATE, s.DAILY_HISTORY_DAYS)
        daily = record_daily(run.db, history_options, today=now.date()).counts()
        # The safety net of on_sync: sync events accepted but never measured are sent to
        # on-sync again as events (measured there, in requests of their own).
        redriven = redrive(
            run.db,
            s.CLUSTER_ID,
            with_event_token(s.ON_SYNC_URL, current_secret(s, "EVENT_TOKEN")),
            f"/finops/{s.CLUSTER_ID}/{FUNCTION}",
        )
    run.counts = {**run.counts, **result.counts(), **redriven, **daily}
    run.outcome = result.outcome
    run.error = "; ".join(result.warnings) or None
    return respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts, "warnings": result.warnings})


def allocation_source(s: CollectAllocationsSettings, timeout: float | None = None) -> AllocationSource:
    """OpenCost's allocation API, or the same method computed from Prometheus (``ALLOCATION_SOURCE``);
    a CostJob's ``openCostFetchTimeout`` bounds either."""
    if s.ALLOCATION_SOURCE == "prometheus":
        assert s.PROMETHEUS_URL is not None  # the settings require it for this source
        client = prometheus_from(s.PROMETHEUS_URL, timeout or s.PROMETHEUS_TIMEOUT_SECONDS, s.PROMETHEUS_BEARER_TOKEN)
        return PrometheusAllocations(
            client, cluster=s.CLUSTER_ID, owner_label=s.OWNER_LABEL, cost_center_label=s.COST_CENTER_LABEL
        )
    return opencost_from(s, timeout)


def _status_timeout(run: Run) -> float | None:
    """The CostJob's ``statusUpdateTimeout``, if it set one."""
    timeout = (run.counts.get("costjob_timeouts") or {}).get("statusUpdateTimeout")
    return float(timeout) if timeout is not None else None


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
        source=s.ALLOCATION_SOURCE,
        shards=ShardOptions(s.OPENCOST_SHARD_NAMESPACES, s.OPENCOST_SHARD_ABOVE_BYTES),
        row_retention=RowRetention(
            job_runs_days=s.JOB_RUNS_RETENTION_DAYS,
            sync_events_days=s.SYNC_EVENTS_RETENTION_DAYS,
            cost_actuals_days=s.COST_ACTUALS_RETENTION_DAYS,
        ),
    )
