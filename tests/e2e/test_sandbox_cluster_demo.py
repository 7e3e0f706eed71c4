"""Both sandboxes over the demo scenario describe one cluster, as seen through their real APIs.

OpenCost (httpx, as the product's adapter calls it) reports pods by name; the Kubernetes API (the
official ``kubernetes`` client) serves those pods with ownerReferences and the demo's Argo CD
Applications. Measuring an application joins the two, so here: the pod names per namespace agree,
every pod's owner chain ends at the workload the scenario names, and each in-cluster application's
workloads own pods that OpenCost bills in its destination namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from sandbox.cluster_sandbox import ClusterSandbox, serve_cluster
from sandbox.opencost import Scenario, load_scenario

DEMO = Path(__file__).resolve().parents[2] / "sandbox" / "demo"
NOW = datetime(2026, 3, 10, 14, 25, 30, tzinfo=UTC)
LOCAL = ("", "https://kubernetes.default.svc")
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "ReplicaSet", "Rollout"}


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return load_scenario(DEMO / "scenario.yaml")


@pytest.fixture(scope="module")
def cluster(scenario: Scenario) -> Iterator[ClusterSandbox]:
    with serve_cluster(scenario, now=NOW, seed_dir=DEMO / "kube") as both:
        yield both


@pytest.fixture(scope="module")
def api(cluster: ClusterSandbox) -> Iterator[k8s.ApiClient]:
    with k8s.ApiClient(k8s.Configuration(host=cluster.kube.url)) as api_client:
        yield api_client


@pytest.fixture(scope="module")
def owners(api: k8s.ApiClient) -> dict[str, tuple[str, str, str | None]]:
    """uid -> (kind, name, owner uid) for every controller object, listed through the typed APIs."""
    apps, batch, custom = k8s.AppsV1Api(api), k8s.BatchV1Api(api), k8s.CustomObjectsApi(api)
    found: dict[str, tuple[str, str, str | None]] = {}
    for kind, items in (
        ("Deployment", apps.list_deployment_for_all_namespaces().items),
        ("ReplicaSet", apps.list_replica_set_for_all_namespaces().items),
        ("StatefulSet", apps.list_stateful_set_for_all_namespaces().items),
        ("DaemonSet", apps.list_daemon_set_for_all_namespaces().items),
        ("Job", batch.list_job_for_all_namespaces().items),
        ("CronJob", batch.list_cron_job_for_all_namespaces().items),
    ):
        for item in items:
            refs = item.metadata.owner_references or []
            found[item.metadata.uid] = (kind, item.metadata.name, refs[0].uid if refs else None)
    for rollout in custom.list_cluster_custom_object("argoproj.io", "v1alpha1", "rollouts")["items"]:
        found[rollout["metadata"]["uid"]] = ("Rollout", rollout["metadata"]["name"], None)
    return found


def top_owner(pod: k8s.V1Pod, owners: dict[str, tuple[str, str, str | None]]) -> tuple[str, str]:
    refs = pod.metadata.owner_references or []
    if not refs:
        return "Pod", pod.metadata.name
    uid: str | None = refs[0].uid
    kind = name = ""
    while uid is not None:
        kind, name, uid = owners[uid]
    return kind, name


def opencost_pods(cluster: ClusterSandbox, namespace: str) -> tuple[dict[str, Any], str]:
    """The pods OpenCost reports for ``namespace`` over the last 24 h, and the window's start."""
    params = {"window": "24h", "aggregate": "pod", "filter": f'namespace:"{namespace}"'}
    response = httpx.get(cluster.opencost.url + "/allocation", params=params, timeout=10)
    assert response.status_code == 200, response.text
    allocations: dict[str, Any] = response.json()["data"][0]
    pods = {k: v for k, v in allocations.items() if not k.endswith("-unmounted-pvcs")}
    window_start = next(iter(allocations.values()))["window"]["start"]
    assert window_start == "2026-03-09T15:00:00Z"  # 24h is aligned: it ends at the next full hour
    return pods, window_start


def ran_since(pod: k8s.V1Pod, start: datetime) -> bool:
    if pod.status.phase == "Running":
        return True
    finished: datetime = pod.status.container_statuses[0].state.terminated.finished_at
    return pod.status.phase == "Succeeded" and finished > start


def test_pod_names_agree_in_every_namespace(cluster: ClusterSandbox, api: k8s.ApiClient, scenario: Scenario) -> None:
    core = k8s.CoreV1Api(api)
    assert {ns.metadata.name for ns in core.list_namespace().items} >= {"argocd", "team-apps", "shop", "legacy"}
    for namespace in (ns.name for ns in scenario.namespaces):
        reported, window_start = opencost_pods(cluster, namespace)
        start = datetime.fromisoformat(window_start.replace("Z", "+00:00"))
        listed = core.list_namespaced_pod(namespace).items
        assert listed, namespace
        assert {p.metadata.name for p in listed if ran_since(p, start)} == set(reported), namespace
        for pod in listed:
            if pod.metadata.name in reported:
                assert pod.spec.node_name == reported[pod.metadata.name]["properties"]["node"]


def test_owner_chains_end_at_the_scenario_workloads(
    cluster: ClusterSandbox, api: k8s.ApiClient, scenario: Scenario, owners: dict[str, tuple[str, str, str | None]]
) -> None:
    core = k8s.CoreV1Api(api)
    pods = core.list_pod_for_all_namespaces().items
    by_workload: dict[tuple[str, str, str], set[str]] = {}
    for pod in pods:
        kind, name = top_owner(pod, owners)
        by_workload.setdefault((pod.metadata.namespace, kind, name), set()).add(pod.metadata.name)
    expected = {(w.namespace, w.kind, w.name) for w in scenario.workloads}
    assert set(by_workload) == expected  # every pod resolves to a workload the scenario declares
    assert len(by_workload[("analytics", "CronJob", "etl-hourly")]) == 24  # one Job per run within 24 h
    reported = {ns: opencost_pods(cluster, ns)[0] for ns in {w.namespace for w in scenario.workloads}}
    rs_of_rollout = {
        name
        for kind, name, owner in owners.values()
        if kind == "ReplicaSet" and owner in {uid for uid, (k, _, _) in owners.items() if k == "Rollout"}
    }
    for (namespace, kind, name), names in by_workload.items():
        props = {reported[namespace][p]["properties"].get("controller") for p in names}
        kinds = {reported[namespace][p]["properties"].get("controllerKind") for p in names}
        if kind == "Rollout":  # OpenCost keys a Rollout's pods on their ReplicaSet
            assert kinds == {"rollout"} and props <= rs_of_rollout
        elif kind == "CronJob":
            assert (kinds, props) == ({"job"}, {name})
        elif kind == "Pod":
            assert (kinds, props) == ({None}, {None})
        else:
            assert (kinds, props) == ({kind.lower()}, {name})


def test_applications_through_the_official_client(
    cluster: ClusterSandbox, api: k8s.ApiClient, owners: dict[str, tuple[str, str, str | None]]
) -> None:
    custom = k8s.CustomObjectsApi(api)
    apps = custom.list_cluster_custom_object("argoproj.io", "v1alpha1", "applications")["items"]
    ids = sorted((a["metadata"]["namespace"], a["metadata"]["name"]) for a in apps)
    assert ("argocd", "web") in ids and ("team-apps", "web") in ids and ("argocd", "cost-gate") in ids
    assert len(ids) == 13
    team = custom.list_namespaced_custom_object("argoproj.io", "v1alpha1", "team-apps", "applications")["items"]
    assert [a["spec"]["destination"]["namespace"] for a in team] == ["shop-staging"]
    destinations: dict[str, list[str]] = {}
    core = k8s.CoreV1Api(api)
    for app in apps:
        spec, status = app["spec"], app["status"]
        dest = spec["destination"]
        assert status["operationState"]["phase"] == "Succeeded"
        assert status["sync"]["revision"] == status["operationState"]["syncResult"]["revision"]
        local = dest.get("server", "") in LOCAL and dest.get("name", "") in ("", "in-cluster")
        namespace = dest.get("namespace")
        if not local or not namespace or namespace == "argocd":
            continue  # remote, cluster-scoped only, or the cost-gate: nothing to measure
        destinations.setdefault(namespace, []).append(app["metadata"]["name"])
        reported, _ = opencost_pods(cluster, namespace)
        workloads = {(r["kind"], r["name"]) for r in status["resources"] if r["kind"] in WORKLOAD_KINDS}
        assert workloads, app["metadata"]["name"]
        assert all(r["namespace"] == namespace for r in status["resources"])
        share = {
            p.metadata.name for p in core.list_namespaced_pod(namespace).items if top_owner(p, owners) in workloads
        }
        assert share and share <= set(reported), app["metadata"]["name"]
    assert sorted(destinations["payments-api"]) == ["payments-gateway", "payments-ledger"]
    assert sorted(destinations["shop"]) == ["shop-cart", "web"] and destinations["shop-staging"] == ["web"]
