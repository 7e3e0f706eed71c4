"""We test these aspects of the orphaned-pod routes of ``cost_api`` over real HTTP, against the
sandbox Kubernetes API serving the demo (its Argo CD Applications and pods) and rows stored by
``collect_allocations`` from the sandbox OpenCost:

- an orphaned pod is a pod in a managed namespace (the destination of a local Application, the
  gate excepted) whose owner chain reaches no resource an Application lists: the demo's bare
  ``shop/debug-toolbox``, and a hand-made ReplicaSet's pod (its chain ends at an unlisted object);
  pods of unmanaged namespaces (``legacy``, ``kube-system``) are never listed;
- each carries its cost over the trailing days, recomputed here from the stored rows;
- ``/apps/{ns}/{name}/orphaned-pods`` answers for the application's destination namespace;
  ``/orphaned-pods`` and ``/namespaces/{namespace}/orphaned-pods`` are for the gate application;
- a refused Applications list (403) is ``available: false``, not an error;
- authorization: the proxy's secret and the right application, else 403 with no data.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from infra.postgres import Database
from sandbox.cluster_sandbox import ClusterSandbox
from sandbox.kube_fields import owner_reference
from sandbox.localstack import Stack, serve_function
from tests.e2e import insights_world as world
from tests.e2e.insights_world import GATE, PROXY, forbidding, get, rows

# The demo world's fixtures, used by name below.
demo, demo_stack, demo_db, demo_api = world.demo, world.demo_stack, world.demo_db, world.demo_api

MANAGED = [
    "analytics",
    "catalog",
    "ingress-nginx",
    "monitoring",
    "payments-api",
    "payments-worker",
    "shop",
    "shop-staging",
]


def stored_cost(db: Database, namespace: str, pod: str) -> tuple[int, int]:
    """(micros, hours) of the pod's stored rows, independently of the code."""
    (row,) = rows(
        db,
        "SELECT coalesce(sum(total_cost_micros), 0) AS micros, count(DISTINCT hour) AS hours"
        " FROM provider_allocations WHERE cluster = 'demo' AND namespace = %s AND pod = %s AND hour >= %s",
        namespace,
        pod,
        datetime.now(UTC) - timedelta(days=8),
    )
    return int(row["micros"]), int(row["hours"])


def answer(url: str, path: str, app: str, **params: str) -> dict[str, Any]:
    response = get(url, path, app, **params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
def hand_made(demo: ClusterSandbox) -> Iterator[str]:
    """A ReplicaSet applied by hand in catalog (no Application lists it) and its pod."""
    store = demo.kube.store
    rs = store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "hotfix", "namespace": "catalog", "uid": "4b9f3c1e-0000-4000-8000-000000000001"},
            "spec": {"replicas": 1},
        },
        keep_identity=True,
    )
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "hotfix-x1", "namespace": "catalog", "ownerReferences": [owner_reference(rs)]},
            "status": {"phase": "Pending"},
        }
    )
    yield "hotfix-x1"
    store.delete("v1", "Pod", "catalog", "hotfix-x1")
    store.delete("apps/v1", "ReplicaSet", "catalog", "hotfix")


def test_the_application_sees_the_orphans_of_its_namespace(demo_api: str, demo_db: Database) -> None:
    body = answer(demo_api, "/api/v1/apps/argocd/web/orphaned-pods", "argocd:web")
    assert (body["available"], body["destinationNamespace"]) == (True, "shop")
    (pod,) = body["pods"]  # web's and cart's pods are owned; the toolbox is nobody's
    assert (pod["namespace"], pod["pod"], pod["owner"], pod["phase"]) == ("shop", "debug-toolbox", None, "Running")
    micros, hours = stored_cost(demo_db, "shop", "debug-toolbox")
    assert micros > 0 and (pod["cost"]["micros"], pod["hours"]) == (micros, hours)
    assert body["total"]["micros"] == micros and pod["currency"] == "USD"
    other = answer(demo_api, "/api/v1/apps/argocd/shop-cart/orphaned-pods", "argocd:shop-cart")
    assert [p["pod"] for p in other["pods"]] == ["debug-toolbox"]  # the same namespace
    staging = answer(demo_api, "/api/v1/apps/team-apps/web/orphaned-pods", "team-apps:web")
    assert staging["destinationNamespace"] == "shop-staging" and staging["pods"] == []


def test_the_gate_sees_every_managed_namespace(demo_api: str, demo_db: Database, hand_made: str) -> None:
    body = answer(demo_api, "/api/v1/orphaned-pods", GATE)
    assert [n["namespace"] for n in body["namespaces"]] == MANAGED  # not argocd (the gate), legacy, kube-system
    found = {(p["namespace"], p["pod"]): p for p in body["pods"]}
    assert set(found) == {("shop", "debug-toolbox"), ("catalog", hand_made)}
    hotfix = found[("catalog", hand_made)]
    assert hotfix["owner"] == {"kind": "ReplicaSet", "name": "hotfix"} and hotfix["cost"]["micros"] == 0
    assert body["total"]["micros"] == stored_cost(demo_db, "shop", "debug-toolbox")[0]


def test_one_namespace_for_the_gate(demo_api: str, demo_db: Database) -> None:
    shop = answer(demo_api, "/api/v1/namespaces/shop/orphaned-pods", GATE, days="1")
    assert [p["pod"] for p in shop["pods"]] == ["debug-toolbox"] and shop["window"]["days"] == 1
    legacy = answer(demo_api, "/api/v1/namespaces/legacy/orphaned-pods", GATE)
    assert legacy["namespaces"] == [{"namespace": "legacy", "managed": False}] and legacy["pods"] == []
    bad = get(demo_api, "/api/v1/namespaces/Not_A_Namespace/orphaned-pods", GATE)
    assert bad.status_code == 400 and "namespace" in bad.json()["error"]


def test_a_refused_application_list_is_available_false(
    demo: ClusterSandbox, demo_stack: Stack, demo_db: Database
) -> None:
    with (
        forbidding(demo.kube.store, "applications") as refusing,
        serve_function(demo_stack, "cost_api", PROXY_TOKEN=PROXY, KUBE_API_URL=refusing.url) as url,
    ):
        cluster = answer(url, "/api/v1/orphaned-pods", GATE)
        app = answer(url, "/api/v1/apps/argocd/web/orphaned-pods", "argocd:web")
    assert cluster["available"] is False and "HTTP 403" in cluster["reason"] and cluster["pods"] == []
    assert app["available"] is False and "HTTP 403" in app["reason"]


@pytest.mark.parametrize(
    ("path", "app", "token"),
    [
        ("/api/v1/apps/argocd/web/orphaned-pods", "argocd:web", None),
        ("/api/v1/apps/argocd/web/orphaned-pods", "argocd:shop-cart", PROXY),
        ("/api/v1/orphaned-pods", "argocd:web", PROXY),  # a cluster route needs the gate
        ("/api/v1/orphaned-pods", GATE, "guess"),
        ("/api/v1/namespaces/shop/orphaned-pods", "argocd:web", PROXY),
        ("/api/v1/namespaces/shop/orphaned-pods", None, PROXY),
    ],
    ids=["app-no-secret", "app-other-app", "cluster-not-gate", "cluster-wrong-secret", "ns-not-gate", "ns-no-header"],
)
def test_forbidden_without_the_right_header(
    demo_api: str, demo_db: Database, path: str, app: str | None, token: str | None
) -> None:
    response = get(demo_api, path, app, token)
    assert response.status_code == 403
    assert "debug-toolbox" not in response.text
