"""The settings of the functions that measure: ``collect_allocations``, ``on_sync`` and ``backfill``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, PrivateAttr, SecretStr, field_validator, model_validator

from finops.allocations import DEFAULT_AGGREGATION, parse_aggregation
from finops.carbon import EmissionTable, parse_table
from finops.errors import InvalidInput
from finops.labels import validate_label_key
from infra.settings.base import (
    CommonSettings,
    EventReceiverSettings,
    FleetSettings,
    KubeSettings,
    OpenCostSettings,
    PingSettings,
    PricingSettings,
    RedriveSettings,
    as_config,
    http_url,
)


class CollectAllocationsSettings(
    PingSettings, OpenCostSettings, KubeSettings, RedriveSettings, PricingSettings, FleetSettings
):
    """``collect_allocations``: copies OpenCost allocations hour by hour (or computes the same rows
    from Prometheus, ``ALLOCATION_SOURCE=prometheus``)."""

    ALLOCATION_SOURCE: Literal["opencost", "prometheus"] = "opencost"
    """Where the hourly allocations come from: ``opencost`` (its allocation API, ``OPENCOST_URL``)
    or ``prometheus`` (the same method computed from kube-state-metrics and cAdvisor series in
    ``PROMETHEUS_URL``, priced with the active PriceBook; no OpenCost needed)."""

    OPENCOST_URL: str | None = None  # type: ignore[assignment]  # required for the opencost source only
    """Base URL of OpenCost's API, e.g. ``http://opencost.opencost:9003``. Required when
    ``ALLOCATION_SOURCE`` is ``opencost``."""

    PROMETHEUS_URL: str | None = None
    """Base URL of Prometheus's HTTP API, e.g. ``http://prometheus-server.monitoring:80``. Required
    when ``ALLOCATION_SOURCE`` is ``prometheus``."""

    PROMETHEUS_TIMEOUT_SECONDS: float = Field(default=30, gt=0, le=600)
    """Timeout of one Prometheus query (also sent as the query's own ``timeout``)."""

    PROMETHEUS_BEARER_TOKEN: SecretStr | None = None
    """Bearer token sent to Prometheus (a proxy or a managed Prometheus that requires one); unset:
    none. A secret."""

    GPU_BASIS: Literal["request", "usage", "max"] = "request"
    """What a workload is billed of the GPU it ran on (docs/how-to/gpus.md): ``request`` (what it
    reserved, OpenCost's rule), ``usage`` (DCGM's measured engine activity) or ``max`` (the larger,
    the rule for CPU and memory). A time-sliced GPU is split by measured use whatever the basis.
    Set per cluster: each cluster's collector has its own."""

    GPU_FIGURES: Literal["source", "prometheus"] = "source"
    """Where each container's GPU figures (how its GPU is shared, what it requested and used of it)
    come from: ``source`` (the allocation source's) or ``prometheus`` (kube-state-metrics and DCGM
    through ``PROMETHEUS_URL``, with OpenCost's allocations and prices: OpenCost does not say which
    MIG slice or HAMi fraction a pod holds)."""

    GPU_MIG_BY: Literal["compute", "memory"] = "compute"
    """How a MIG slice is priced as a share of its physical GPU: by ``compute`` slices (a 1g slice
    is 1 of 7) or by ``memory`` slices (a 10gb slice of an 80 GB GPU is 1 of 8)."""

    CARBON_EMISSION_TABLE: str | None = None
    """Path of the operator's emission table (a YAML file, e.g. a mounted ConfigMap): grams CO2e per
    hour by node instance type or ``key=value`` node label, with the figures' ``source`` named
    (docs/how-to/carbon.md, "The Prometheus source: an emission table"). Read and checked at cold
    start. For ``ALLOCATION_SOURCE=prometheus`` only (OpenCost estimates its own); unset: the
    Prometheus source stores no emissions."""

    _emission_table: EmissionTable | None = PrivateAttr(default=None)

    @property
    def emission_table(self) -> EmissionTable | None:
        """``CARBON_EMISSION_TABLE``, parsed at cold start; None when unset."""
        return self._emission_table

    @field_validator("OPENCOST_URL")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:  # type: ignore[override]  # optional here
        return None if value is None else OpenCostSettings._http_url(value)

    @field_validator("PROMETHEUS_URL")
    @classmethod
    def _prometheus_url(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value, "http://prometheus.monitoring:9090").rstrip("/")

    @model_validator(mode="after")
    def _source_endpoint(self) -> CollectAllocationsSettings:
        if self.ALLOCATION_SOURCE == "opencost" and not self.OPENCOST_URL:
            raise ValueError("OPENCOST_URL is required when ALLOCATION_SOURCE is opencost")
        if self.ALLOCATION_SOURCE == "opencost" and self.CARBON_EMISSION_TABLE:
            raise ValueError(
                "CARBON_EMISSION_TABLE is for ALLOCATION_SOURCE prometheus: with opencost, emissions are "
                "OpenCost's own estimates (start OpenCost with CARBON_ESTIMATES_ENABLED=true)"
            )
        if self.ALLOCATION_SOURCE == "opencost" and self.GPU_FIGURES == "prometheus":
            if not self.PROMETHEUS_URL:
                raise ValueError("PROMETHEUS_URL is required when GPU_FIGURES is prometheus")
            if self.OPENCOST_AGGREGATE != DEFAULT_AGGREGATION:
                raise ValueError(
                    f"OPENCOST_AGGREGATE must be {DEFAULT_AGGREGATION} when GPU_FIGURES is prometheus "
                    "(its figures are per container)"
                )
        if self.ALLOCATION_SOURCE == "prometheus":
            if not self.PROMETHEUS_URL:
                raise ValueError("PROMETHEUS_URL is required when ALLOCATION_SOURCE is prometheus")
            if self.PRICING_SOURCE == "opencost":
                raise ValueError(
                    "PRICING_SOURCE opencost needs ALLOCATION_SOURCE opencost: the Prometheus source has no "
                    "prices of its own (it prices with the active PriceBook)"
                )
            if self.OPENCOST_AGGREGATE != DEFAULT_AGGREGATION:
                raise ValueError(
                    f"OPENCOST_AGGREGATE must be {DEFAULT_AGGREGATION} when ALLOCATION_SOURCE is prometheus "
                    "(the only aggregation the Prometheus source computes)"
                )
        return self

    HOURS_LOOKBACK: int = Field(default=5, ge=0, le=8784)
    """Hours before the scheduled hour always considered (written final unless already settled);
    the first run of a new cluster starts its ledger there. At most ``OPENCOST_HISTORY_HOURS``."""

    OPENCOST_HISTORY_HOURS: int = Field(default=360, ge=1, le=8784)
    """How far back OpenCost still answers (its Prometheus retention; 15 days by default): hours
    older than this that are not final are given up as lost."""

    EMPTY_HOUR_GRACE_HOURS: int = Field(default=6, ge=0, le=720)
    """An hour OpenCost answers with no allocations stays open and is retried until this long after
    it ended, then it is lost."""

    OPENCOST_SHARD_NAMESPACES: int = Field(default=0, ge=0, le=10_000)
    """Namespaces per request when an hour is asked in namespace batches (OpenCost's ``filter``,
    honoured since OpenCost 1.115; an OpenCost that ignores it is detected and the hour refused).
    0 (the default): every hour is one request."""

    OPENCOST_SHARD_ABOVE_BYTES: int = Field(default=256 * 2**20, ge=0)
    """With ``OPENCOST_SHARD_NAMESPACES`` set: an hour whose single answer outgrows this many bytes,
    or fails after its retries, is asked again in namespace batches; 0: every hour in batches."""

    COLLECT_BUDGET_SECONDS: float = Field(default=240, gt=0, le=590)
    """Work one invocation does before answering (keep it under the Service's timeoutSeconds)."""

    OPENCOST_AGGREGATE: str = DEFAULT_AGGREGATION
    """OpenCost ``aggregate`` of the stored rows."""

    OWNER_LABEL: str = "team"
    """Namespace label naming the owning team (OpenCost's sanitised form is accepted too)."""

    COST_CENTER_LABEL: str = "cost-center"
    """Namespace label naming the cost centre."""

    ALLOCATION_RETENTION_MONTHS: int = Field(default=0, ge=0, le=120)
    """Monthly partitions of ``provider_allocations`` older than this are dropped; 0 keeps all."""

    JOB_RUNS_RETENTION_DAYS: int = Field(default=90, ge=0, le=3650)
    """``job_runs`` rows (every function's run history) older than this are deleted; 0 keeps all."""

    SYNC_EVENTS_RETENTION_DAYS: int = Field(default=90, ge=0, le=3650)
    """Closed (measured or failed) ``sync_events`` received longer ago than this are deleted; pending
    or measuring events never are; 0 keeps all."""

    COST_ACTUALS_RETENTION_DAYS: int = Field(default=400, ge=0, le=3650)
    """``cost_actuals`` records measured longer ago than this are deleted, except each
    application's latest (its current actual); 0 keeps all."""

    DAILY_HISTORY_DAYS: int = Field(default=400, ge=1, le=3650)
    """Days of daily cost history kept per application (``app_daily_costs``): a new application is
    backfilled at most this far back, and older days are deleted."""

    @model_validator(mode="after")
    def _lookback_within_history(self) -> CollectAllocationsSettings:
        if self.HOURS_LOOKBACK > self.OPENCOST_HISTORY_HOURS:
            raise ValueError(
                f"HOURS_LOOKBACK ({self.HOURS_LOOKBACK}) is beyond "
                f"OPENCOST_HISTORY_HOURS ({self.OPENCOST_HISTORY_HOURS})"
            )
        return self

    @field_validator("OPENCOST_AGGREGATE")
    @classmethod
    def _aggregation(cls, value: str) -> str:
        return as_config(lambda v, field: parse_aggregation(v), value, "OPENCOST_AGGREGATE")

    @model_validator(mode="after")
    def _read_emission_table(self) -> CollectAllocationsSettings:
        if self.CARBON_EMISSION_TABLE:
            self._emission_table = read_emission_table(self.CARBON_EMISSION_TABLE)
        return self

    @field_validator("OWNER_LABEL", "COST_CENTER_LABEL")
    @classmethod
    def _label_key(cls, value: str) -> str:
        return as_config(validate_label_key, value, "label key")


def read_emission_table(path: str) -> EmissionTable:
    """The emission table in the YAML file ``path``; a ``ValueError`` naming the variable, the file
    and the problem (the entry's field, ``finops.carbon.parse_table``) otherwise."""
    where = f"CARBON_EMISSION_TABLE {path}"
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"{where}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where} is not UTF-8 text (byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValueError(f"{where}{line}: not valid YAML") from exc
    try:
        return parse_table(document, origin=where)
    except InvalidInput as exc:
        raise ValueError(exc.message) from exc


class OnSyncSettings(CommonSettings, OpenCostSettings, KubeSettings, EventReceiverSettings):
    """``on_sync``: the Argo CD Notifications webhook and the measurement it triggers (names match
    without case and empty values are kept: the configuration pydantic merges, the last base's)."""

    WEBHOOK_TOKEN: SecretStr
    """Bearer token Argo CD Notifications sends (``argocd-notifications-secret``). Required; a secret."""

    MEASURE_SETTLE_SECONDS: float = Field(default=5, ge=0, le=300)
    """Wait after the sync before measuring, so the new pods' metrics are recorded."""

    MAX_IN_FLIGHT: int = Field(default=20, ge=1, le=1000)
    """Measurements in flight per replica; a webhook beyond that gets 429."""

    CLUSTER_SCOPE_APP: str = "argocd:cost-gate"
    """The gate application (``namespace:name``) that authorises cluster-wide reads; its syncs are
    not measured. ``off`` disables cluster-wide reads."""

    K_SINK: str | None = None
    """Where accepted sync events go (injected by a Knative SinkBinding). Unset: delivered to
    this function's own URL (the local stack)."""

    PORT: int = 8080
    """The port functions-framework serves on (set by Knative); the local delivery target."""


class BackfillSettings(PingSettings, OpenCostSettings, KubeSettings, RedriveSettings):
    """``backfill``: measures every Argo CD Application that has no record yet (install)."""

    BACKFILL_CONCURRENCY: int = Field(default=4, ge=0, le=64)
    """Namespaces measured at once; 0 disables backfill."""

    BACKFILL_BUDGET_SECONDS: float = Field(default=240, gt=0, le=590)
    """Work one invocation does before answering (keep it under the Service's timeoutSeconds)."""

    BACKFILL_DEADLINE_SECONDS: float = Field(default=900, gt=0, le=3600)
    """The whole backfill, lock wait included, from its first invocation."""

    PRUNE_REMOTE_COST: bool = False
    """Delete records of applications that now deploy to another cluster (live Application list)."""

    MEASURE_SETTLE_SECONDS: float = Field(default=0, ge=0, le=300)
    """Settle delay before a measurement (none needed at install)."""

    CLUSTER_SCOPE_APP: str = "argocd:cost-gate"
    """The gate application (``namespace:name``); like ``on_sync``, the backfill does not measure it."""

    @field_validator("PRUNE_REMOTE_COST", mode="before")
    @classmethod
    def _exact_bool(cls, value: object) -> object:
        if isinstance(value, str) and value not in {"true", "false"}:
            raise ValueError(f"{value!r} must be exactly true or false")
        return value
