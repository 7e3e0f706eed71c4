"""We test these aspects of ``GET /api/v1/apps/{ns}/{name}/rightsizing`` over real HTTP, against the
sandbox Kubernetes API serving the demo's VerticalPodAutoscalers and rows stored by
``collect_allocations`` from the sandbox OpenCost:

- a VPA in ``updateMode: Off`` is advice, any other mode is ``managed`` (no advice); a VPA is the
  application's only when its targetRef is one of the application's controllers;
- suggestions are the VPA target rounded up to 0.01 cores and 16 MiB; the current request is the
  longest run of the stored rows; an upper bound above 3x the target is unsettled (low confidence);
  a memory limit below the upper bound is warned about; a VPA without a recommendation says so;
- the money: price x (max(suggested, usage) x hours - billed) per stored row at the row's own
  price, summed, rounded once, and x 720 / measured hours for the month, recomputed here from the
  rows with our own SQL and arithmetic;
- ``available: false`` (200, never an error) when the cluster does not serve the VPA API, when the
  API server answers 403, and when there are no Kubernetes credentials;
- authorization: the proxy's secret and a header naming the path's application, else 403.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox.cluster_sandbox import ClusterSandbox
from sandbox.localstack import Stack, serve_function
from tests.e2e import insights_world as world
from tests.e2e.insights_world import PROXY, forbidding, get, rows

# The demo world's fixtures, used by name below.
demo, demo_stack, demo_db, demo_api = world.demo, world.demo_stack, world.demo_db, world.demo_api

PATH = "/api/v1/apps/{}/{}/rightsizing"
MIB = 1024**2


def rightsizing(url: str, app: str, **params: str) -> dict[str, Any]:
    ns, name = app.split(":")
    response = get(url, PATH.format(ns, name), app, **params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def priced_change(db: Database, namespace: str, container: str, resource: str, suggested: Fraction) -> tuple[int, int]:
    """(window, monthly) micros of the change, from the stored rows, independently of the code."""
    usage, billed, cost = (
        ("cpu_core_usage_avg", "cpu_core_hours", "cpu_cost_micros")
        if resource == "cpu"
        else ("ram_byte_usage_avg", "ram_byte_hours", "ram_cost_micros")
    )
    stored = rows(
        db,
        f"SELECT hour, minutes, {usage} AS usage, {billed} AS billed, {cost} AS cost FROM provider_allocations"
        " WHERE cluster = 'demo' AND namespace = %s AND container = %s AND hour >= %s",
        namespace,
        container,
        datetime.now(UTC) - timedelta(days=8),
    )
    assert stored, "no stored rows to price"
    total = Fraction(0)
    for row in stored:
        hours = Fraction(row["minutes"]) / 60
        proposed = max(suggested, Fraction(row["usage"] or 0)) * hours
        total += Fraction(row["cost"]) / Fraction(row["billed"]) * (proposed - Fraction(row["billed"]))
    longest: dict[datetime, Fraction] = {}
    for row in stored:  # the measured period: per hour, its longest row (replicas do not add up)
        longest[row["hour"]] = max(longest.get(row["hour"], Fraction(0)), Fraction(row["minutes"]) / 60)
    measured = sum(longest.values(), Fraction(0))
    return round(total), round(total * 720 / measured)


def longest_request(db: Database, namespace: str, container: str, column: str) -> Fraction:
    (row,) = rows(
        db,
        f"SELECT {column} AS request, sum(minutes) AS minutes FROM provider_allocations"
        " WHERE cluster = 'demo' AND namespace = %s AND container = %s"
        f" GROUP BY {column} ORDER BY sum(minutes) DESC, {column} DESC LIMIT 1",
        namespace,
        container,
    )
    return Fraction(row["request"])


def test_off_vpa_is_advice_priced_from_the_stored_rows(demo_api: str, demo_db: Database) -> None:
    body = rightsizing(demo_api, "argocd:shop-cart")
    assert body["available"] is True and body["destinationNamespace"] == "shop"
    (vpa,) = body["vpas"]  # shop's other VPA targets argocd/web's Rollout
    assert (vpa["name"], vpa["updateMode"], vpa["managed"]) == ("cart", "Off", False)
    assert vpa["targetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "cart"}
    (cart,) = vpa["containers"]
    assert (cart["container"], cart["settled"], cart["confidence"], cart["warnings"]) == ("cart", True, "normal", [])
    cpu, memory = cart["cpu"], cart["memory"]
    # 123m rounds up to 0.13 cores; 300Mi up to 304Mi (19 x 16 MiB)
    assert (cpu["target"], cpu["suggested"], cpu["suggestedQuantity"]) == ("0.123", "0.13", "130m")
    assert (memory["suggested"], memory["suggestedQuantity"]) == (str(304 * MIB), "304Mi")
    assert memory["lowerBound"] == "262144000"  # 262144k: a decimal suffix, parsed exactly
    assert Fraction(cpu["current"]) == longest_request(demo_db, "shop", "cart", "cpu_core_request_avg")
    assert Fraction(memory["current"]) == longest_request(demo_db, "shop", "cart", "ram_byte_request_avg")
    assert cpu["currentQuantity"] == "200m" and memory["currentQuantity"] == "512Mi"
    for resource, suggested in (("cpu", Fraction(13, 100)), ("memory", Fraction(304 * MIB))):
        window, monthly = priced_change(demo_db, "shop", "cart", resource, suggested)
        line = cart[resource]
        assert (line["change"]["micros"], line["monthly"]["micros"]) == (window, monthly), resource
        assert line["unpricedRows"] == 0 and Fraction(line["measuredHours"]) > 2
    assert cpu["change"]["micros"] < 0  # 0.2 cores requested, 0.13 suggested: a saving
    assert cart["monthly"]["micros"] == cpu["monthly"]["micros"] + memory["monthly"]["micros"]
    assert vpa["monthly"] == cart["monthly"] == body["monthly"]
    assert vpa["currency"] == "USD"


def test_a_vpa_in_auto_mode_is_managed(demo_api: str, demo_db: Database) -> None:
    body = rightsizing(demo_api, "argocd:web")
    (vpa,) = body["vpas"]  # the Rollout's VPA; cart's belongs to argocd/shop-cart
    assert (vpa["name"], vpa["updateMode"], vpa["managed"]) == ("web", "Auto", True)
    assert vpa["targetRef"]["kind"] == "Rollout" and "containers" not in vpa
    assert body["monthly"]["micros"] == 0


def test_unsettled_limits_and_missing_recommendations(demo_api: str, demo_db: Database) -> None:
    vpas = {v["name"]: v for v in rightsizing(demo_api, "argocd:catalog", days="1")["vpas"]}
    assert sorted(vpas) == ["catalog-db", "catalog-web", "search"]
    (search,) = vpas["search"]["containers"]
    assert (search["settled"], search["confidence"]) == (False, "low")
    assert search["cpu"]["unsettled"] is True and search["memory"]["unsettled"] is False  # 3 > 3 x 0.8; 3Gi < 6Gi
    (web,) = vpas["catalog-web"]["containers"]
    assert web["settled"] is True
    assert web["warnings"] == [
        "memory limit 512Mi is below the VPA's upper bound 768Mi: "
        "the container may be OOM-killed at the usage the VPA expects"
    ]
    assert (web["cpu"]["suggestedQuantity"], web["memory"]["suggestedQuantity"]) == ("240m", "480Mi")
    assert vpas["catalog-db"]["containers"] == [] and vpas["catalog-db"]["warnings"] == [
        "the VPA has no recommendation yet"
    ]
    total = sum(v["monthly"]["micros"] for v in vpas.values())
    assert rightsizing(demo_api, "argocd:catalog", days="1")["monthly"]["micros"] == total


@pytest.fixture(scope="module")
def plain_api(stack: Stack) -> Iterator[str]:
    """cost_api over the test cluster (tests/data): no VPA installed."""
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY) as url:
        yield url


def test_no_vpa_api_is_available_false(plain_api: str) -> None:
    body = rightsizing(plain_api, "argocd:web")
    assert body["available"] is False and body["vpas"] == []
    assert "does not serve autoscaling.k8s.io/v1 verticalpodautoscalers" in body["reason"]


def test_a_refused_vpa_list_is_available_false(demo: ClusterSandbox, demo_stack: Stack, demo_db: Database) -> None:
    with (
        forbidding(demo.kube.store, "verticalpodautoscalers") as refusing,
        serve_function(demo_stack, "cost_api", PROXY_TOKEN=PROXY, KUBE_API_URL=refusing.url) as url,
    ):
        body = rightsizing(url, "argocd:shop-cart")
    assert body["available"] is False and body["vpas"] == []
    assert "HTTP 403" in body["reason"] and "verticalpodautoscalers" in body["reason"]


def test_no_credentials_is_available_false(demo_stack: Stack, demo_db: Database) -> None:
    with serve_function(
        demo_stack, "cost_api", PROXY_TOKEN=PROXY, KUBE_API_URL="", KUBECONFIG="/nonexistent/kubeconfig"
    ) as url:
        body = rightsizing(url, "argocd:shop-cart")
    assert body["available"] is False and body["reason"].startswith("no Kubernetes credentials")


@pytest.mark.parametrize(
    ("app", "token"),
    [("argocd:shop-cart", None), ("argocd:shop-cart", "guess"), ("argocd:web", PROXY), (None, PROXY)],
    ids=["no-secret", "wrong-secret", "other-app", "no-app-header"],
)
def test_only_the_named_application_through_the_proxy(
    demo_api: str, demo_db: Database, app: str | None, token: str | None
) -> None:
    response = get(demo_api, PATH.format("argocd", "shop-cart"), app, token)
    assert response.status_code == 403
    assert "containers" not in response.text


def test_bad_days_and_unknown_application(demo_api: str, demo_db: Database) -> None:
    bad = get(demo_api, PATH.format("argocd", "shop-cart"), "argocd:shop-cart", days="0")
    assert bad.status_code == 400 and "days" in bad.json()["error"]
    assert get(demo_api, PATH.format("argocd", "nope"), "argocd:nope").status_code == 404


def test_the_route_is_documented(demo_api: str, demo_db: Database) -> None:
    document = httpx.get(demo_api + "/api/v1/openapi.json", timeout=10).json()
    assert "days" in str(document["paths"]["/api/v1/apps/{appNamespace}/{appName}/rightsizing"])
