"""We test these aspects of tenant billing, through ``collect_allocations`` and ``collect_charges``
served by functions-framework, against the sandbox OpenCost and Kubernetes API and PostgreSQL:

- reconciliation: the PriceBook is active and rendered into OpenCost's pricing ConfigMap (and
  OpenCost restarted once), the Offering's pricing resolved, the Subscription given its finalizer;
- a Subscription's hourly charges: the fee ticks and metered CPU usage priced from each
  allocation row's own PriceBook with the Offering's margin, half-even per row, clamped to the
  active interval (the activation hour is half); the unit price stored is exact (0.031611 x 1.5
  is 47,416.5 micros), only ``status.resolvedPricing`` (an integer in the CRD) shows it rounded;
- replaying a run changes nothing; a PriceBook change reprices only open hours;
- ``status.costs`` has hour, day and month buckets with a breakdown per meter;
- deletion: the Subscription deactivates, settles (from the Offering's mirrored version when the
  Offering itself was deleted first), and its finalizer is released.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import httpx
import pytest

from finops.hours import truncate_to_hour
from functions.localstack import Stack, serve_function
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.cluster import cluster_objects
from tests.e2e.conftest import DATA, TOKEN

NOW = truncate_to_hour(datetime.now(UTC))
START = NOW - timedelta(hours=4)  # the first collected hour
ACTIVATED = START + timedelta(minutes=30)
FB = "finops.stakater.com/v1alpha1"
FEE = 1_000_000  # per hour, ActivatedAt alignment
UNIT = Decimal("47416.5")  # cpuHour 0.031611 x factorMilli 1500, in micros: exact, never rounded


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def billing_objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "opencost"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "opencost", "namespace": "opencost"},
         "spec": {"template": {"metadata": {"annotations": {}}}}},
        {"apiVersion": FB, "kind": "Offering", "metadata": {"name": "gold", "namespace": "finops"},
         "spec": {"pricing": {
             "subscriptionFee": {"priceMicros": FEE, "period": "1h", "tickAlignment": "ActivatedAt", "minPeriods": 1},
             "resourcePricing": [{"name": "cpuHour", "margins": {"factorMilli": 1500}}]}}},
        {"apiVersion": FB, "kind": "Subscription", "metadata": {"name": "gold-web", "namespace": "shop"},
         "spec": {"offeringRef": {"name": "gold", "namespace": "finops"},
                  "usageSources": [{"resourceType": "Deployment", "name": "web", "namespace": "shop"}]},
         "status": {"activatedAt": iso(ACTIVATED), "ready": True}},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def billing_kube(scenario: sandbox_opencost.Scenario) -> Iterator[sandbox_kube.KubeServer]:
    objects = [*cluster_objects(scenario), *billing_objects()]
    with sandbox_kube.serve(seed_dir=DATA / "kube", objects=objects) as server:
        yield server


@pytest.fixture(scope="module")
def billing(stack: Stack, billing_kube: sandbox_kube.KubeServer) -> Iterator[tuple[str, str]]:
    world = replace(stack, kube_url=billing_kube.url)
    with (
        serve_function(world, "collect_allocations", HOURS_LOOKBACK="5") as allocations,
        serve_function(world, "collect_charges") as charges,
    ):
        yield allocations, charges


def ping(url: str, scheduled: datetime) -> dict[str, Any]:
    response = httpx.post(url, json={"scheduledTime": iso(scheduled)}, headers={"Authorization": f"Bearer {TOKEN}"},
                          timeout=120)  # fmt: skip
    assert response.status_code == 200, response.text
    return dict(response.json())


def charges(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT hour, source, unit_price_micros, quantity, amount_micros, is_finalized FROM subscription_charges"
            " ORDER BY hour, source"
        ).fetchall()


def expected_usage(db: Database, hour: datetime, unit: Decimal, fraction: Decimal = Decimal(1)) -> int:
    """Σ per row of round_half_even(cores used x hours x fraction x unit price), from the rows."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT cpu_core_usage_avg, minutes FROM provider_allocations WHERE namespace = 'shop'"
            " AND controller = 'web' AND hour = %s",
            (hour,),
        ).fetchall()
    assert rows
    return sum(
        int((r["cpu_core_usage_avg"] * r["minutes"] / 60 * fraction * unit).quantize(Decimal(1), ROUND_HALF_EVEN))
        for r in rows
    )


def test_a_subscriptions_life(db: Database, billing: tuple[str, str], billing_kube: sandbox_kube.KubeServer) -> None:
    allocations, charge = billing
    ping(allocations, NOW)  # START .. NOW-1h final, NOW open
    first = ping(charge, NOW)
    assert first["outcome"] == "success", first
    store = billing_kube.store

    # Reconciled: active book rendered into OpenCost's ConfigMap, OpenCost restarted once.
    config = store.get("v1", "configmaps", "opencost", "finops-operator-custom-pricing-configs")
    assert config is not None and '"CPU": "0.031611"' in config["data"]["default.json"]
    restarts = store.get("apps/v1", "deployments", "opencost", "opencost")["spec"]["template"]["metadata"][
        "annotations"
    ]  # type: ignore[index]
    assert "finops.stakater.com/restartedAt" in restarts
    offering = store.get(FB, "offerings", "finops", "gold")
    assert offering is not None and offering["status"]["ready"] is True
    # The CRD's unitPriceMicros is an integer: displayed rounded half-even; charges use UNIT.
    assert offering["status"]["resolvedPricing"]["meters"] == [{"name": "cpuHour", "unitPriceMicros": 47_416}]
    sub = store.get(FB, "subscriptions", "shop", "gold-web")
    assert sub is not None and "subscriptions.finops.stakater.com/finalizer" in sub["metadata"]["finalizers"]

    rows = charges(db)
    fee = {r["hour"]: r["amount_micros"] for r in rows if r["source"] == "fee"}
    assert fee == {START + timedelta(hours=n): (0 if n == 0 else FEE) for n in range(5)}  # ticks at :30 after the first
    usage = {r["hour"]: r for r in rows if r["source"] == "cpuHour"}
    assert usage[START]["amount_micros"] == expected_usage(db, START, UNIT, Decimal("0.5"))  # active half the hour
    assert usage[START + timedelta(hours=1)]["amount_micros"] == expected_usage(db, START + timedelta(hours=1), UNIT)
    assert {h for h, r in usage.items() if not r["is_finalized"]} == {NOW}

    # Replaying the run changes nothing.
    ping(charge, NOW)
    assert [(r["hour"], r["source"], r["amount_micros"], r["is_finalized"]) for r in charges(db)] == [
        (r["hour"], r["source"], r["amount_micros"], r["is_finalized"]) for r in rows
    ]

    # status.costs: hour, day and month buckets, each with its breakdown.
    costs = store.get(FB, "subscriptions", "shop", "gold-web")["status"]["costs"]  # type: ignore[index]
    assert [c["granularity"] for c in costs] == ["hour", "day", "month"]
    assert {b["name"] for b in costs[2]["breakdown"]} == {"subscription", "cpuHour"}  # the CRD's enum
    assert costs[2]["projected"] >= costs[2]["current"] > 0

    # A PriceBook change: finalized hours keep their price; the open hour is repriced.
    store.patch(FB, "pricebooks", "finops", "standard", {"spec": {"rates": {"cpuHour": "0.05"}}})
    ping(allocations, NOW + timedelta(hours=1))
    ping(charge, NOW + timedelta(hours=1))
    after = {(r["hour"], r["source"]): r for r in charges(db)}
    assert after[(START + timedelta(hours=1), "cpuHour")]["unit_price_micros"] == UNIT
    assert after[(NOW, "cpuHour")]["unit_price_micros"] == 75_000  # 0.05 x 1.5

    # The Offering is deleted while its Subscription winds down: it settles from the mirrored
    # version (the operator stranded such finalizers). Then the Subscription is deleted:
    # deactivated now, settled, finalizer released once the charges are final.
    store.delete(FB, "offerings", "finops", "gold")
    assert store.get(FB, "offerings", "finops", "gold") is None
    store.delete(FB, "subscriptions", "shop", "gold-web")
    assert store.get(FB, "subscriptions", "shop", "gold-web") is not None  # held by the finalizer
    later = NOW + timedelta(hours=3)
    ping(allocations, later)
    settled = ping(charge, later)
    assert settled["finalizers_released"] == 1, settled
    assert store.get(FB, "subscriptions", "shop", "gold-web") is None


def test_the_finops_provider_through_reconcile(
    stack: Stack, billing_kube: sandbox_kube.KubeServer, db: Database
) -> None:
    store = billing_kube.store
    store.apply_manifests([
        {"apiVersion": FB, "kind": "FinOpsProvider", "metadata": {"name": "default"},
         "spec": {"awsoptions": {"pricingModelSource": "Pricebook"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "multi-tenant-operator"}},
        {"apiVersion": "dependencies.tenantoperator.stakater.com/v1alpha1", "kind": "OpenCost",
         "metadata": {"name": "opencost", "namespace": "multi-tenant-operator"}, "spec": {"opencost": {}}},
    ])  # fmt: skip
    world = replace(stack, kube_url=billing_kube.url)
    with serve_function(world, "reconcile", MTO_ENABLED="true") as url:
        event = {"ce-type": "dev.knative.apiserver.resource.update", "ce-id": "1", "ce-source": "test",
                 "ce-specversion": "1.0"}  # fmt: skip
        assert httpx.post(url, json={}, headers=event).status_code == 200
        provider = store.get(FB, "finopsproviders", None, "default")
        assert provider is not None
        (ready,) = provider["status"]["conditions"]
        assert (ready["status"], ready["reason"]) == ("False", "MissingCloudIntegrationSecret")
        aws = {"cloudIntegrationSecret": "aws-cur", "pricingModelSource": "Pricebook"}
        store.patch(FB, "finopsproviders", None, "default", {"spec": {"awsoptions": aws}})
        assert httpx.post(url, json={}, headers=event).status_code == 200
    mto = store.get(
        "dependencies.tenantoperator.stakater.com/v1alpha1", "opencosts", "multi-tenant-operator", "opencost"
    )
    assert mto is not None and mto["spec"]["opencost"] == {
        "cloudIntegrationSecret": "aws-cur", "cloudCost": {"enabled": True}, "customPricing": {"enabled": True},
    }  # fmt: skip
    provider = store.get(FB, "finopsproviders", None, "default")
    assert provider is not None and provider["status"]["conditions"][0]["status"] == "True"
    assert provider["status"]["lastSyncTime"] and provider["status"]["observedGeneration"]
