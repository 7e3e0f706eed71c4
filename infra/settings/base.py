"""The settings every function shares, the building blocks of each function's, as pydantic models
(``on_sync``'s and the serving settings are read without pydantic: ``infra.settings.plain``, which
also holds ``load``, ``environment`` and ``ConfigError``, re-exported here).

Each class is a pydantic model read from the environment by ``load``, the way pydantic-settings'
``BaseSettings`` read it (every field is a scalar: the variable's text is validated as-is), without
importing pydantic-settings: 13 to 30 ms of every cold start, and scale-to-zero makes users wait
for each one. ``Settings`` carries ``BaseSettings``' defaults (unknown fields refused, defaults
validated, variable names matched without case unless ``case_sensitive``, empty values kept unless
``env_ignore_empty``). A class combining several gets the configuration pydantic merges for it, as
before: base by base, so the last base's wins (``CollectAllocationsSettings`` matches names without
case and keeps empty values, although ``CommonSettings`` alone does neither).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from finops.errors import InvalidInput
from finops.hours import parse_timestamp
from infra.logs import redact
from infra.settings.plain import ConfigError, cluster_name, database_url, environment, load, opencost_url, problems


class SettingsConfig(ConfigDict, total=False):
    """pydantic's configuration and how ``load`` reads the environment (pydantic-settings' names)."""

    case_sensitive: bool
    """Variable names match field names exactly; otherwise without regard to case."""

    env_ignore_empty: bool
    """A variable set to the empty string counts as unset."""


class Settings(BaseModel):
    """The root of every settings class: ``BaseSettings``' defaults, and validators built when a
    class is first loaded (``defer_build``: building every class at import costs a cold start)."""

    model_config = SettingsConfig(
        extra="forbid",
        arbitrary_types_allowed=True,
        validate_default=True,
        defer_build=True,
        case_sensitive=False,
        env_ignore_empty=False,
    )


class CommonSettings(Settings):
    """Settings every function shares."""

    model_config = SettingsConfig(env_ignore_empty=True, extra="ignore", case_sensitive=True, defer_build=True)

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
        return cluster_name(value)


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

    model_config = SettingsConfig(defer_build=True)  # validators built when first loaded: cold start

    OPENCOST_URL: str
    """Base URL of OpenCost's API, e.g. ``http://opencost.opencost:9003``. Required."""

    OPENCOST_TIMEOUT_SECONDS: float = Field(default=60, gt=0, le=600)
    """Overall deadline of one OpenCost request, the answer's body included (retried like a timeout)."""

    OPENCOST_RETRIES: int = Field(default=3, ge=0, le=10)
    """Retries (with backoff) on connection errors and 5xx answers."""

    @field_validator("OPENCOST_URL")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return opencost_url(value)


class KubeSettings(Settings):
    """How to reach the Kubernetes API."""

    model_config = SettingsConfig(defer_build=True)  # validators built when first loaded: cold start

    KUBE_API_URL: str | None = None
    """Plain-HTTP API URL (local stack and tests). Unset: in-cluster config, else ``KUBECONFIG``."""

    KUBE_TIMEOUT_SECONDS: float = Field(default=10, gt=0, le=120)
    """Timeout of one Kubernetes API request."""


class EventSettings(Settings):
    """The credential of CloudEvent deliveries (``on_sync``'s measurements, ``reconcile``'s changes)."""

    model_config = SettingsConfig(defer_build=True)  # validators built when first loaded: cold start

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


def as_config(check: Callable[..., object], value: str, field: str) -> str:
    """Run a domain validator, re-raising its message as a pydantic-visible ``ValueError``."""
    try:
        result = check(value, field=field)
    except InvalidInput as exc:
        raise ValueError(exc.message.removeprefix(f"{field}: ")) from exc
    return result if isinstance(result, str) else value


S = TypeVar("S", bound=Settings)


def validate(settings_class: type[S], values: dict[str, str]) -> S:
    """``settings_class`` of the variables' texts ``values`` (``load`` found them), or a
    ``ConfigError`` naming every bad variable."""
    try:
        return settings_class.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration of {settings_class.__name__}: {problems(exc)}") from exc


__all__ = [
    "CommonSettings",
    "ConfigError",
    "EventReceiverSettings",
    "EventSettings",
    "KubeSettings",
    "OpenCostSettings",
    "PingSettings",
    "RedriveSettings",
    "Settings",
    "as_config",
    "database_url",
    "environment",
    "load",
    "validate",
]
