"""The settings of ``cost_api``."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from infra.settings.base import (
    CommonSettings,
    FleetSettings,
    KubeSettings,
    OpenCostSettings,
)


class CostApiSettings(CommonSettings, KubeSettings, FleetSettings):
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
