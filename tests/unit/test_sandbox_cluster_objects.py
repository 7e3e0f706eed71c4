"""``sandbox.cluster.cluster_objects``: the Kubernetes objects of a scenario agree with what the OpenCost
sandbox reports for it (pod names, nodes, controllers) and form resolvable ownerReferences chains.

The OpenCost side is evaluated in-process (``OpenCostApp(...).allocation``) with the same clock, so these
tests pin the contract between the two sandboxes without sockets; the e2e tests do it over HTTP.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sandbox.cluster import cluster_objects
from sandbox.kube import KubeStore
from sandbox.kube_fields import cpu_quantity, cron_expression, memory_quantity, object_uid
from sandbox.opencost import OpenCostApp, ScenarioError, parse_scenario
from sandbox.opencost.scenario import Scenario

NOW = datetime(2026, 3, 10, 14, 25, 30, tzinfo=UTC)
WINDOW_START = "2026-03-09T15:00:00Z"  # of window=24h at NOW: aligned to the next full hour


def container(cpu: float = 0.5, ram: float = 1.0, gpu: float = 0) -> list[dict[str, Any]]:
    return [{"name": "app", "request": {"cpu": cpu, "ramGiB": ram, "gpu": gpu}, "usage": {"cpu": 0.1}}]


DOC: dict[str, Any] = {
    "cluster": "objects",
    "nodes": [{"name": "n1", "cpuCores": 8, "ramGiB": 32}, {"name": "n2", "cpuCores": 8, "ramGiB": 32, "gpus": 1}],
    "namespaces": [{"name": "shop", "labels": {"cost-center": "cc-1", "team": "checkout"}}, {"name": "ops"}],
    "workloads": [
        {
            "namespace": "shop",
            "kind": "Deployment",
            "name": "web",
            "replicas": 2,
            "labels": {"tier": "fe"},
            "containers": container(),
        },
        {
            "namespace": "shop",
            "kind": "Rollout",
            "apiVersion": "argoproj.io/v1alpha1",
            "name": "checkout",
            "replicas": 2,
            "containers": container(0.25, 0.07),
        },
        {"namespace": "shop", "kind": "StatefulSet", "name": "db", "node": "n1", "containers": container(2, 4)},
        {"namespace": "ops", "kind": "DaemonSet", "name": "agent", "containers": container(0.05, 0.0625)},
        {
            "namespace": "ops",
            "kind": "CronJob",
            "name": "etl",
            "replicas": 2,
            "schedule": {"every": "1h", "runFor": "20m", "offset": "5m"},
            "containers": container(1, 2, 1),
        },
        {"namespace": "ops", "kind": "Job", "name": "migrate", "start": "-5h", "end": "-4h", "containers": container()},
        {"namespace": "ops", "kind": "Job", "name": "backfill", "start": "-1h", "containers": container()},
        {"namespace": "ops", "kind": "ReplicaSet", "name": "legacy-rs", "containers": container()},
        {"namespace": "ops", "kind": "Pod", "name": "debug", "containers": container(0.1, 0.1)},
        {"namespace": "ops", "kind": "Pod", "name": "shell", "replicas": 2, "containers": container(0.1, 0.1)},
        {"namespace": "shop", "kind": "Deployment", "name": "old", "end": "-2h", "containers": container()},
        {
            "namespace": "shop",
            "kind": "Deployment",
            "name": "later",
            "start": "2026-03-10T16:00:00Z",
            "containers": container(),
        },
    ],
}


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return parse_scenario(DOC)


@pytest.fixture(scope="module")
def objects(scenario: Scenario) -> list[dict[str, Any]]:
    return cluster_objects(scenario, now=NOW)


def of_kind(objects: list[dict[str, Any]], kind: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects if o["kind"] == kind}


def opencost_pods(scenario: Scenario, **params: str) -> dict[str, dict[str, Any]]:
    app = OpenCostApp(scenario, clock=lambda: NOW)
    body, _ = app.allocation({"window": "24h", "aggregate": "pod", "includeAggregatedMetadata": "true", **params})
    pods: dict[str, dict[str, Any]] = json.loads(body)["data"][0]
    return pods


def ran_in_window(pod: dict[str, Any]) -> bool:
    if pod["status"]["phase"] == "Running":
        return True
    finished = pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    return bool(finished > WINDOW_START)


def top_owner(pod: dict[str, Any], by_uid: dict[str, dict[str, Any]]) -> tuple[str, str]:
    current = pod
    while current["metadata"].get("ownerReferences"):
        [ref] = current["metadata"]["ownerReferences"]
        current = by_uid[ref["uid"]]
        assert (current["kind"], current["metadata"]["name"]) == (ref["kind"], ref["name"])
    return current["kind"], current["metadata"]["name"]


def test_pod_names_and_nodes_match_opencost(scenario: Scenario, objects: list[dict[str, Any]]) -> None:
    reported = opencost_pods(scenario)
    pods = {name: pod for (_, name), pod in of_kind(objects, "Pod").items()}
    live = {name for name, pod in pods.items() if ran_in_window(pod)}
    # `old` was deleted 2 h ago: OpenCost still bills its last 22 h, the API no longer has it
    assert set(reported) - live == {"old-ea243-0"}
    assert live == set(reported) - {"old-ea243-0"}
    for name in live:
        assert pods[name]["spec"]["nodeName"] == reported[name]["properties"]["node"], name
        assert pods[name]["metadata"]["namespace"] == reported[name]["properties"]["namespace"]


def test_owner_chains_and_reported_controllers(scenario: Scenario, objects: list[dict[str, Any]]) -> None:
    reported = opencost_pods(scenario)
    by_uid = {o["metadata"]["uid"]: o for o in objects}
    expected = {
        "web": ("Deployment", "web", "deployment", "web"),
        "checkout": ("Rollout", "checkout", "rollout", "checkout-1dfc2"),
        "db": ("StatefulSet", "db", "statefulset", "db"),
        "agent": ("DaemonSet", "agent", "daemonset", "agent"),
        "etl": ("CronJob", "etl", "job", "etl"),
        "migrate": ("Job", "migrate", "job", "migrate"),
        "backfill": ("Job", "backfill", "job", "backfill"),
        "legacy-rs": ("ReplicaSet", "legacy-rs", "replicaset", "legacy-rs"),
        "debug": ("Pod", "debug", None, None),
        "shell": ("Pod", "shell-0", None, None),
    }
    seen = set()
    for (_, name), pod in of_kind(objects, "Pod").items():
        app = pod["metadata"]["labels"]["app"]
        kind, owner, controller_kind, controller = expected[app]
        assert top_owner(pod, by_uid) == (kind, owner if app != "shell" else name)
        props = reported[name]["properties"] if name in reported else {}
        assert (props.get("controllerKind"), props.get("controller")) == (controller_kind, controller)
        seen.add(app)
    assert seen == set(expected)
    rollout_rs = of_kind(objects, "ReplicaSet")[("shop", "checkout-1dfc2")]
    assert rollout_rs["metadata"]["labels"]["rollouts-pod-template-hash"] == "1dfc2"
    assert rollout_rs["metadata"]["ownerReferences"][0]["apiVersion"] == "argoproj.io/v1alpha1"
    assert of_kind(objects, "ReplicaSet")[("shop", "web-97375")]["metadata"]["labels"]["pod-template-hash"] == "97375"
    assert ("shop", "later") not in of_kind(objects, "Deployment")  # starts at 16:00
    assert ("shop", "old") not in of_kind(objects, "Deployment")


def test_metadata_is_deterministic_and_complete(scenario: Scenario, objects: list[dict[str, Any]]) -> None:
    assert cluster_objects(scenario, now=NOW) == objects
    uids = [o["metadata"]["uid"] for o in objects]
    assert len(set(uids)) == len(uids)
    pod = of_kind(objects, "Pod")[("shop", "web-97375-0")]
    assert pod["metadata"]["uid"] == object_uid("objects", "Pod", "shop", "web-97375-0")
    [ref] = pod["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-97375",
        "uid": object_uid("objects", "ReplicaSet", "shop", "web-97375"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert pod["metadata"]["labels"] == {"app": "web", "tier": "fe"}
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}}
    assert pod["status"]["phase"] == "Running" and pod["status"]["startTime"] == pod["metadata"]["creationTimestamp"]
    assert "ownerReferences" not in of_kind(objects, "Pod")[("ops", "debug")]["metadata"]
    shop = of_kind(objects, "Namespace")[("", "shop")]
    assert shop["metadata"]["labels"] == {
        "cost-center": "cc-1",
        "team": "checkout",
        "kubernetes.io/metadata.name": "shop",
    }
    node = of_kind(objects, "Node")[("", "n2")]
    assert node["status"]["capacity"] == {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"}
    assert sorted(name for (_, name) in of_kind(objects, "Pod") if name.startswith("agent")) == ["agent-n1", "agent-n2"]


def test_jobs_and_cronjob_runs(objects: list[dict[str, Any]]) -> None:
    jobs = of_kind(objects, "Job")
    migrate = jobs[("ops", "migrate")]
    assert migrate["status"]["succeeded"] == 1 and migrate["status"]["completionTime"] == "2026-03-10T10:00:00Z"
    assert jobs[("ops", "backfill")]["status"] == {"startTime": "2026-03-10T13:00:00Z", "active": 1}
    pods = of_kind(objects, "Pod")
    assert pods[("ops", "migrate-0")]["status"]["phase"] == "Succeeded"
    runs = sorted(name for (_, name), job in jobs.items() if name.startswith("etl-"))
    assert len(runs) == 24 and runs[-1] == f"etl-{int(datetime(2026, 3, 10, 14, 5, tzinfo=UTC).timestamp()) // 60}"
    cron = of_kind(objects, "CronJob")[("ops", "etl")]
    assert cron["spec"]["schedule"] == "5 * * * *"
    assert cron["status"]["lastScheduleTime"] == "2026-03-10T14:05:00Z" and "active" not in cron["status"]
    latest = [p for (_, name), p in pods.items() if name.startswith(runs[-1])]
    assert len(latest) == 2 and {p["status"]["phase"] for p in latest} == {"Succeeded"}  # 14:05-14:25, now 14:25:30
    during = cluster_objects(parse_scenario(DOC), now=NOW - timedelta(minutes=10), job_history=timedelta(hours=2))
    cron_now = of_kind(during, "CronJob")[("ops", "etl")]
    assert [a["name"] for a in cron_now["status"]["active"]] == [runs[-1]]
    assert len([j for (_, name), j in of_kind(during, "Job").items() if name.startswith("etl-")]) == 3


def test_relative_times_and_naive_now(scenario: Scenario) -> None:
    naive = cluster_objects(scenario, now=NOW.replace(tzinfo=None))
    assert naive == cluster_objects(scenario, now=NOW)
    backfill = of_kind(naive, "Job")[("ops", "backfill")]
    assert backfill["metadata"]["creationTimestamp"] == "2026-03-10T13:00:00Z"  # "-1h" from 14:00
    later = cluster_objects(scenario, now=NOW + timedelta(hours=3))
    assert ("shop", "later") in of_kind(later, "Deployment")


def test_quantities_and_schedules() -> None:
    assert [cpu_quantity(c) for c in (2, 0.5, 0.05, 1.25)] == ["2", "500m", "50m", "1250m"]
    assert [memory_quantity(g) for g in (4, 0.5, 0.0625, 0.07)] == ["4Gi", "512Mi", "64Mi", "75161928"]
    assert cron_expression(3600, 300) == "5 * * * *"
    assert cron_expression(900, 60) == "1-59/15 * * * *"
    assert cron_expression(6 * 3600, 3600 + 1800) == "30 1-23/6 * * *"
    assert cron_expression(86400, 2 * 3600) == "0 2 * * *"
    assert cron_expression(7 * 60, 0) == "@every 420s"


def test_rollouts_must_name_their_api_version() -> None:
    doc = {**DOC, "workloads": [{**DOC["workloads"][1], "apiVersion": None}]}
    with pytest.raises(ScenarioError, match=r"workloads\[0\].kind: Rollout is a custom resource"):
        parse_scenario(doc)
    doc = {**DOC, "workloads": [{**DOC["workloads"][0], "apiVersion": "extensions/v1beta1"}]}
    with pytest.raises(ScenarioError, match=r"workloads\[0\].apiVersion: a Deployment is apps/v1"):
        parse_scenario(doc)


def test_seeding_keeps_uids_but_clients_cannot_forge_them(objects: list[dict[str, Any]]) -> None:
    store = KubeStore()
    store.apply_manifests(objects)
    pod = store.get("v1", "Pod", "shop", "web-97375-0")
    assert pod is not None
    assert pod["metadata"]["uid"] == object_uid("objects", "Pod", "shop", "web-97375-0")
    assert pod["metadata"]["creationTimestamp"] == "2026-02-08T14:00:00Z"  # "always": 30 days before the hour
    rollout = store.get("argoproj.io/v1alpha1", "Rollout", "shop", "checkout")
    assert rollout is not None and rollout["status"]["stableRS"] == "1dfc2"
    forged = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "shop", "uid": "mine"}}
    assert store.create(forged)["metadata"]["uid"] != "mine"
