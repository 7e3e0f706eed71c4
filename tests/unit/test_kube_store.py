"""``sandbox.kube.KubeStore`` semantics, driven directly (no HTTP)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sandbox.kube import ApiError, KubeStore
from sandbox.kube.resources import ResourceRegistry, guess_kind, guess_plural

FINOPS = "finops.stakater.com/v1alpha1"


def cost_job(name: str = "job-1", namespace: str = "team-a", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": FINOPS,
        "kind": "CostJob",
        "metadata": {"name": name, "namespace": namespace, "labels": {"tier": "gold"}},
        "spec": {"window": "1d"},
        **extra,
    }


@contextmanager
def api_error(code: int, reason: str) -> Iterator[None]:
    with pytest.raises(ApiError) as caught:
        yield
    assert (caught.value.code, caught.value.reason) == (code, reason), caught.value.status()


def test_create_sets_server_metadata() -> None:
    store = KubeStore()
    first = store.create(cost_job("a"))
    second = store.create(cost_job("b"))
    meta = first["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["generation"] == 1
    assert int(second["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    assert store.get(FINOPS, "CostJob", "team-a", "a") == first
    assert store.get(FINOPS, "costjobs", "team-a", "a") == first
    assert store.get(FINOPS, "costjobs", "team-b", "a") is None
    with api_error(409, "AlreadyExists"):
        store.create(cost_job("a"))


def test_namespace_defaults_and_cluster_scope() -> None:
    store = KubeStore()
    cm = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    assert cm["metadata"]["namespace"] == "default"
    ns = store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "namespace": "x"}})
    assert "namespace" not in ns["metadata"]
    provider = {"apiVersion": FINOPS, "kind": "FinOpsProvider", "metadata": {"name": "opencost"}}
    assert "namespace" not in store.create(provider)["metadata"]
    assert store.get(FINOPS, "finopsproviders", None, "opencost") is not None


def test_generation_moves_only_with_desired_state() -> None:
    store = KubeStore()
    store.create(cost_job())
    relabelled = store.patch(FINOPS, "costjobs", "team-a", "job-1", {"metadata": {"labels": {"x": "y"}}})
    assert relabelled["metadata"]["generation"] == 1
    status = store.patch(FINOPS, "costjobs", "team-a", "job-1", {"status": {"phase": "Done"}}, subresource="status")
    assert status["metadata"]["generation"] == 1
    changed = store.patch(FINOPS, "costjobs", "team-a", "job-1", {"spec": {"window": "7d"}})
    assert changed["metadata"]["generation"] == 2
    assert int(changed["metadata"]["resourceVersion"]) > int(status["metadata"]["resourceVersion"])


def test_status_and_main_resource_do_not_overwrite_each_other() -> None:
    store = KubeStore()
    store.create(cost_job(status={"phase": "Seeded"}))  # the Python API keeps status (fixtures)
    main = store.patch(FINOPS, "costjobs", "team-a", "job-1", {"spec": {"window": "2d"}, "status": {"phase": "X"}})
    assert main["status"] == {"phase": "Seeded"}
    status = store.patch(
        FINOPS,
        "costjobs",
        "team-a",
        "job-1",
        {"spec": {"window": "9d"}, "metadata": {"labels": None}, "status": {"phase": "Done"}},
        subresource="status",
    )
    assert status["spec"] == {"window": "2d"}
    assert status["metadata"]["labels"] == {"tier": "gold"}
    assert status["status"] == {"phase": "Done"}


def test_server_owned_metadata_cannot_be_forged() -> None:
    store = KubeStore()
    created = store.create(cost_job())
    forged = {"metadata": {"uid": "forged", "generation": 99, "creationTimestamp": "1970-01-01T00:00:00Z"}}
    patched = store.patch(FINOPS, "costjobs", "team-a", "job-1", forged)
    for field in ("uid", "generation", "creationTimestamp"):
        assert patched["metadata"][field] == created["metadata"][field]


def test_stale_resource_version_conflicts() -> None:
    store = KubeStore()
    old = store.create(cost_job())
    store.patch(FINOPS, "costjobs", "team-a", "job-1", {"spec": {"window": "2d"}})
    with api_error(409, "Conflict"):
        store.replace(old)
    stale = {"metadata": {"resourceVersion": old["metadata"]["resourceVersion"]}, "status": {"a": 1}}
    with api_error(409, "Conflict"):
        store.patch(FINOPS, "costjobs", "team-a", "job-1", stale, subresource="status")
    current = store.get(FINOPS, "costjobs", "team-a", "job-1")
    assert current is not None
    current["spec"]["window"] = "3d"
    assert store.replace(current)["spec"] == {"window": "3d"}


def test_finalizers_hold_deletion_until_removed() -> None:
    store = KubeStore()
    job = cost_job()
    job["metadata"]["finalizers"] = ["finops.stakater.com/cleanup"]
    store.create(job)
    deleting = store.delete(FINOPS, "costjobs", "team-a", "job-1")
    assert deleting is not None and deleting["metadata"]["deletionTimestamp"]
    again = store.delete(FINOPS, "costjobs", "team-a", "job-1")
    assert again is not None and again["metadata"]["deletionTimestamp"] == deleting["metadata"]["deletionTimestamp"]
    with api_error(422, "Invalid"):
        store.patch(FINOPS, "costjobs", "team-a", "job-1", {"metadata": {"finalizers": ["a", "b"]}})
    status = store.patch(FINOPS, "costjobs", "team-a", "job-1", {"status": {"phase": "Cleaning"}}, subresource="status")
    assert status["metadata"]["deletionTimestamp"] == deleting["metadata"]["deletionTimestamp"]
    store.patch(FINOPS, "costjobs", "team-a", "job-1", {"metadata": {"finalizers": None}})
    assert store.get(FINOPS, "costjobs", "team-a", "job-1") is None


def test_starting_deletion_bumps_generation_once() -> None:
    store = KubeStore()
    job = cost_job()
    job["metadata"]["finalizers"] = ["finops.stakater.com/cleanup"]
    assert store.create(job)["metadata"]["generation"] == 1
    deleting = store.delete(FINOPS, "costjobs", "team-a", "job-1")
    assert deleting is not None and deleting["metadata"]["generation"] == 2  # as the apiserver's BeforeDelete
    again = store.delete(FINOPS, "costjobs", "team-a", "job-1")
    assert again is not None and again["metadata"]["generation"] == 2


def test_delete_without_finalizers_and_not_found() -> None:
    store = KubeStore()
    store.create(cost_job())
    assert store.delete(FINOPS, "costjobs", "team-a", "job-1") is None
    with api_error(404, "NotFound"):
        store.delete(FINOPS, "costjobs", "team-a", "job-1")
    with api_error(404, "NotFound"):
        store.patch(FINOPS, "costjobs", "team-a", "job-1", {})


def test_patch_type_errors() -> None:
    store = KubeStore()
    store.create(cost_job())
    with api_error(400, "BadRequest"):
        store.patch(FINOPS, "costjobs", "team-a", "job-1", [{"op": "add", "path": "/x", "value": 1}])
    with api_error(422, "Invalid"):
        store.patch(
            FINOPS,
            "costjobs",
            "team-a",
            "job-1",
            [{"op": "test", "path": "/spec/window", "value": "9d"}],
            content_type="application/json-patch+json",
        )
    with api_error(415, "UnsupportedMediaType"):
        store.patch(FINOPS, "costjobs", "team-a", "job-1", {}, content_type="application/apply-patch+yaml")
    with api_error(422, "Invalid"):
        store.patch(FINOPS, "costjobs", "team-a", "job-1", {"metadata": {"name": "renamed"}})


def test_list_filters_and_sorts() -> None:
    store = KubeStore()
    for namespace, name, tier in [("b", "y", "gold"), ("a", "z", "silver"), ("a", "x", "gold")]:
        job = cost_job(name, namespace)
        job["metadata"]["labels"]["tier"] = tier
        store.create(job)
    names = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in store.list(FINOPS, "CostJob")]
    assert names == [("a", "x"), ("a", "z"), ("b", "y")]
    assert [o["metadata"]["name"] for o in store.list(FINOPS, "costjobs", "a", label_selector="tier=gold")] == ["x"]
    assert [o["metadata"]["name"] for o in store.list(FINOPS, "costjobs", field_selector="metadata.name=y")] == ["y"]
    with api_error(400, "BadRequest"):
        store.list(FINOPS, "costjobs", label_selector="tier in gold")


def test_crd_registration_and_apply_order() -> None:
    store = KubeStore()
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "pricebooks.finops.stakater.com"},
        "spec": {
            "group": "finops.stakater.com",
            "scope": "Cluster",
            "names": {"kind": "PriceBook", "plural": "pricebooks"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True}],
        },
    }
    book = {"apiVersion": FINOPS, "kind": "PriceBook", "metadata": {"name": "default"}, "spec": {"cpu": "0.03"}}
    store.apply_manifests([book, crd])  # the CRD is applied first whatever its position
    assert store.registry.by_plural("finops.stakater.com", "pricebooks").kind == "PriceBook"
    assert store.registry.by_plural("finops.stakater.com", "pricebooks").namespaced is False
    first = store.get(FINOPS, "pricebooks", None, "default")
    assert first is not None
    store.apply_manifests([{**book, "spec": {"cpu": "0.04"}, "status": {"ok": True}}])
    second = store.get(FINOPS, "PriceBook", None, "default")
    assert second is not None
    assert second["spec"] == {"cpu": "0.04"} and second["status"] == {"ok": True}
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert second["metadata"]["generation"] == 2


def test_plural_guesses() -> None:
    assert [guess_plural(k) for k in ["CostJob", "Policy", "Ingress", "Gateway", "Box"]] == [
        "costjobs",
        "policies",
        "ingresses",
        "gateways",
        "boxes",
    ]
    assert guess_kind("pricebooks") == "Pricebook"
    registry = ResourceRegistry()
    assert registry.by_plural("apps", "deployments").kind == "Deployment"
    assert registry.by_plural("argoproj.io", "applications").namespaced is None
    assert registry.by_kind("argoproj.io", "Application").plural == "applications"


def test_concurrent_writes_get_distinct_resource_versions() -> None:
    store = KubeStore()
    store.create(cost_job())
    versions: list[str] = []
    lock = threading.Lock()

    def bump(i: int) -> None:
        for j in range(20):
            result = store.patch(FINOPS, "costjobs", "team-a", "job-1", {"spec": {f"k{i}": j}})
            with lock:
                versions.append(result["metadata"]["resourceVersion"])

    threads = [threading.Thread(target=bump, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(versions)) == 100
    final = store.get(FINOPS, "costjobs", "team-a", "job-1")
    assert final is not None and final["metadata"]["generation"] == 101
