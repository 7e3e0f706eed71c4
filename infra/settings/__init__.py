"""Configuration: one pydantic-settings class per function, read from the environment once.

Field names are the environment variable names, so a validation error names the variable the
operator has to fix. Secrets are ``SecretStr`` and never appear in logs or reprs. Values are passed
down as arguments: nothing below ``functions/`` reads ``os.environ``.
"""

from infra.settings.base import (
    CommonSettings,
    ConfigError,
    FleetReportSettings,
    KubeSettings,
    OpenCostSettings,
    PingSettings,
    PricingSettings,
    ServingSettings,
    database_url,
    environment,
    load,
)
from infra.settings.billing import BillingSettings, CollectChargesSettings, ReconcileSettings
from infra.settings.cost_api import CostApiSettings
from infra.settings.measuring import BackfillSettings, CollectAllocationsSettings, OnSyncSettings
from infra.settings.secrets import current_secret

__all__ = [
    "BackfillSettings",
    "BillingSettings",
    "CollectAllocationsSettings",
    "CollectChargesSettings",
    "CommonSettings",
    "ConfigError",
    "CostApiSettings",
    "FleetReportSettings",
    "KubeSettings",
    "OnSyncSettings",
    "OpenCostSettings",
    "PingSettings",
    "PricingSettings",
    "ReconcileSettings",
    "ServingSettings",
    "current_secret",
    "database_url",
    "environment",
    "load",
]
