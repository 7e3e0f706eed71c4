"""We test these aspects of how the pieces reach each other:

- Argo CD: the notifications webhook and the proxy extension point at our Services; the proxy
  injects the header ``cost_api`` checks, from argocd-secret; proxy extensions are enabled; the
  Argo CD layer never ships a Secret (it would overwrite real tokens with placeholders);
- Eventing: the SinkBinding gives on-sync the Broker as K_SINK, the Trigger sends the event type
  on-sync emits back to on-sync, the ApiServerSource feeds reconcile;
- every ``functions/<target>/func.yaml`` names its Service, image and namespace, for ``kn func``;
- our own namespace carries the owner labels our namespace policy requires.
"""

from __future__ import annotations

import re

import pytest
import yaml

from infra.events import SYNC_ACCEPTED
from infra.serving import TARGETS
from infra.settings import CostApiSettings
from tests.deploy import manifests
from tests.deploy.manifests import ROOT, Obj


def argocd_config_map(name: str) -> Obj:
    return manifests.named("ConfigMap", name, "argocd")


def test_the_argo_cd_layer_ships_no_secret_and_only_argocd_objects() -> None:
    objects = manifests.layer("argocd")
    assert {obj["kind"] for obj in objects} == {"ConfigMap"}
    assert {obj["metadata"]["namespace"] for obj in objects} == {"argocd"}


def test_notifications_post_to_the_on_sync_service() -> None:
    service = yaml.safe_load(argocd_config_map("argocd-notifications-cm")["data"]["service.webhook.cost-on-sync"])
    assert manifests.service_target(manifests.service_at(service["url"])) == "on_sync"


def test_the_proxy_extension_reaches_cost_api_with_its_token_header() -> None:
    config = yaml.safe_load(argocd_config_map("argocd-cm")["data"]["extension.config.finops"])
    (backend,) = config["services"]
    assert manifests.service_target(manifests.service_at(backend["url"])) == "cost_api"
    (header,) = backend["headers"]
    assert header["name"] == CostApiSettings.model_fields["PROXY_TOKEN_HEADER"].default
    assert re.fullmatch(r"\$[a-z0-9.-]+", header["value"]), "a key of argocd-secret, not a literal token"
    assert argocd_config_map("argocd-cmd-params-cm")["data"]["server.enable.proxy.extension"] == "true"


def test_on_sync_events_go_through_the_broker_and_come_back() -> None:
    (binding,) = manifests.of_kind("SinkBinding", "eventing")
    (trigger,) = manifests.of_kind("Trigger", "eventing")
    (broker,) = manifests.of_kind("Broker", "eventing")
    on_sync = manifests.services_by_target()["on_sync"]
    subject = binding["spec"]["subject"]
    assert (subject["apiVersion"], subject["kind"], subject["name"]) == (
        on_sync["apiVersion"],
        "Service",
        on_sync["metadata"]["name"],
    )
    assert binding["spec"]["sink"]["ref"] == {
        "apiVersion": broker["apiVersion"],
        "kind": "Broker",
        "name": broker["metadata"]["name"],
    }
    assert trigger["spec"]["broker"] == broker["metadata"]["name"]
    assert trigger["spec"]["filter"]["attributes"] == {"type": SYNC_ACCEPTED}
    assert trigger["spec"]["subscriber"]["ref"]["name"] == on_sync["metadata"]["name"]
    namespaces = {obj["metadata"]["namespace"] for obj in (binding, trigger, broker, on_sync)}
    assert namespaces == {on_sync["metadata"]["namespace"]}


def test_the_api_server_source_feeds_reconcile() -> None:
    (source,) = manifests.of_kind("ApiServerSource", "eventing")
    reconcile = manifests.services_by_target()["reconcile"]
    assert source["spec"]["sink"]["ref"]["name"] == reconcile["metadata"]["name"]
    assert source["metadata"]["namespace"] == reconcile["metadata"]["namespace"]


@pytest.mark.parametrize("target", TARGETS)
def test_func_yaml_names_the_deployed_function(target: str) -> None:
    func = yaml.safe_load((ROOT / "functions" / target / "func.yaml").read_text())
    service = manifests.services_by_target()[target]
    assert {"specVersion", "name", "runtime", "created", "invoke", "image", "namespace"} <= set(func)
    assert func["name"] == service["metadata"]["name"]
    assert func["namespace"] == service["metadata"]["namespace"]
    assert func["image"] == manifests.service_container(service)["image"]
    assert (func["runtime"], func["invoke"]) == ("python", "http")


def test_our_namespace_passes_our_namespace_policy() -> None:
    (namespace,) = manifests.of_kind("Namespace")
    policy = manifests.named("ValidatingAdmissionPolicy", "finops-namespace-owner-labels")
    required = set()
    for validation in policy["spec"]["validations"]:
        required |= set(re.findall(r"'([a-z-]+)' in object\.metadata\.labels", validation["expression"]))
    assert required == {"team", "cost-center"}
    labels = namespace["metadata"]["labels"]
    assert all(labels.get(key) for key in required)
    # Everything lives in our namespace, but the grant on OpenCost's pricing, in OpenCost's.
    elsewhere = {
        (obj["kind"], obj["metadata"]["namespace"])
        for obj in manifests.layer("base")
        if obj["metadata"].get("namespace", namespace["metadata"]["name"]) != namespace["metadata"]["name"]
    }
    opencost = manifests.config_map_data("finops-billing")["OPENCOST_NAMESPACE"]
    assert elsewhere == {("Role", opencost), ("RoleBinding", opencost)}
