"""The hourly ping of ``collect_allocations``: four use cases run in order (``usecases.jobs``), each
failing on its own:

1. ``collect``: every unsettled hour back to the horizon, then the pinned hour;
2. ``app_history``: each application's daily cost history, from the hours stored;
3. ``redrive``: sync events accepted but never measured, sent to on_sync again;
4. ``retention``: expired rows and monthly partitions.

A history load (``from``/``to``) runs the collection of that range only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from datetime import datetime

from finops.gpu_hours import GpuOptions
from finops.gpus import GpuBasis, MigBy
from finops.pricing import Setting
from infra.clients import kube_from, opencost_from, prometheus_from
from infra.kube import KubeClient
from infra.postgres import Database
from infra.prometheus.source import PrometheusAllocations
from infra.settings import CollectAllocationsSettings
from usecases.app_history.recorder import RecorderOptions, record_daily
from usecases.appcost.syncs import redrive
from usecases.collect_allocations.answers import ShardOptions
from usecases.collect_allocations.retention import Retention, RowRetention, apply_retention
from usecases.collect_allocations.service import CollectOptions, CollectResult, FleetBucket, collect, collect_range
from usecases.collect_allocations.sources import AllocationSource, WithGpuFigures
from usecases.jobs import Done, Jobs, run_jobs


@dataclass(frozen=True)
class HourlyPing:
    """One ping's inputs: its pinned hour or history range, and where overdue sync events go."""

    now: datetime
    run_id: str
    scheduled: datetime | None = None
    history: tuple[datetime, datetime] | None = None
    redrive_url: str = ""
    redrive_source: str = ""
    fetch_timeout: float | None = None  # a CostJob's openCostFetchTimeout
    kube_timeout: float | None = None  # its kubernetesOperationTimeout
    insert_timeout: float | None = None  # its databaseInsertTimeout


def hourly(db: Database, s: CollectAllocationsSettings, ping: HourlyPing) -> Jobs:
    source = allocation_source(s, ping.fetch_timeout)
    kube: KubeClient = kube_from(s, ping.kube_timeout)
    options = replace(options_from(s), insert_timeout_seconds=ping.insert_timeout)
    if ping.history is not None:
        start, end = ping.history
        collected = functools.partial(collect_range, start=start, end=end)
        return run_jobs(
            [("collect", lambda: _done(collected(db, source, kube, options, now=ping.now, run_id=ping.run_id)))]
        )
    history = RecorderOptions(s.CLUSTER_ID, s.OPENCOST_AGGREGATE, s.DAILY_HISTORY_DAYS)
    hours = functools.partial(collect, db, source, kube, options, scheduled=ping.scheduled)
    return run_jobs(
        [
            ("collect", lambda: _done(hours(now=ping.now, run_id=ping.run_id))),
            ("app_history", lambda: Done(record_daily(db, history, today=ping.now.date()).counts())),
            ("redrive", lambda: Done(redrive(db, s.CLUSTER_ID, ping.redrive_url, ping.redrive_source))),
            ("retention", lambda: Done(apply_retention(db, s.CLUSTER_ID, retention_from(s), ping.now))),
        ]
    )


def _done(result: CollectResult) -> Done:
    return Done(result.counts(), result.warnings)


def allocation_source(s: CollectAllocationsSettings, timeout: float | None = None) -> AllocationSource:
    """OpenCost's allocation API, or the same method computed from Prometheus (``ALLOCATION_SOURCE``);
    a CostJob's ``openCostFetchTimeout`` bounds either."""
    if s.ALLOCATION_SOURCE == "prometheus":
        assert s.PROMETHEUS_URL is not None  # the settings require it for this source
        client = prometheus_from(s.PROMETHEUS_URL, timeout or s.PROMETHEUS_TIMEOUT_SECONDS, s.PROMETHEUS_BEARER_TOKEN)
        return PrometheusAllocations(
            client, cluster=s.CLUSTER_ID, owner_label=s.OWNER_LABEL, cost_center_label=s.COST_CENTER_LABEL
        )
    opencost = opencost_from(s, timeout)
    if s.GPU_FIGURES == "prometheus":  # OpenCost's allocations, kube-state-metrics' and DCGM's GPUs
        assert s.PROMETHEUS_URL is not None  # the settings require it
        client = prometheus_from(s.PROMETHEUS_URL, timeout or s.PROMETHEUS_TIMEOUT_SECONDS, s.PROMETHEUS_BEARER_TOKEN)
        return WithGpuFigures(opencost, PrometheusAllocations(client, cluster=s.CLUSTER_ID))
    return opencost


def options_from(s: CollectAllocationsSettings) -> CollectOptions:
    return CollectOptions(
        cluster=s.CLUSTER_ID,
        aggregation=s.OPENCOST_AGGREGATE,
        hours_lookback=s.HOURS_LOOKBACK,
        owner_label=s.OWNER_LABEL,
        cost_center_label=s.COST_CENTER_LABEL,
        history_hours=s.OPENCOST_HISTORY_HOURS,
        empty_grace_hours=s.EMPTY_HOUR_GRACE_HOURS,
        budget_seconds=s.COLLECT_BUDGET_SECONDS,
        source=s.ALLOCATION_SOURCE,
        shards=ShardOptions(s.OPENCOST_SHARD_NAMESPACES, s.OPENCOST_SHARD_ABOVE_BYTES),
        pricing=Setting(s.PRICING_SOURCE, s.PRICING_CURRENCY),
        gpus=GpuOptions(GpuBasis(s.GPU_BASIS), MigBy(s.GPU_MIG_BY)),
        carbon=s.emission_table,
        fleet=None
        if s.FLEET_BUCKET is None
        else FleetBucket(s.FLEET_BUCKET, s.FLEET_S3_ENDPOINT_URL, s.FLEET_TIMEOUT_SECONDS),
    )


def retention_from(s: CollectAllocationsSettings) -> Retention:
    rows = RowRetention(
        job_runs_days=s.JOB_RUNS_RETENTION_DAYS,
        sync_events_days=s.SYNC_EVENTS_RETENTION_DAYS,
        cost_actuals_days=s.COST_ACTUALS_RETENTION_DAYS,
    )
    return Retention(partition_months=s.ALLOCATION_RETENTION_MONTHS, rows=rows)
