"""The sandbox API server driven over real HTTP by the official client and by ``infra.kube``.

Two clients on purpose: ``infra.kube.KubeClient`` is what the product uses, and the
generated ``kubernetes.client`` APIs (CustomObjectsApi, CoreV1Api, BatchV1Api) prove the
sandbox speaks the protocol the library expects: content types, Status bodies, models.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from finops.errors import Conflict, InvalidInput, KubernetesUnavailable, NotFound
from infra.kube import JSON_PATCH, AlreadyExists, KubeClient
from sandbox.kube import KubeServer, serve

GROUP, VERSION = "finops.stakater.com", "v1alpha1"


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with serve() as running:
        yield running


@pytest.fixture
def kube(server: KubeServer) -> Iterator[KubeClient]:
    with KubeClient.from_url(server.url, timeout_seconds=5) as client:
        yield client


@pytest.fixture
def api(server: KubeServer) -> Iterator[k8s.ApiClient]:
    with k8s.ApiClient(k8s.Configuration(host=server.url)) as api_client:
        yield api_client


def cost_job(name: str, namespace: str = "team-a", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CostJob",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"window": "1d"},
    }


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def test_create_get_and_list_with_selectors(kube: KubeClient, api: k8s.ApiClient) -> None:
    custom = k8s.CustomObjectsApi(api)
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "team-a", "costjobs", cost_job("a", tier="gold"))
    assert created["metadata"]["namespace"] == "team-a" and created["metadata"]["generation"] == 1
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("b", tier="silver", env="prod"))
    kube.create_object(GROUP, VERSION, "costjobs", "team-b", cost_job("c", "team-b", tier="gold"))

    assert kube.get_object(GROUP, VERSION, "costjobs", "team-a", "a") == created
    assert names(kube.list_objects(GROUP, VERSION, "costjobs")) == ["a", "b", "c"]
    assert names(kube.list_objects(GROUP, VERSION, "costjobs", namespace="team-a")) == ["a", "b"]
    assert names(kube.list_objects(GROUP, VERSION, "costjobs", label_selector="tier=gold")) == ["a", "c"]
    assert names(kube.list_objects(GROUP, VERSION, "costjobs", label_selector="tier in (gold,silver),!env")) == [
        "a",
        "c",
    ]
    assert names(kube.list_objects(GROUP, VERSION, "costjobs", label_selector="env notin (prod)")) == ["a", "c"]
    listed = kube.list_objects(GROUP, VERSION, "costjobs", field_selector="metadata.namespace=team-b")
    assert listed[0]["kind"] == "CostJob" and listed[0]["apiVersion"] == f"{GROUP}/{VERSION}"

    raw = custom.list_cluster_custom_object(GROUP, VERSION, "costjobs", label_selector="env")
    assert raw["kind"] == "CostJobList" and raw["metadata"]["resourceVersion"] == "3"
    with pytest.raises(InvalidInput, match="unable to parse"):
        kube.list_objects(GROUP, VERSION, "costjobs", label_selector="tier in gold")


def test_duplicate_create(kube: KubeClient, api: k8s.ApiClient) -> None:
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("a"))
    with pytest.raises(ApiException) as raw:
        k8s.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, "team-a", "costjobs", cost_job("a"))
    assert raw.value.status == 409 and '"reason": "AlreadyExists"' in raw.value.body
    with pytest.raises(AlreadyExists):
        kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("a"))


def test_core_group_and_typed_clients(kube: KubeClient, api: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-a", labels={"tenant": "a"})))
    core.create_namespaced_config_map(
        "team-a", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="prices"), data={"cpu": "1"})
    )
    namespace = kube.get_object("", "v1", "namespaces", None, "team-a")
    assert namespace["kind"] == "Namespace" and namespace["metadata"]["labels"] == {"tenant": "a"}
    config_maps = kube.list_objects("", "v1", "configmaps", namespace="team-a")
    assert config_maps[0]["data"] == {"cpu": "1"} and config_maps[0]["kind"] == "ConfigMap"
    # CoreV1Api.patch_namespace sends application/strategic-merge-patch+json for a dict body.
    patched = core.patch_namespace("team-a", {"metadata": {"labels": {"cost-center": "cc-1"}}})
    assert patched.metadata.labels == {"tenant": "a", "cost-center": "cc-1"}
    assert core.read_namespaced_config_map("prices", "team-a").metadata.creation_timestamp is not None
    assert [ns.metadata.name for ns in core.list_namespace(label_selector="tenant=a").items] == ["team-a"]


def test_strategic_merge_patch_on_a_cron_job(api: k8s.ApiClient) -> None:
    batch = k8s.BatchV1Api(api)
    container = k8s.V1Container(name="report", image="busybox")
    template = k8s.V1PodTemplateSpec(spec=k8s.V1PodSpec(containers=[container], restart_policy="Never"))
    spec = k8s.V1CronJobSpec(
        schedule="0 * * * *", job_template=k8s.V1JobTemplateSpec(spec=k8s.V1JobSpec(template=template))
    )
    batch.create_namespaced_cron_job("team-a", k8s.V1CronJob(metadata=k8s.V1ObjectMeta(name="report"), spec=spec))
    patched = batch.patch_namespaced_cron_job("report", "team-a", {"spec": {"suspend": True}})
    assert patched.spec.suspend is True and patched.spec.schedule == "0 * * * *"
    assert patched.metadata.generation == 2


def test_stale_resource_version_is_a_conflict(kube: KubeClient, api: k8s.ApiClient) -> None:
    custom = k8s.CustomObjectsApi(api)
    old = kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("a"))
    kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", {"spec": {"window": "7d"}})
    with pytest.raises(ApiException) as raw:
        custom.replace_namespaced_custom_object(GROUP, VERSION, "team-a", "costjobs", "a", old)
    assert raw.value.status == 409 and '"reason": "Conflict"' in raw.value.body
    stale = {"metadata": {"resourceVersion": old["metadata"]["resourceVersion"]}, "spec": {"window": "2d"}}
    with pytest.raises(Conflict):
        kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", stale)
    with pytest.raises(ApiException) as stale_status:
        custom.replace_namespaced_custom_object_status(
            GROUP, VERSION, "team-a", "costjobs", "a", {**old, "status": {"phase": "X"}}
        )
    assert stale_status.value.status == 409
    current = kube.get_object(GROUP, VERSION, "costjobs", "team-a", "a")
    replaced = custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, "team-a", "costjobs", "a", {**current, "status": {"phase": "Y"}}
    )
    assert replaced["status"] == {"phase": "Y"} and replaced["spec"] == {"window": "7d"}


def test_status_subresource_only_changes_status(kube: KubeClient, api: k8s.ApiClient) -> None:
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("a", tier="gold"))
    patched = kube.patch_status(GROUP, VERSION, "costjobs", "team-a", "a", {"status": {"phase": "Running"}})
    assert patched["status"] == {"phase": "Running"} and patched["metadata"]["generation"] == 1
    sneaky = {"spec": {"window": "30d"}, "metadata": {"labels": {"tier": "free"}}, "status": {"phase": "Done"}}
    raw = k8s.CustomObjectsApi(api).patch_namespaced_custom_object_status(
        GROUP, VERSION, "team-a", "costjobs", "a", sneaky
    )
    assert raw["status"] == {"phase": "Done"}
    assert raw["spec"] == {"window": "1d"} and raw["metadata"]["labels"] == {"tier": "gold"}
    main = kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", {"spec": {"window": "2d"}, "status": None})
    assert main["status"] == {"phase": "Done"} and main["metadata"]["generation"] == 2


def test_json_patch(kube: KubeClient, api: k8s.ApiClient) -> None:
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("a"))
    operations = [{"op": "add", "path": "/metadata/labels/tier", "value": "gold"}]
    raw = k8s.CustomObjectsApi(api).patch_namespaced_custom_object(
        GROUP, VERSION, "team-a", "costjobs", "a", operations, _content_type=JSON_PATCH
    )
    assert raw["metadata"]["labels"] == {"tier": "gold"}
    guarded = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": raw["metadata"]["resourceVersion"]},
        {"op": "replace", "path": "/spec/window", "value": "7d"},
    ]
    assert kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", guarded, content_type=JSON_PATCH)["spec"] == {
        "window": "7d"
    }
    with pytest.raises(InvalidInput, match="test operation failed"):
        kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", guarded, content_type=JSON_PATCH)


def test_finalizers_delay_deletion(kube: KubeClient, api: k8s.ApiClient) -> None:
    job = cost_job("a")
    job["metadata"]["finalizers"] = ["finops.stakater.com/cleanup"]
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", job)
    deleting = k8s.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, "team-a", "costjobs", "a")
    assert deleting["metadata"]["deletionTimestamp"]
    assert kube.get_object(GROUP, VERSION, "costjobs", "team-a", "a")["metadata"]["deletionTimestamp"]
    with pytest.raises(InvalidInput, match="no new finalizers"):
        kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", {"metadata": {"finalizers": ["x", "y"]}})
    kube.patch_status(GROUP, VERSION, "costjobs", "team-a", "a", {"status": {"phase": "CleaningUp"}})
    kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", {"metadata": {"finalizers": []}})
    with pytest.raises(NotFound):
        kube.get_object(GROUP, VERSION, "costjobs", "team-a", "a")


def test_delete_without_finalizers_and_not_found(kube: KubeClient, api: k8s.ApiClient) -> None:
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("a"))
    deleted = k8s.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, "team-a", "costjobs", "a")
    assert deleted["status"] == "Success"
    with pytest.raises(NotFound) as caught:
        kube.get_object(GROUP, VERSION, "costjobs", "team-a", "a")
    for part in (GROUP, "costjobs", "team-a", "'a'"):
        assert part in caught.value.message
    with pytest.raises(NotFound):
        kube.patch_status(GROUP, VERSION, "costjobs", "team-a", "a", {"status": {}})


def test_resources_nobody_declared(kube: KubeClient) -> None:
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "shop"}, "spec": {}}
    kube.create_object("argoproj.io", "v1alpha1", "applications", "argocd", app)
    assert kube.list_objects("argoproj.io", "v1alpha1", "applications")[0]["kind"] == "Application"
    provider = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "FinOpsProvider", "metadata": {"name": "opencost"}}
    kube.create_object(GROUP, VERSION, "finopsproviders", None, provider)
    assert "namespace" not in kube.get_object(GROUP, VERSION, "finopsproviders", None, "opencost")["metadata"]
    for plural in ("pricebooks", "subscriptions", "offerings"):
        assert kube.list_objects(GROUP, VERSION, plural, namespace="team-a") == []


def test_invalid_requests_get_status_bodies(kube: KubeClient, api: k8s.ApiClient) -> None:
    custom = k8s.CustomObjectsApi(api)
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", cost_job("a"))
    with pytest.raises(InvalidInput, match="does not match the name in the URL"):
        kube.patch_object(GROUP, VERSION, "costjobs", "team-a", "a", {"metadata": {"name": "b"}})
    with pytest.raises(ApiException) as wrong_namespace:
        custom.replace_namespaced_custom_object(GROUP, VERSION, "team-b", "costjobs", "a", cost_job("a"))
    assert wrong_namespace.value.status == 422
    with pytest.raises(ApiException) as apply:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, "team-a", "costjobs", "a", {}, _content_type="application/apply-patch+yaml"
        )
    assert apply.value.status == 415 and '"kind": "Status"' in apply.value.body


def test_discovery(api: k8s.ApiClient) -> None:
    assert k8s.VersionApi(api).get_code().git_version.startswith("v1.")
    assert "v1" in k8s.CoreApi(api).get_api_versions().versions
    groups = {g.name for g in k8s.ApisApi(api).get_api_versions().groups}
    assert {"apps", "batch", "apiextensions.k8s.io"} <= groups


def test_unreachable_server_is_kubernetes_unavailable() -> None:
    with serve() as stopped:
        url = stopped.url
    with KubeClient.from_url(url, timeout_seconds=2) as kube, pytest.raises(KubernetesUnavailable) as caught:
        kube.list_objects(GROUP, VERSION, "costjobs")
    assert caught.value.__cause__ is not None


def test_a_silent_server_times_out() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts connections in the kernel but never answers
    accepted: list[socket.socket] = []
    acceptor = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    acceptor.start()
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with (
            KubeClient.from_url(url, timeout_seconds=0.3) as kube,
            pytest.raises(KubernetesUnavailable, match="Timeout"),
        ):
            kube.get_object(GROUP, VERSION, "costjobs", "team-a", "a")
    finally:
        acceptor.join(timeout=1)
        for connection in accepted:
            connection.close()
        listener.close()


def test_self_subject_access_reviews_allow_all_but_what_a_test_denies(
    server: KubeServer, kube: KubeClient, api: k8s.ApiClient
) -> None:
    assert kube.access_review("list", GROUP, "pricebooks") == (True, "")
    server.store.access.deny("patch", GROUP, "costjobs/status")
    server.store.access.deny("get", "", "configmaps", "opencost")
    allowed, reason = kube.access_review("patch", GROUP, "costjobs/status")
    assert not allowed and "patch costjobs/status" in reason
    assert kube.access_review("patch", GROUP, "costjobs")[0]  # the main resource is not the subresource
    assert not kube.access_review("get", "", "configmaps", "opencost", "pricing")[0]
    assert kube.access_review("get", "", "configmaps", "finops")[0]  # denied in one namespace only
    server.store.access.deny("list", "", "pods", user="system:serviceaccount:finops:on-sync")
    assert not kube.access_review("list", "", "pods", as_user="system:serviceaccount:finops:on-sync")[0]
    assert kube.access_review("list", "", "pods", as_user="system:serviceaccount:finops:backfill")[0]
    assert kube.access_review("list", "", "pods")[0]  # denied to that user only
    review = k8s.V1SelfSubjectAccessReview(
        spec=k8s.V1SelfSubjectAccessReviewSpec(
            resource_attributes=k8s.V1ResourceAttributes(verb="get", resource="configmaps", namespace="opencost")
        )
    )
    answered = k8s.AuthorizationV1Api(api).create_self_subject_access_review(review)  # the typed client reads it
    assert answered.status.allowed is False and answered.status.denied is True
    with pytest.raises(ApiException) as refused:  # not a review of a resource
        api.call_api(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "POST", body={"spec": {}}, _preload_content=False
        )
    assert refused.value.status == 400
