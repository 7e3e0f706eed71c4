"""Where reconciliation writes outside our CRDs, from the billing settings both ``reconcile`` and
``collect_charges`` share: OpenCost's pricing ConfigMap and Deployment, and the MTO resource; and
where prices come from when no FinOpsProvider says."""

from __future__ import annotations

from finops.pricing import Setting
from infra.settings import BillingSettings, PricingSettings
from usecases.reconcile.opencost import MtoTarget, OpenCostTarget


def opencost_target(s: BillingSettings) -> OpenCostTarget | None:
    """OpenCost's pricing ConfigMap and Deployment, unless ``RENDER_OPENCOST_PRICING`` is off."""
    if not s.RENDER_OPENCOST_PRICING:
        return None
    return OpenCostTarget(s.OPENCOST_NAMESPACE, s.OPENCOST_DEPLOYMENT, s.OPENCOST_PRICING_CONFIGMAP)


def mto_target(s: BillingSettings) -> MtoTarget | None:
    """The MTO OpenCost resource when ``MTO_ENABLED`` is exactly ``true``."""
    if s.MTO_ENABLED != "true":
        return None
    group, version, plural, namespace, name = s.MTO_OPENCOST.split("/")
    return MtoTarget(group, version, plural, namespace, name)


def pricing_setting(s: PricingSettings) -> Setting:
    """``PRICING_SOURCE`` and ``PRICING_CURRENCY``."""
    return Setting(s.PRICING_SOURCE, s.PRICING_CURRENCY)
