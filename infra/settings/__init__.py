"""Configuration: one settings class per function, read from the environment once.

Field names are the environment variable names, so a validation error names the variable the
operator has to fix. Secrets are ``SecretStr`` and never appear in logs or reprs. Values are passed
down as arguments: nothing below ``functions/`` reads ``os.environ``.

Each name is imported from its module when first used (PEP 562): a function's cold start builds
only the classes it needs (building a pydantic class costs about 2 ms; ``on_sync`` needs neither
the billing nor the cost API module). The classes of the webhook's path (``OnSyncSettings``,
``ServingSettings``) and ``load`` import no pydantic (``infra.settings.plain``); the others are
pydantic models (``infra.settings.base``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.settings.base import (
        CommonSettings,
        EventReceiverSettings,
        EventSettings,
        KubeSettings,
        OpenCostSettings,
        PingSettings,
        RedriveSettings,
        Settings,
    )
    from infra.settings.billing import BillingSettings, CollectChargesSettings, ReconcileSettings
    from infra.settings.cost_api import CostApiSettings
    from infra.settings.measuring import BackfillSettings, CollectAllocationsSettings
    from infra.settings.plain import ConfigError, OnSyncSettings, ServingSettings, database_url, load

_MODULES = {
    "base": (
        "CommonSettings",
        "EventReceiverSettings",
        "EventSettings",
        "KubeSettings",
        "OpenCostSettings",
        "PingSettings",
        "RedriveSettings",
        "Settings",
    ),
    "billing": ("BillingSettings", "CollectChargesSettings", "ReconcileSettings"),
    "cost_api": ("CostApiSettings",),
    "measuring": ("BackfillSettings", "CollectAllocationsSettings"),
    "plain": ("ConfigError", "OnSyncSettings", "ServingSettings", "database_url", "load"),
}
_MODULE_OF = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "BackfillSettings",
    "BillingSettings",
    "CollectAllocationsSettings",
    "CollectChargesSettings",
    "CommonSettings",
    "ConfigError",
    "CostApiSettings",
    "EventReceiverSettings",
    "EventSettings",
    "KubeSettings",
    "OnSyncSettings",
    "OpenCostSettings",
    "PingSettings",
    "ReconcileSettings",
    "RedriveSettings",
    "ServingSettings",
    "Settings",
    "database_url",
    "load",
]
assert set(__all__) == set(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
