"""The settings every function shares and the building blocks of each function's, as
pydantic-settings classes, and ``load``, which reads one from the environment. A class combining
several gets the configuration pydantic merges for it, base by base: the last base's wins.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from finops.errors import InvalidInput, PermanentError
from finops.hours import parse_timestamp
from finops.labels import validate_namespace
from finops.pricing import check_currency
from infra.fleet import check_bucket
from infra.logs import redact


class ConfigError(PermanentError):
    """The function's configuration is invalid."""


class Settings(BaseSettings):
    """The root of every settings class: ``BaseSettings``' defaults, validators built when a class
    is first loaded."""

    model_config = SettingsConfigDict(defer_build=True)


class CommonSettings(Settings):
    """Settings every function shares."""

    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", case_sensitive=True)

    DATABASE_URL: SecretStr
    """PostgreSQL DSN (``postgresql://user:pass@host:5432/db``). Required; a secret."""

    CLUSTER_ID: str = "default"
    """Name of the cluster this function measures; stamped on every row (one database, many clusters)."""

    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Lowest severity written to the JSON log."""

    DATABASE_POOL: Literal["pool", "null"] = "pool"
    """``pool`` keeps connections per replica; ``null`` opens one per use (behind PgBouncer)."""

    DATABASE_POOL_MAX: int = Field(default=8, ge=1, le=64)
    """Most connections one worker process holds (a replica with ``WORKERS`` processes: that many times)."""

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
        return as_config(validate_namespace, value, "CLUSTER_ID")


class ServingSettings(Settings):
    """How the served function protects its threads (read at import, before the target's settings)."""

    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", case_sensitive=True)

    THREADS: int = Field(default_factory=lambda: (os.cpu_count() or 1) * 4, ge=1, le=1024)
    """gunicorn's threads (functions-framework reads the same variable; its default is 4 per CPU)."""

    WORKERS: int = Field(default=1, ge=1, le=64)
    """gunicorn's worker processes (functions-framework reads the same variable; its default is 1);
    each holds its share of the per-replica limits (``functions.limits``)."""

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
            return as_config(lambda v, field: parse_timestamp(v, field=field), value, "SCHEDULED_TIMESTAMP")
        return value


class OpenCostSettings(Settings):
    """How to reach OpenCost."""

    OPENCOST_URL: str
    """Base URL of OpenCost's API, e.g. ``http://opencost.opencost:9003``. Required."""

    OPENCOST_TIMEOUT_SECONDS: float = Field(default=60, gt=0, le=600)
    """Overall deadline of one OpenCost request, the answer's body included (retried like a timeout)."""

    OPENCOST_RETRIES: int = Field(default=3, ge=0, le=10)
    """Retries (with backoff) on connection errors and 5xx answers."""

    @field_validator("OPENCOST_URL")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return http_url(value, "http://opencost.opencost:9003").rstrip("/")


class KubeSettings(Settings):
    """How to reach the Kubernetes API."""

    KUBE_API_URL: str | None = None
    """Plain-HTTP API URL (local stack and tests). Unset: in-cluster config, else ``KUBECONFIG``."""

    KUBE_TIMEOUT_SECONDS: float = Field(default=10, gt=0, le=120)
    """Timeout of one Kubernetes API request."""


class PricingSettings(Settings):
    """Where prices come from when there is no FinOpsProvider ``default`` (which, when it exists,
    decides instead: docs/how-to/opencost-prices.md)."""

    PRICING_SOURCE: Literal["pricebook", "opencost"] = "pricebook"
    """``pricebook``: rows are priced by the active PriceBook (none: stored unpriced).
    ``opencost``: OpenCost's own figures (cloud list prices or its custom pricing file) are
    authoritative, in ``PRICING_CURRENCY``; no PriceBook is needed or rendered into OpenCost."""

    PRICING_CURRENCY: str | None = None
    """The ISO 4217 currency of OpenCost's figures (e.g. ``USD``). Required when
    ``PRICING_SOURCE`` is ``opencost``; a PriceBook states its own."""

    @field_validator("PRICING_CURRENCY")
    @classmethod
    def _currency_code(cls, value: str | None) -> str | None:
        return None if value is None else as_config(check_currency, value, "PRICING_CURRENCY")

    @model_validator(mode="after")
    def _currency_when_opencost(self) -> PricingSettings:
        if self.PRICING_SOURCE == "opencost" and self.PRICING_CURRENCY is None:
            raise ValueError("PRICING_CURRENCY is required when PRICING_SOURCE is opencost (e.g. USD)")
        return self


class FleetSettings(Settings):
    """The fleet bucket (docs/how-to/fleet.md)."""

    FLEET_BUCKET: str | None = None
    """The fleet bucket, ``s3://bucket/prefix/`` (or an absolute local folder), ending in ``/``:
    ``collect_allocations`` writes each final hour there as a Parquet file
    (``cluster=<CLUSTER_ID>/date=<YYYY-MM-DD>/hour=<HH>.parquet``); a central ``cost_api`` serves
    the chargeback and namespaces of every cluster in it. Unset: neither."""

    FLEET_S3_ENDPOINT_URL: str | None = None
    """The S3 API's URL for an S3-compatible store (MinIO, Ceph); unset: AWS. Credentials come from
    the usual AWS chain (environment, pod role)."""

    FLEET_TIMEOUT_SECONDS: float = Field(default=30, gt=0, le=300)
    """How long one upload waits on the store (to connect, or for an answer) before the attempt
    fails; after three attempts the hour stays marked and the next run uploads it."""

    @field_validator("FLEET_BUCKET")
    @classmethod
    def _fleet_bucket(cls, value: str | None) -> str | None:
        return None if value is None else as_config(check_bucket, value, "FLEET_BUCKET")

    @field_validator("FLEET_S3_ENDPOINT_URL")
    @classmethod
    def _fleet_endpoint(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value, "http://minio.storage:9000")


class FleetReportSettings(Settings):
    """Where ``finops report chargeback --fleet`` runs its query with ``--engine clickhouse``."""

    FLEET_CLICKHOUSE_URL: SecretStr | None = None
    """A ClickHouse server for ``finops report chargeback --fleet ... --engine clickhouse``
    (``http[s]://user:password@host:8123``): the report's query runs there, reading the bucket with
    the server's own S3 credentials. Unset: that engine is refused."""

    FLEET_CLICKHOUSE_CLUSTER: str | None = None
    """With ``FLEET_CLICKHOUSE_URL``: the ClickHouse cluster whose servers share the read
    (``s3Cluster``); unset: the one server reads every file."""

    @field_validator("FLEET_CLICKHOUSE_URL")
    @classmethod
    def _clickhouse_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and urlsplit(value.get_secret_value()).scheme not in ("http", "https"):
            raise ValueError("must be an http:// or https:// URL of ClickHouse's HTTP interface (port 8123 or 8443)")
        return value


class EventSettings(Settings):
    """The credential of CloudEvent deliveries (``on_sync``'s measurements, ``reconcile``'s changes)."""

    EVENT_TOKEN: SecretStr | None = None
    """Shared secret an event delivery must carry as the ``token`` query parameter of the URL it is
    delivered to (the Trigger's subscriber ``uri``, the ApiServerSource's sink ``uri``, the re-drive's
    ``ON_SYNC_URL``), or as ``Authorization: Bearer``. Unset: deliveries are not authenticated
    (only rate-limited); docs/tutorial/first-cluster.md, "Harden it". A secret."""


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
        return http_url(value, "http://on-sync.finops.svc.cluster.local")


def http_url(value: str, example: str) -> str:
    """``value`` if it is an http(s) URL, else a ``ValueError`` naming it (redacted) and ``example``."""
    if not re.fullmatch(r"^https?://[^\s/]+(/\S*)?$", value):
        raise ValueError(f"{redact(value)!r} is not an http(s) URL such as {example}")
    return value


def as_config(check: Callable[..., object], value: str, field: str) -> str:
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


def environment(settings_class: type[BaseSettings]) -> dict[str, Any]:
    """The variables of the process environment that ``settings_class`` reads, by field name, as
    pydantic-settings finds them (by its ``case_sensitive`` and ``env_ignore_empty``)."""
    return EnvSettingsSource(settings_class)()


@functools.cache
def _given_only(settings_class: type[S]) -> type[S]:
    """``settings_class`` reading only the values it is given (pydantic-settings otherwise also
    reads the process environment, even through ``model_validate``)."""

    class Given(settings_class):  # type: ignore[valid-type,misc]
        @classmethod
        def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, **others: Any
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings,)

    Given.__name__ = Given.__qualname__ = settings_class.__name__
    return Given


def load(settings_class: type[S], environ: Mapping[str, str] | None = None) -> S:
    """Build ``settings_class`` from the environment (or only ``environ``: variables by their exact
    name, empty ones unset), or raise a one-line ``ConfigError`` naming every bad variable, e.g.
    ``invalid configuration of OnSyncSettings: DATABASE_URL: required`` (never a value)."""
    try:
        if environ is None:
            return settings_class()
        fields = settings_class.model_fields
        values = {k: v for k, v in environ.items() if k in fields and v != ""}
        return _given_only(settings_class)(**values)  # type: ignore[no-any-return]  # a subclass of it
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration of {settings_class.__name__}: {problems(exc)}") from exc


def problems(exc: ValidationError) -> str:
    """``NAME: why; NAME: why`` of a ``ValidationError`` (``required`` if missing; the messages
    only, never the input)."""
    out = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"]) or "settings"
        message = "required" if error["type"] == "missing" else error["msg"].removeprefix("Value error, ")
        out.append(f"{name}: {message}")
    return "; ".join(out)
