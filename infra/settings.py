"""Configuration: one pydantic-settings class per function, read from the environment once.

Field names are the environment variable names, so a validation error names the variable the
operator has to fix. Secrets are ``SecretStr`` and never appear in logs or reprs. Values are passed
down as arguments: nothing below ``functions/`` reads ``os.environ``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from finops.allocations import DEFAULT_AGGREGATION, parse_aggregation
from finops.errors import InvalidInput, PermanentError
from finops.hours import parse_timestamp
from finops.labels import validate_label_key, validate_namespace
from infra.logs import redact


class ConfigError(PermanentError):
    """The function's configuration is invalid."""


class CommonSettings(BaseSettings):
    """Settings every function shares."""

    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", case_sensitive=True, defer_build=True)

    DATABASE_URL: SecretStr
    """PostgreSQL DSN (``postgresql://user:pass@host:5432/db``). Required; a secret."""

    CLUSTER_ID: str = "default"
    """Name of the cluster this function measures; stamped on every row (one database, many clusters)."""

    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Lowest severity written to the JSON log."""

    DATABASE_POOL: Literal["pool", "null"] = "pool"
    """``pool`` keeps connections per replica; ``null`` opens one per use (behind PgBouncer)."""

    DATABASE_POOL_MAX: int = Field(default=8, ge=1, le=64)
    """Most connections one replica holds."""

    DATABASE_CONNECT_TIMEOUT_SECONDS: float = Field(default=10, gt=0, le=120)
    """How long to wait for a connection before answering 503."""

    MIGRATE_ON_START: bool = False
    """Apply pending migrations at cold start. Off: the install Job runs ``finops migrate`` and a
    cold start only checks the schema version (refusing one newer than the image knows)."""

    DATABASE_LOCK_TIMEOUT_SECONDS: float = Field(default=30, ge=0, le=3600)
    """PostgreSQL ``lock_timeout`` of every transaction (a lock waited on longer fails it); 0: none."""

    DATABASE_STATEMENT_TIMEOUT_SECONDS: float = Field(default=300, ge=0, le=86400)
    """PostgreSQL ``statement_timeout`` of every statement (migrations excepted); 0: none."""

    SECRETS_DIR: str | None = None
    """A mounted copy of the Secret (a ``secret`` volume, not ``subPath``): the tokens
    (``PING_TOKEN``, ``WEBHOOK_TOKEN``, ``PROXY_TOKEN``, ``EVENT_TOKEN``, ``METRICS_TOKEN``,
    ``CI_TOKEN``) are read from the file of their key there on every request, re-read when it
    changes, so a rotated Secret applies to warm pods without a new revision; a key without a
    file keeps its environment value."""

    @field_validator("CLUSTER_ID")
    @classmethod
    def _cluster_is_a_name(cls, value: str) -> str:
        return _as_config(validate_namespace, value, "CLUSTER_ID")


class ServingSettings(BaseSettings):
    """How the served function protects its threads (read at import, before the target's settings)."""

    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", case_sensitive=True, defer_build=True)

    THREADS: int = Field(default_factory=lambda: (os.cpu_count() or 1) * 4, ge=1, le=1024)
    """gunicorn's threads (functions-framework reads the same variable; its default is 4 per CPU)."""

    HEALTH_RESERVED_THREADS: int = Field(default=2, ge=1, le=64)
    """Threads never spent receiving request bodies (at most half of ``THREADS``): ``/healthz`` and
    bodiless requests always find one, however many uploads stall; a body arriving while all the
    others are receiving one gets 503 at once."""

    BODY_READ_TIMEOUT_SECONDS: float = Field(default=10, gt=0, le=300)
    """A request body must arrive within this long of its headers, else 408 and the connection is
    closed (a stalled upload frees its thread)."""


class PingSettings(CommonSettings):
    """Settings of the functions pinged on a schedule (CronJob)."""

    PING_TOKEN: SecretStr
    """Bearer token the CronJob's ping must carry. Required; a secret."""

    SCHEDULED_TIMESTAMP: datetime | None = None
    """Pins the run's hour (RFC 3339) when the ping body has no ``scheduledTime``."""

    @field_validator("SCHEDULED_TIMESTAMP", mode="before")
    @classmethod
    def _rfc3339(cls, value: object) -> object:
        if isinstance(value, str):
            return _as_config(lambda v, field: parse_timestamp(v, field=field), value, "SCHEDULED_TIMESTAMP")
        return value


class OpenCostSettings(BaseSettings):
    """How to reach OpenCost."""

    model_config = SettingsConfigDict(defer_build=True)  # validators built when first loaded: cold start

    OPENCOST_URL: str
    """Base URL of OpenCost's API, e.g. ``http://opencost.opencost:9003``. Required."""

    OPENCOST_TIMEOUT_SECONDS: float = Field(default=60, gt=0, le=600)
    """Overall deadline of one OpenCost request, the answer's body included (retried like a timeout)."""

    OPENCOST_RETRIES: int = Field(default=3, ge=0, le=10)
    """Retries (with backoff) on connection errors and 5xx answers."""

    @field_validator("OPENCOST_URL")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.fullmatch(r"^https?://[^\s/]+(/\S*)?$", value):
            raise ValueError(f"{redact(value)!r} is not an http(s) URL such as http://opencost.opencost:9003")
        return value.rstrip("/")


class KubeSettings(BaseSettings):
    """How to reach the Kubernetes API."""

    model_config = SettingsConfigDict(defer_build=True)  # validators built when first loaded: cold start

    KUBE_API_URL: str | None = None
    """Plain-HTTP API URL (local stack and tests). Unset: in-cluster config, else ``KUBECONFIG``."""

    KUBE_TIMEOUT_SECONDS: float = Field(default=10, gt=0, le=120)
    """Timeout of one Kubernetes API request."""


class EventSettings(BaseSettings):
    """The credential of CloudEvent deliveries (``on_sync``'s measurements, ``reconcile``'s changes)."""

    model_config = SettingsConfigDict(defer_build=True)  # validators built when first loaded: cold start

    EVENT_TOKEN: SecretStr | None = None
    """Shared secret an event delivery must carry as the ``token`` query parameter of the URL it is
    delivered to (the Trigger's subscriber ``uri``, the ApiServerSource's sink ``uri``, the re-drive's
    ``ON_SYNC_URL``), or as ``Authorization: Bearer``. Unset: deliveries are not authenticated
    (only rate-limited); docs/deploy.md, "Authenticated events". A secret."""


class EventReceiverSettings(EventSettings):
    """How many event deliveries one replica accepts."""

    EVENTS_PER_SECOND: float = Field(default=20, gt=0, le=10_000)
    """Event deliveries accepted per second per replica (a token bucket); beyond it, 429 with
    ``Retry-After`` (the Broker and the ApiServerSource retry)."""

    EVENTS_BURST: int = Field(default=50, ge=1, le=100_000)
    """Deliveries accepted at once before ``EVENTS_PER_SECOND`` applies."""


class RedriveSettings(EventSettings):
    """Where overdue accepted sync events are re-driven (``collect_allocations``, ``backfill``)."""

    ON_SYNC_URL: str = "http://on-sync.finops.svc.cluster.local"
    """The on-sync Service: each accepted sync event still unmeasured after 10 minutes is sent
    there as a ``dev.finops.sync.accepted`` CloudEvent and measured in a request of its own (the
    local stack sets its served on_sync)."""

    @field_validator("ON_SYNC_URL")
    @classmethod
    def _on_sync_url(cls, value: str) -> str:
        if not re.fullmatch(r"^https?://[^\s/]+(/\S*)?$", value):
            raise ValueError(f"{redact(value)!r} is not an http(s) URL such as http://on-sync.finops.svc.cluster.local")
        return value


class CollectAllocationsSettings(PingSettings, OpenCostSettings, KubeSettings, RedriveSettings):
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

    @field_validator("OPENCOST_URL")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:  # type: ignore[override]  # optional here
        return None if value is None else OpenCostSettings._http_url(value)

    @field_validator("PROMETHEUS_URL")
    @classmethod
    def _prometheus_url(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"^https?://[^\s/]+(/\S*)?$", value):
            raise ValueError(f"{redact(value)!r} is not an http(s) URL such as http://prometheus.monitoring:9090")
        return None if value is None else value.rstrip("/")

    @model_validator(mode="after")
    def _source_endpoint(self) -> CollectAllocationsSettings:
        if self.ALLOCATION_SOURCE == "opencost" and not self.OPENCOST_URL:
            raise ValueError("OPENCOST_URL is required when ALLOCATION_SOURCE is opencost")
        if self.ALLOCATION_SOURCE == "prometheus":
            if not self.PROMETHEUS_URL:
                raise ValueError("PROMETHEUS_URL is required when ALLOCATION_SOURCE is prometheus")
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
        return _as_config(lambda v, field: parse_aggregation(v), value, "OPENCOST_AGGREGATE")

    @field_validator("OWNER_LABEL", "COST_CENTER_LABEL")
    @classmethod
    def _label_key(cls, value: str) -> str:
        return _as_config(validate_label_key, value, "label key")


class OnSyncSettings(CommonSettings, OpenCostSettings, KubeSettings, EventReceiverSettings):
    """``on_sync``: the Argo CD Notifications webhook and the measurement it triggers."""

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


class CostApiSettings(CommonSettings, KubeSettings):
    """``cost_api``: reads behind Argo CD's proxy extension (the Kubernetes API for the rightsizing
    and orphaned-pod routes only)."""

    PROXY_TOKEN: SecretStr
    """Value of the secret header the Argo CD proxy injects (from ``argocd-secret``). Required."""

    PROXY_TOKEN_HEADER: str = "X-Finops-Proxy-Token"  # noqa: S105 - a header name, not a secret
    """Name of that header."""

    CLUSTER_SCOPE_APP: str = "argocd:cost-gate"
    """The gate application (``namespace:name``) whose header authorises cluster-wide routes; ``off``
    disables them."""

    POLICY_PATH: str | None = None
    """The chargeback policy file (a mounted ConfigMap); unset: the chargeback route answers 404."""

    DAILY_HISTORY_DAYS: int = Field(default=400, ge=1, le=3650)
    """The most days ``/apps/{ns}/{name}/daily`` serves (``days``); as ``collect_allocations`` keeps."""

    METRICS_TOKEN: SecretStr | None = None
    """Bearer token Prometheus sends to scrape ``GET /metrics`` (never Argo CD's proxy headers);
    unset: ``/metrics`` answers 404 naming this variable. A secret."""

    CI_TOKEN: SecretStr | None = None
    """Bearer token CI sends to push cloud estimates (``POST /api/v1/apps/{ns}/{name}/cloud-estimate``;
    never Argo CD's proxy headers); unset: that route answers 404 naming this variable. A secret."""

    OPENCOST_URL: str | None = None
    """OpenCost's API, probed (health endpoint, short timeout) by ``/api/v1/data-quality``; unset:
    reachability is reported as unknown."""

    @field_validator("OPENCOST_URL", mode="before")
    @classmethod
    def _opencost_http_url(cls, value: object) -> object:
        if value is None or value == "":  # empty: unset, like every other optional variable
            return None
        return OpenCostSettings._http_url(value) if isinstance(value, str) else value


class BillingSettings(BaseSettings):
    """Where OpenCost's custom pricing lives (the active PriceBook is rendered there)."""

    model_config = SettingsConfigDict(defer_build=True)  # validators built when first loaded: cold start

    OPENCOST_NAMESPACE: str = "opencost"
    """Namespace of OpenCost's Deployment and pricing ConfigMap."""

    OPENCOST_DEPLOYMENT: str = "opencost"
    """OpenCost's Deployment, restarted (pod-template annotation) when the pricing changes."""

    OPENCOST_PRICING_CONFIGMAP: str = "finops-operator-custom-pricing-configs"
    """The ConfigMap OpenCost mounts as ``default.json`` (the operator's name, kept)."""

    RENDER_OPENCOST_PRICING: bool = True
    """Write the active PriceBook into OpenCost's pricing ConfigMap; false leaves OpenCost alone."""

    MTO_ENABLED: str = "false"
    """Exactly ``true`` applies the FinOpsProvider to the Multi Tenant Operator's OpenCost resource."""

    MTO_OPENCOST: str = "dependencies.tenantoperator.stakater.com/v1alpha1/opencosts/multi-tenant-operator/opencost"
    """That resource as ``group/version/plural/namespace/name``."""

    @field_validator("MTO_OPENCOST")
    @classmethod
    def _five_parts(cls, value: str) -> str:
        if len(value.split("/")) != 5 or not all(value.split("/")):
            raise ValueError(f"{value!r} is not group/version/plural/namespace/name")
        return value


class ReconcileSettings(CommonSettings, KubeSettings, BillingSettings, EventReceiverSettings):
    """``reconcile``: PriceBooks, Offerings and Subscriptions on every change (ApiServerSource)."""

    PING_TOKEN: SecretStr
    """Bearer token a full pass (a POST that is not a CloudEvent) must carry, as the hourly pings
    do. Required; a secret."""


class CollectChargesSettings(PingSettings, KubeSettings, BillingSettings):
    """``collect_charges``: prices every activated Subscription hour by hour."""

    OPENCOST_AGGREGATE: str = DEFAULT_AGGREGATION
    """The aggregation of the allocation rows usage is priced from (as collect_allocations')."""

    CHARGES_BUDGET_SECONDS: float = Field(default=240, gt=0, le=590)
    """Pricing stops between batches after this long and answers ``remaining``; the next ping
    continues (keep it under the Service's timeout, with room for the status writes)."""

    CHARGES_CHUNK_HOURS: int = Field(default=168, ge=1, le=8784)
    """At most this many hours of one Subscription's source in one batch (a backlog is priced in turns)."""

    CHARGES_BATCH_ROWS: int = Field(default=20_000, ge=100, le=1_000_000)
    """About this many charge rows per batch: one transaction, and what bounds a run's memory."""


def _as_config(check: Callable[..., object], value: str, field: str) -> str:
    """Run a domain validator, re-raising its message as a pydantic-visible ``ValueError``."""
    try:
        result = check(value, field=field)
    except InvalidInput as exc:
        raise ValueError(exc.message.removeprefix(f"{field}: ")) from exc
    return result if isinstance(result, str) else value


S = TypeVar("S", bound=BaseSettings)


def database_url() -> str:
    """``DATABASE_URL`` for the ``finops`` commands, or a ``ConfigError`` saying it is unset."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        raise ConfigError("DATABASE_URL is not set (e.g. postgresql://finops@db.example:5432/finops)")
    return url


@functools.cache
def _from_mapping_only(settings_class: type[S]) -> type[S]:
    """``settings_class`` reading only what it is given (pydantic-settings otherwise also reads the
    process environment, even through ``model_validate``)."""

    class Given(settings_class):  # type: ignore[valid-type,misc]
        @classmethod
        def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, **others: Any
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings,)

    Given.__name__ = Given.__qualname__ = settings_class.__name__
    return Given


def load(settings_class: type[S], environ: dict[str, str] | None = None) -> S:
    """Build ``settings_class`` from the environment (or ``environ``), or raise a ``ConfigError``
    whose message names every bad variable, e.g. ``DATABASE_URL: required``."""
    try:
        if environ is None:
            return settings_class()
        # Read only the given mapping: tests and the CLI must not pick up the caller's env.
        fields = settings_class.model_fields
        values = {k: v for k, v in environ.items() if k in fields and v != ""}
        return _from_mapping_only(settings_class)(**values)  # type: ignore[no-any-return]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"]) or "settings"
            message = "required" if error["type"] == "missing" else error["msg"].removeprefix("Value error, ")
            problems.append(f"{name}: {message}")
        raise ConfigError(f"invalid configuration of {settings_class.__name__}: " + "; ".join(problems)) from exc
