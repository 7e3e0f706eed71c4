"""We test these aspects of the manifests' shapes, offline:

- every core Kubernetes object (every layer, and the Secret example) validates strictly against
  the Kubernetes 1.33 schemas: an unknown or misspelt field is an error;
- every Knative object validates against the strict schemas we keep (tests/deploy/schemas/), which
  admit only the fields Knative accepts with its default feature flags; so do the Prometheus
  Operator's objects of knative/monitoring/ (the fields of its CRDs we may use);
- a Knative Service's pod template is also a valid core pod spec (Knative's fields removed and the
  probe port it fills in added), so container fields are type-checked by the Kubernetes schemas too;
- our schemas do reject unknown fields where it matters (spec, template spec, container, env).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from referencing import Registry, Resource

from tests.deploy import manifests
from tests.deploy.manifests import Obj

KUBERNETES = "1.33"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
SCHEMA_OF = {
    ("serving.knative.dev", "Service"): "service.json",
    ("sources.knative.dev", "SinkBinding"): "sinkbinding.json",
    ("sources.knative.dev", "ApiServerSource"): "apiserversource.json",
    ("eventing.knative.dev", "Trigger"): "trigger.json",
    ("eventing.knative.dev", "Broker"): "broker.json",
    ("monitoring.coreos.com", "PrometheusRule"): "prometheusrule.json",
    ("monitoring.coreos.com", "ScrapeConfig"): "scrapeconfig.json",
}
KNATIVE_ONLY_POD_FIELDS = {
    "containerConcurrency",
    "timeoutSeconds",
    "responseStartTimeoutSeconds",
    "idleTimeoutSeconds",
}


def _label(obj: Obj) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


CORE = [obj for obj in manifests.everything() if not manifests.has_own_schema(obj)] + [manifests.example_secret()]
KNATIVE = [obj for obj in manifests.everything() if manifests.has_own_schema(obj)]  # and the Prometheus Operator's


@pytest.mark.parametrize("obj", CORE, ids=_label)
def test_core_objects_validate_strictly(obj: Obj) -> None:
    kubernetes_validate.validate(copy.deepcopy(obj), KUBERNETES, strict=True)


@cache
def _registry() -> Registry[Any]:
    resources = [Resource.from_contents(json.loads(path.read_text())) for path in sorted(SCHEMAS.glob("*.json"))]
    return Registry().with_resources((str(r.contents["$id"]), r) for r in resources)  # type: ignore[index]


def _validator(obj: Obj) -> jsonschema.Draft202012Validator:
    group, kind, _, _ = manifests.identity(obj)
    name = SCHEMA_OF.get((group, kind))
    assert name, f"no schema for {group} {kind}: add one to tests/deploy/schemas/"
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=_registry())


@pytest.mark.parametrize("obj", KNATIVE, ids=_label)
def test_knative_objects_validate_against_our_schemas(obj: Obj) -> None:
    errors = sorted(_validator(obj).iter_errors(obj), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


SERVICES = manifests.of_kind("Service")


@pytest.mark.parametrize("service", SERVICES, ids=_label)
def test_knative_pod_templates_are_valid_pod_specs(service: Obj) -> None:
    template = copy.deepcopy(service["spec"]["template"])
    spec = {k: v for k, v in template["spec"].items() if k not in KNATIVE_ONLY_POD_FIELDS}
    for container in spec["containers"]:
        port = container["ports"][0]["containerPort"]
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if "httpGet" in container.get(probe, {}):
                container[probe]["httpGet"].setdefault("port", port)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": service["metadata"]["name"], **template.get("metadata", {})},
        "spec": spec,
    }
    kubernetes_validate.validate(pod, KUBERNETES, strict=True)


def _service() -> Obj:
    return copy.deepcopy(manifests.named("Service", "collect-allocations"))


def _set_spec(obj: Obj) -> None:
    obj["spec"]["replicas"] = 2


def _set_template_spec(obj: Obj) -> None:
    obj["spec"]["template"]["spec"]["nodeName"] = "node-1"


def _set_container(obj: Obj) -> None:
    obj["spec"]["template"]["spec"]["containers"][0]["lifecycle"] = {}


def _set_field_ref(obj: Obj) -> None:
    env = obj["spec"]["template"]["spec"]["containers"][0]["env"]
    env.append({"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}})


def _set_timeout(obj: Obj) -> None:
    obj["spec"]["template"]["spec"]["timeoutSeconds"] = 900


def _mount_tmp(obj: Obj) -> None:  # a path Knative reserves
    obj["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]


def _host_path(obj: Obj) -> None:
    obj["spec"]["template"]["spec"]["volumes"] = [{"name": "tmp", "hostPath": {"path": "/tmp"}}]


@pytest.mark.parametrize(
    "change",
    [_set_spec, _set_template_spec, _set_container, _set_field_ref, _set_timeout, _mount_tmp, _host_path],
    ids=lambda f: f.__name__,
)
def test_our_service_schema_rejects_what_knative_would(change: Any) -> None:
    service = _service()
    assert _validator(service).is_valid(service)
    change(service)
    assert not _validator(service).is_valid(service)


def test_every_knative_kind_we_ship_has_a_schema() -> None:
    shipped = {manifests.identity(obj)[:2] for obj in KNATIVE}
    assert shipped == set(SCHEMA_OF)


def test_strict_kubernetes_validation_rejects_a_misspelt_field() -> None:
    cronjob = copy.deepcopy(manifests.named("CronJob", "collect-allocations-hourly"))
    cronjob["spec"]["concurrencyPolcy"] = cronjob["spec"].pop("concurrencyPolicy")
    with pytest.raises(kubernetes_validate.ValidationError, match="concurrencyPolcy"):
        kubernetes_validate.validate(cronjob, KUBERNETES, strict=True)
