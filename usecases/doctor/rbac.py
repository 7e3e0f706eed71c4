"""What each function may need to do in Kubernetes, as ``SelfSubjectAccessReview`` questions asked
as the function's ServiceAccount (``account``).

The table follows the manifests (knative/services/*.yaml, knative/billing-rbac.yaml):
tests/deploy/test_rbac.py checks it equals, function by function, the permissions each
ServiceAccount is granted there (which are in turn the calls read from the code), and that the
accounts are the ones the Services run as. Grants the manifests limit to one object
(``resourceNames``) or to OpenCost's namespace are asked about that object, in that namespace, as
the configuration names them (``BillingSettings``): a review without the name would be refused by
such a grant.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.settings import BillingSettings

FINOPS = "finops.stakater.com"
ARGO = "argoproj.io"
NAMESPACE = "finops"  # where knative/ installs the functions and their ServiceAccounts


def account(target: str) -> str:
    """The user name of ``target``'s ServiceAccount, as reviews impersonate it."""
    return f"system:serviceaccount:{NAMESPACE}:{target.replace('_', '-')}"


@dataclass(frozen=True)
class Need:
    """One verb a function needs: on ``resource`` (``plural`` or ``plural/sub``) of ``group``, in
    ``namespace`` (None: cluster-wide) and on the object ``name`` (None: any)."""

    verb: str
    group: str
    resource: str
    namespace: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        where = f" {self.name!r}" if self.name else ""
        where += f" in namespace {self.namespace!r}" if self.namespace else ""
        return f"{self.verb} {self.resource}{where} ({self.group or 'core'})"


def needs(billing: BillingSettings) -> dict[str, tuple[Need, ...]]:
    """Every function's needs, by function target."""
    measure = (Need("list", "", "pods"), Need("list", "apps", "replicasets"), Need("list", "batch", "jobs"))
    costjob = (Need("get", FINOPS, "costjobs"), Need("patch", FINOPS, "costjobs/status"))
    kinds = ("pricebooks", "offerings", "subscriptions")
    ns, configmap = billing.OPENCOST_NAMESPACE, billing.OPENCOST_PRICING_CONFIGMAP
    mto_group, _, mto_plural, _, mto_name = billing.MTO_OPENCOST.split("/")
    reconcile = (
        *(Need("list", FINOPS, plural) for plural in kinds),
        Need("patch", FINOPS, "subscriptions"),  # the finalizer
        *(Need("patch", FINOPS, f"{plural}/status") for plural in (*kinds, "finopsproviders")),
        Need("get", FINOPS, "finopsproviders", name="default"),
        Need("get", "", "configmaps", ns, configmap),  # OpenCost's pricing ConfigMap ...
        Need("create", "", "configmaps", ns),
        Need("patch", "", "configmaps", ns, configmap),
        Need("patch", "apps", "deployments", ns, billing.OPENCOST_DEPLOYMENT),  # ... and OpenCost's restart
        Need("get", mto_group, mto_plural, name=mto_name),  # the Multi Tenant Operator's OpenCost
        Need("patch", mto_group, mto_plural, name=mto_name),
    )
    return {
        "collect_allocations": (
            Need("list", FINOPS, "pricebooks"),
            Need("get", FINOPS, "finopsproviders", name="default"),
            *costjob,
        ),
        "on_sync": measure,
        "backfill": (Need("list", ARGO, "applications"), *measure),
        "cost_api": (
            Need("get", ARGO, "applications"),
            Need("list", ARGO, "applications"),
            *measure,
            Need("list", "autoscaling.k8s.io", "verticalpodautoscalers"),
        ),
        "collect_charges": (*reconcile, *costjob, Need("get", FINOPS, "subscriptions")),
        "reconcile": (*reconcile, *(Need("get", FINOPS, plural) for plural in kinds)),
    }
