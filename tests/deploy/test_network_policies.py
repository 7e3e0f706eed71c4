"""We test these aspects of ``knative/network-policies.yaml``, offline, on the rendered base:

- each policy selects the pods Knative creates for its Service (revision pods carry
  ``serving.knative.dev/service: <name>`` beside the template's labels) and no other function's;
  exactly cost-api and on-sync are restricted;
- callers are admitted on queue-proxy's proxied ports only (8012, 8013; never the user container's
  8080, which only queue-proxy reaches over localhost), the autoscaler on 9090;
- both admit the activator (scale from zero) and the local gateway; cost-api admits Argo CD's
  server and not the notifications controller; on-sync admits the notifications controller, the
  Broker's filter and our own re-driving functions, and not Argo CD's server; the namespace of
  Argo CD's peers is the one the Argo CD layer is applied to; every in-namespace peer names one of
  our Services.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy import manifests
from tests.deploy.manifests import Obj

POLICIES = {p["metadata"]["name"]: p for p in manifests.render(manifests.KNATIVE) if p["kind"] == "NetworkPolicy"}
SERVICES = {s["metadata"]["name"]: s for s in manifests.render(manifests.KNATIVE) if manifests.is_knative(s)}


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels and matchExpressions) against ``labels``."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        if not {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[operator]:
            return False
    return True


def pod_labels(service: Obj) -> dict[str, str]:
    """The labels Knative puts on a revision's pods: the template's, plus the Service's name."""
    name = service["metadata"]["name"]
    template = dict(service["spec"]["template"].get("metadata", {}).get("labels", {}))
    return {**template, "serving.knative.dev/service": name, "serving.knative.dev/configuration": name}


def peers(policy: Obj, port: int) -> list[Obj]:
    return [peer for rule in policy["spec"]["ingress"] if port in _ports(rule) for peer in rule["from"]]


def _ports(rule: Obj) -> set[int]:
    return {p["port"] for p in rule["ports"]}


def admits(policy: Obj, port: int, namespace: str, labels: dict[str, str]) -> bool:
    own = policy["metadata"]["namespace"]
    for peer in peers(policy, port):
        in_namespace = (
            selects(peer["namespaceSelector"], {"kubernetes.io/metadata.name": namespace})
            if "namespaceSelector" in peer
            else namespace == own
        )
        if in_namespace and selects(peer.get("podSelector", {}), labels):
            return True
    return False


def test_exactly_cost_api_and_on_sync_are_restricted_each_by_its_own_policy() -> None:
    selected = {
        name: [p for p, policy in POLICIES.items() if selects(policy["spec"]["podSelector"], pod_labels(service))]
        for name, service in SERVICES.items()
    }
    assert {name: found for name, found in selected.items() if found} == {
        "cost-api": ["cost-api"],
        "on-sync": ["on-sync"],
    }
    for policy in POLICIES.values():
        assert policy["metadata"]["namespace"] == SERVICES["cost-api"]["metadata"]["namespace"]
        assert policy["spec"]["policyTypes"] == ["Ingress"]


@pytest.mark.parametrize("name", ["cost-api", "on-sync"])
def test_only_the_proxied_ports_and_the_autoscalers_metrics_are_open(name: str) -> None:
    rules = POLICIES[name]["spec"]["ingress"]
    assert set().union(*(_ports(rule) for rule in rules)) == {8012, 8013, 9090}
    assert all(p["protocol"] == "TCP" for rule in rules for p in rule["ports"])
    autoscaler = {"app": "autoscaler"}
    assert admits(POLICIES[name], 9090, "knative-serving", autoscaler)
    assert not admits(POLICIES[name], 8012, "knative-serving", autoscaler)
    assert not admits(POLICIES[name], 9090, "knative-serving", {"app": "activator"})


ACTIVATOR = ("knative-serving", {"app": "activator"})
GATEWAY = ("kourier-system", {"app": "3scale-kourier-gateway"})
ARGOCD_SERVER = ("argocd", {"app.kubernetes.io/name": "argocd-server"})
NOTIFICATIONS = ("argocd", {"app.kubernetes.io/name": "argocd-notifications-controller"})
BROKER_FILTER = ("knative-eventing", {"eventing.knative.dev/brokerRole": "filter"})
STRANGER = ("shop", {"app": "web"})


def _own(service: str) -> tuple[str, dict[str, str]]:
    return SERVICES[service]["metadata"]["namespace"], pod_labels(SERVICES[service])


@pytest.mark.parametrize(
    ("policy", "caller", "allowed"),
    [
        ("cost-api", ACTIVATOR, True),
        ("cost-api", GATEWAY, True),
        ("cost-api", ARGOCD_SERVER, True),
        ("cost-api", NOTIFICATIONS, False),
        ("cost-api", BROKER_FILTER, False),
        ("cost-api", STRANGER, False),
        ("cost-api", ("finops", {"serving.knative.dev/service": "collect-allocations"}), False),
        ("on-sync", ACTIVATOR, True),
        ("on-sync", GATEWAY, True),
        ("on-sync", NOTIFICATIONS, True),
        ("on-sync", BROKER_FILTER, True),
        ("on-sync", ARGOCD_SERVER, False),
        ("on-sync", STRANGER, False),
        ("on-sync", ("shop", {"serving.knative.dev/service": "on-sync"}), False),  # same label, other namespace
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_callers(policy: str, caller: tuple[str, dict[str, str]], allowed: bool) -> None:
    namespace, labels = caller
    assert admits(POLICIES[policy], 8012, namespace, labels) is allowed
    assert admits(POLICIES[policy], 8013, namespace, labels) is allowed
    assert not admits(POLICIES[policy], 8080, namespace, labels)


@pytest.mark.parametrize("service", ["collect-allocations", "backfill", "on-sync"])
def test_on_sync_admits_our_own_re_drives(service: str) -> None:
    assert admits(POLICIES["on-sync"], 8012, *_own(service))


def test_in_namespace_peers_name_our_services_and_argo_cd_peers_its_namespace() -> None:
    argocd_namespaces = {
        obj["metadata"]["namespace"]
        for obj in manifests.render(manifests.LAYERS["argocd"])
        if "namespace" in obj["metadata"]
    }
    for policy in POLICIES.values():
        for peer in peers(policy, 8012):
            if "namespaceSelector" not in peer:
                for expression in peer["podSelector"].get("matchExpressions", []):
                    assert expression["key"] == "serving.knative.dev/service"
                    assert set(expression["values"]) <= set(SERVICES)
            elif "app.kubernetes.io/name" in peer.get("podSelector", {}).get("matchLabels", {}):
                namespace = peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                assert {namespace} == argocd_namespaces
