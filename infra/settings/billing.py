"""The settings of the billing functions: ``reconcile`` and ``collect_charges``."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from finops.allocations import DEFAULT_AGGREGATION
from infra.settings.base import (
    CommonSettings,
    EventReceiverSettings,
    KubeSettings,
    PingSettings,
    PricingSettings,
    Settings,
)


class BillingSettings(Settings):
    """Where OpenCost's custom pricing lives (the active PriceBook is rendered there)."""

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


class ReconcileSettings(CommonSettings, KubeSettings, BillingSettings, EventReceiverSettings, PricingSettings):
    """``reconcile``: PriceBooks, Offerings and Subscriptions on every change (ApiServerSource)."""

    PING_TOKEN: SecretStr
    """Bearer token a full pass (a POST that is not a CloudEvent) must carry, as the hourly pings
    do. Required; a secret."""


class CollectChargesSettings(PingSettings, KubeSettings, BillingSettings, PricingSettings):
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
