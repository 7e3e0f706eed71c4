"""We test these aspects of the RBAC we ship (least privilege, derived from the code):

- the table below says which Kubernetes calls each function makes; it equals the calls read from
  the code (tests/deploy/kube_calls.py: every ``kube.<method>(group, version, plural, ...)`` in a
  definition the target's handler reaches), so a new call without a table entry fails here, and
  every call site in functions/ is reached by some target;
- each function's ServiceAccount is granted exactly the permissions those calls need
  (``infra.kube.permission_for``), through ClusterRoles and Roles: nothing missing, nothing extra,
  no wildcards; names (``resourceNames``) only narrow a grant, and match the configured objects;
- the ApiServerSource's ServiceAccount may get, list and watch the kinds it watches, nothing else;
- accounts that call no API get no bindings and no mounted token;
- ``finops doctor``'s table of what each function needs (``usecases.doctor.rbac``) asks exactly
  for what each ServiceAccount is granted, by the configured object names and namespace, as the
  account the function's Service runs as.
"""

from __future__ import annotations

import pytest

from infra.kube import Permission, permission_for
from infra.serving import TARGETS
from infra.settings import BillingSettings, load
from tests.deploy import kube_calls, manifests
from tests.deploy.manifests import Obj
from usecases.doctor.rbac import account, needs

FINOPS = "finops.stakater.com"
MTO_GROUP, _, MTO_PLURAL, MTO_NAMESPACE, MTO_NAME = str(BillingSettings.model_fields["MTO_OPENCOST"].default).split("/")
# The share of an application: its pods and the controllers that own them (functions/appcost).
MEASURE = [("list_objects", "", "pods"), ("list_objects", "apps", "replicasets"), ("list_objects", "batch", "jobs")]
# The tenant-billing reconciliation (usecases/reconcile/service.py, reconcile_all).
RECONCILE = [
    *(("list_objects", FINOPS, plural) for plural in ("pricebooks", "offerings", "subscriptions")),
    ("patch_object", FINOPS, "subscriptions"),  # the finalizer
    *(("patch_status", FINOPS, plural) for plural in ("pricebooks", "offerings", "subscriptions", "finopsproviders")),
    ("get_object", FINOPS, "finopsproviders"),
    ("get_object", "", "configmaps"),  # OpenCost's pricing ConfigMap ...
    ("create_object", "", "configmaps"),
    ("patch_object", "", "configmaps"),
    ("patch_object", "apps", "deployments"),  # ... and OpenCost's restart
    ("get_object", MTO_GROUP, MTO_PLURAL),  # the Multi Tenant Operator's OpenCost resource
    ("patch_object", MTO_GROUP, MTO_PLURAL),
]
# One event's object, read first.
EVENT = [("get_object", FINOPS, plural) for plural in ("pricebooks", "offerings", "subscriptions")]
COSTJOB = [("get_object", FINOPS, "costjobs"), ("patch_status", FINOPS, "costjobs")]  # the CostJob a ping names
CALLS: dict[str, list[tuple[str, str, str]]] = {
    "collect_allocations": [  # re-drives go to on-sync as events
        ("get_object", FINOPS, "finopsproviders"),  # where prices come from (finops/pricing.py)
        ("list_objects", FINOPS, "pricebooks"),
        *COSTJOB,
    ],
    "on_sync": MEASURE,
    "backfill": [("list_objects", "argoproj.io", "applications"), *MEASURE],
    "cost_api": [  # rightsizing and orphaned pods (usecases/insights/workloads.py)
        ("get_object", "argoproj.io", "applications"),
        ("list_objects", "argoproj.io", "applications"),
        *MEASURE,
        ("list_objects", "autoscaling.k8s.io", "verticalpodautoscalers"),
    ],
    "collect_charges": [*RECONCILE, *COSTJOB, ("get_object", FINOPS, "subscriptions")],
    "reconcile": [*RECONCILE, *EVENT],
}
# Call sites whose group or plural is a variable: the (group, plural) pairs they are called with.
DYNAMIC_CALLS: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("usecases.reconcile.objects", "write_status"): [
        (FINOPS, plural) for plural in ("pricebooks", "offerings", "subscriptions", "finopsproviders")
    ],
    ("usecases.reconcile.opencost", "reconcile_provider"): [(MTO_GROUP, MTO_PLURAL)],
    ("usecases.reconcile.objects", "list_kind"): [
        (FINOPS, plural) for plural in ("pricebooks", "offerings", "subscriptions")
    ],
    ("usecases.reconcile.objects", "get_kind"): [
        (FINOPS, plural) for plural in ("pricebooks", "offerings", "subscriptions")
    ],
    # A Subscription's spec.lifecycle.targetRef names any kind (resolved through discovery). None is
    # granted by default: a rule per kind (get, list) goes into ClusterRole
    # finops-subscription-targets (knative/billing-rbac.yaml) and here.
    ("usecases.reconcile.subscriptions", "__call__"): [],
}


# finops doctor's own reads (the PriceBook election, as the operator running it): no function's.
DOCTOR = {"usecases.doctor.checks"}


def test_the_call_table_covers_every_target() -> None:
    assert set(CALLS) == set(TARGETS)


@pytest.mark.parametrize("target", TARGETS)
def test_the_call_table_is_what_the_code_calls(target: str) -> None:
    assert kube_calls.calls(target, DYNAMIC_CALLS) == set(CALLS[target])


def test_every_call_site_is_reached_by_some_target() -> None:
    reached = set().union(*(kube_calls.reached(t) for t in TARGETS))
    unreached = [
        f"{site.module}:{site.line}"
        for module in kube_calls.all_modules()
        for site in kube_calls.call_sites(module)
        if (module, site.definition) not in reached and module not in DOCTOR
    ]
    assert not unreached, "calls no target reaches: is the analysis missing a path?"


def test_a_shared_helper_does_not_grant_its_neighbours_calls() -> None:
    """collect_charges shares the ping helper with collect_allocations, not its pod listing."""
    reached = kube_calls.reached("collect_charges")
    assert ("functions.pings", "accept_ping") in reached
    assert ("functions.collect_allocations.main", "collect_allocations") not in reached


def _bindings_of(account: Obj) -> list[tuple[Obj, Obj]]:
    """(binding, role) for every ClusterRoleBinding and RoleBinding naming the ServiceAccount."""
    subject = {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": account["metadata"]["namespace"],
    }
    objects = list(manifests.everything())
    found = []
    for binding in (o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        if subject not in binding.get("subjects", []):
            continue
        ref = binding["roleRef"]
        # A Role is found in its RoleBinding's namespace (a namespace-scoped grant still counts).
        wanted = (ref["kind"], ref["name"], binding["metadata"].get("namespace") if ref["kind"] == "Role" else None)
        (role,) = [o for o in objects if (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) == wanted]
        found.append((binding, role))
    return found


def granted(account: Obj) -> set[Permission]:
    permissions: set[Permission] = set()
    for _, role in _bindings_of(account):
        for rule in role["rules"]:
            assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, f"no nonResourceURLs: {rule}"
            for key in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[key], f"no wildcards: {rule}"
            if "resourceNames" in rule:  # names cannot narrow these verbs: they would be a false promise
                assert not {"list", "watch", "create", "deletecollection"} & set(rule["verbs"]), rule
            permissions |= {
                Permission(v, g, r) for v in rule["verbs"] for g in rule["apiGroups"] for r in rule["resources"]
            }
    return permissions


def _account_of(target: str) -> Obj:
    service = manifests.services_by_target()[target]
    return manifests.named("ServiceAccount", service["spec"]["template"]["spec"]["serviceAccountName"])


@pytest.mark.parametrize("target", TARGETS)
def test_each_function_is_granted_exactly_what_it_calls(target: str) -> None:
    account = _account_of(target)
    expected = {permission_for(*call) for call in CALLS[target]}
    assert granted(account) == expected
    assert (account.get("automountServiceAccountToken") is False) == (not expected), "a token exactly when needed"


@pytest.mark.parametrize("target", ["collect_charges", "reconcile"])
def test_named_grants_match_the_configured_objects(target: str) -> None:
    billing = manifests.config_map_data("finops-billing")
    names = {
        ("", "configmaps"): billing["OPENCOST_PRICING_CONFIGMAP"],
        ("apps", "deployments"): billing["OPENCOST_DEPLOYMENT"],
        (MTO_GROUP, MTO_PLURAL): billing["MTO_OPENCOST"].split("/")[4],
        (FINOPS, "finopsproviders"): "default",
    }
    assert billing["MTO_OPENCOST"] == BillingSettings.model_fields["MTO_OPENCOST"].default
    for binding, role in _bindings_of(_account_of(target)):
        if role["kind"] == "Role":
            assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == billing["OPENCOST_NAMESPACE"]
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    if "resourceNames" in rule:
                        assert rule["resourceNames"] == [names[(group, resource)]], rule
    # OpenCost's objects are granted in OpenCost's namespace only.
    cluster_wide = {
        (g, r)
        for _, role in _bindings_of(_account_of(target))
        if role["kind"] == "ClusterRole"
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert not {("", "configmaps"), ("apps", "deployments")} & cluster_wide


def test_the_api_server_source_may_only_watch_what_it_watches() -> None:
    (source,) = manifests.of_kind("ApiServerSource", "eventing")
    account = manifests.named("ServiceAccount", source["spec"]["serviceAccountName"], "eventing")
    expected = set()
    for resource in source["spec"]["resources"]:
        group = resource["apiVersion"].rpartition("/")[0]
        expected |= {Permission(verb, group, resource["kind"].lower() + "s") for verb in ("get", "list", "watch")}
    assert granted(account) == expected
    assert {p.resource for p in expected} == {"pricebooks", "offerings", "subscriptions"}


@pytest.mark.parametrize("name", ["finops-pinger", "finops-install"])
def test_job_accounts_have_no_api_access(name: str) -> None:
    account = manifests.named("ServiceAccount", name)
    assert granted(account) == set()
    assert account["automountServiceAccountToken"] is False


@pytest.mark.parametrize("target", TARGETS)
def test_the_doctor_asks_for_what_each_function_is_granted(target: str) -> None:
    billing = load(BillingSettings, manifests.config_map_data("finops-billing"))
    asked = needs(billing)[target]
    metadata = _account_of(target)["metadata"]
    assert account(target) == f"system:serviceaccount:{metadata['namespace']}:{metadata['name']}"
    assert {Permission(n.verb, n.group, n.resource) for n in asked} == granted(_account_of(target))
    assert len(asked) == len(set(asked))
    for binding, role in _bindings_of(_account_of(target)):
        for rule in role["rules"]:
            covered = {(v, g, r) for v in rule["verbs"] for g in rule["apiGroups"] for r in rule["resources"]}
            for need in (n for n in asked if (n.verb, n.group, n.resource) in covered):
                # A Role grants in its namespace only; resourceNames only for the objects named.
                namespace = binding["metadata"]["namespace"] if role["kind"] == "Role" else None
                assert need.namespace == namespace, need
                assert need.name == (rule["resourceNames"][0] if "resourceNames" in rule else None), need
