"""We test these aspects of tenant billing, through ``collect_allocations`` and ``collect_charges``
served by functions-framework, against the sandbox OpenCost and Kubernetes API and PostgreSQL:

- reconciliation: the PriceBook is active and rendered into OpenCost's pricing ConfigMap (and
  OpenCost restarted once), the Offering's pricing resolved, the Subscription given its finalizer;
- a Subscription's hourly charges: the fee ticks and metered CPU usage priced from each
  allocation row's own PriceBook with the Offering's margin, half-even per row, clamped to the
  active interval (the activation hour is half); the unit price stored is exact (0.031611 x 1.5
  is 47,416.5 micros), only ``status.resolvedPricing`` (an integer in the CRD) shows it rounded;
- replaying a run changes nothing; a PriceBook change reprices only open hours;
- ``status.costs`` has hour, day and month buckets with a breakdown per meter; at a fixed hour of
  a 31-day month every bucket's ``current``, ``projected`` and breakdown entry equal integers
  worked out by hand (fee over the whole bucket, usage run-rate), over HTTP and in-process;
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
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.cluster import cluster_objects
from sandbox.localstack import Stack, serve_function
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
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "opencost", "namespace": "opencost"},
            "spec": {"template": {"metadata": {"annotations": {}}}},
        },
        {
            "apiVersion": FB,
            "kind": "Offering",
            "metadata": {"name": "gold", "namespace": "finops"},
            "spec": {
                "pricing": {
                    "subscriptionFee": {
                        "priceMicros": FEE,
                        "period": "1h",
                        "tickAlignment": "ActivatedAt",
                        "minPeriods": 1,
                    },
                    "resourcePricing": [{"name": "cpuHour", "margins": {"factorMilli": 1500}}],
                }
            },
        },
        {
            "apiVersion": FB,
            "kind": "Subscription",
            "metadata": {"name": "gold-web", "namespace": "shop"},
            "spec": {
                "offeringRef": {"name": "gold", "namespace": "finops"},
                "usageSources": [{"resourceType": "Deployment", "name": "web", "namespace": "shop"}],
            },
            "status": {"activatedAt": iso(ACTIVATED), "ready": "True"},
        },
    ]


@pytest.fixture(scope="module")
def billing_kube(scenario: sandbox_opencost.Scenario) -> Iterator[sandbox_kube.KubeServer]:
    objects = [*cluster_objects(scenario), *billing_objects()]
    with sandbox_kube.serve(seed_dir=DATA / "kube", objects=objects) as server:
        yield server


@pytest.fixture(scope="module")
def billing(
    stack: Stack, billing_kube: sandbox_kube.KubeServer, scenario: sandbox_opencost.Scenario
) -> Iterator[tuple[str, str]]:
    # OpenCost's clock stands at the end of the last hour the test pings: the Subscription is
    # deleted at the wall clock's time, which is NOW's hour or, when the module ran across an hour,
    # the next one; either way that hour's data must exist for its charges to become final.
    with sandbox_opencost.serve(scenario, clock=lambda: NOW + timedelta(hours=3, minutes=59)) as opencost:
        world = replace(stack, kube_url=billing_kube.url, opencost_url=opencost.url)
        with (
            serve_function(world, "collect_allocations", HOURS_LOOKBACK="5") as allocations,
            serve_function(world, "collect_charges") as charges,
        ):
            yield allocations, charges


def ping(url: str, scheduled: datetime) -> dict[str, Any]:
    response = httpx.post(
        url, json={"scheduledTime": iso(scheduled)}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
    )
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
    deployment = store.get("apps/v1", "deployments", "opencost", "opencost")
    assert deployment is not None
    restarts = deployment["spec"]["template"]["metadata"]["annotations"]
    assert "finops.stakater.com/restartedAt" in restarts
    offering = store.get(FB, "offerings", "finops", "gold")
    assert offering is not None and offering["status"]["ready"] == "True"
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
    store.apply_manifests(
        [
            {
                "apiVersion": FB,
                "kind": "FinOpsProvider",
                "metadata": {"name": "default"},
                "spec": {"awsoptions": {"pricingModelSource": "Pricebook"}},
            },
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "multi-tenant-operator"}},
            {
                "apiVersion": "dependencies.tenantoperator.stakater.com/v1alpha1",
                "kind": "OpenCost",
                "metadata": {"name": "opencost", "namespace": "multi-tenant-operator"},
                "spec": {"opencost": {}},
            },
        ]
    )
    world = replace(stack, kube_url=billing_kube.url)
    with serve_function(world, "reconcile", MTO_ENABLED="true") as url:
        event = {
            "ce-type": "dev.knative.apiserver.resource.update",
            "ce-id": "1",
            "ce-source": "test",
            "ce-specversion": "1.0",
        }
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
        "cloudIntegrationSecret": "aws-cur",
        "cloudCost": {"enabled": True},
        "customPricing": {"enabled": True},
    }
    provider = store.get(FB, "finopsproviders", None, "default")
    assert provider is not None and provider["status"]["conditions"][0]["status"] == "True"
    assert provider["status"]["lastSyncTime"] and provider["status"]["observedGeneration"]


# -- status.costs, by hand ---------------------------------------------------------------------------
# A fixed hour in a 31-day month, so every figure below is a constant worked out by hand. The
# Subscription "silver-web" is activated at 08:30; the run is pinned at 11:00 on October 15th.
PINNED = datetime(2026, 10, 15, 11, tzinfo=UTC)
SILVER_ACTIVATED = datetime(2026, 10, 15, 8, 30, tzinfo=UTC)


def silver_objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "opencost"}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "opencost", "namespace": "opencost"},
            "spec": {"template": {"metadata": {"annotations": {}}}},
        },
        {
            "apiVersion": FB,
            "kind": "Offering",
            "metadata": {"name": "silver", "namespace": "finops"},
            "spec": {
                "pricing": {
                    "subscriptionFee": {"priceMicros": FEE, "period": "1h", "tickAlignment": "ActivatedAt"},
                    "resourcePricing": [{"name": "cpuHour", "margins": {"factorMilli": 1500}}],
                }
            },
        },
        {
            "apiVersion": FB,
            "kind": "Subscription",
            "metadata": {"name": "silver-web", "namespace": "shop"},
            "spec": {
                "offeringRef": {"name": "silver", "namespace": "finops"},
                "usageSources": [{"resourceType": "Deployment", "name": "web", "namespace": "shop"}],
            },
            "status": {"activatedAt": iso(SILVER_ACTIVATED), "ready": "True"},
        },
    ]


@pytest.fixture(scope="module")
def silver(stack: Stack, scenario: sandbox_opencost.Scenario) -> Iterator[tuple[Stack, sandbox_kube.KubeServer, str]]:
    """The Kubernetes API with silver-web, and collect_allocations over it: (world, kube, its URL)."""
    with sandbox_kube.serve(seed_dir=DATA / "kube", objects=[*cluster_objects(scenario), *silver_objects()]) as kube:
        world = replace(stack, kube_url=kube.url)
        with serve_function(world, "collect_allocations", HOURS_LOOKBACK="5") as allocations:
            yield world, kube, allocations


@pytest.fixture(scope="module")
def silver_charges(silver: tuple[Stack, sandbox_kube.KubeServer, str]) -> Iterator[str]:
    """collect_charges served over HTTP (only the tests that ping it start it)."""
    with serve_function(silver[0], "collect_charges") as url:
        yield url


# Fee: 1,000,000 a tick, ticks at 09:30, 10:30, 11:30 ... (ActivatedAt 08:30, period 1h); an hour's
# fee holds the ticks in (start, end]: 08:00-09:00 none, then one an hour.
# Usage (cpuHour): shop/web is 2 pods x (app, proxy); app uses 0.2 cores in even hours and 0.7 in
# odd ones, proxy 0.05. Unit price 31,611 micros x 1.5 = 47,416.5 (exact); per row, rounded
# half-even: app 0.2 h -> 9,483.3 -> 9,483; app 0.7 -> 33,191.55 -> 33,192; proxy 0.05 ->
# 2,370.825 -> 2,371; in the activation hour (08:30-09:00, half of it) app 0.1 -> 4,741.65 ->
# 4,742 and proxy 0.025 -> 1,185.4125 -> 1,185.
#   hour 08: 2 x (4,742 + 1,185) = 11,854      hour 09: 2 x (33,192 + 2,371) = 71,126
#   hour 10: 2 x (9,483 + 2,371) = 23,708      hour 11 (pinned, open): 71,126
# Usage so far: 11,854 + 71,126 + 23,708 + 71,126 = 177,814 (all of it this day and month).
# Projected usage = current x active time in the bucket / active time so far (to the pinned hour's end):
#   hour  [11:00, 12:00):   71,126 x 1 h / 1 h = 71,126
#   day   [Oct 15, Oct 16): active 08:30 -> 12:00 so far (3.5 h), 15.5 h in the whole day:
#         177,814 / 3.5 h = 50,804 an hour; x 15.5 h = 787,462
#   month [Oct 1, Nov 1):   active 399.5 h in the month (16 days 15.5 h): 50,804 x 399.5 h
#         = 20,296,198
# Projected fee = the fee over the whole bucket: the ticks in (08:30, end]:
#   hour: 11:30 -> 1; day: 09:30 ... 23:30 -> 15; month: to Nov 1 00:00, 16 days 15.5 h -> 399.
EXPECTED_COSTS = [
    {
        "granularity": "hour",
        "start": "2026-10-15T11:00:00Z",
        "endExclusive": "2026-10-15T12:00:00Z",
        "current": 1_071_126,
        "projected": 1_071_126,
        "breakdown": [
            {"name": "subscription", "current": 1_000_000, "projected": 1_000_000},
            {"name": "cpuHour", "current": 71_126, "projected": 71_126},
        ],
    },
    {
        "granularity": "day",
        "start": "2026-10-15T00:00:00Z",
        "endExclusive": "2026-10-16T00:00:00Z",
        "current": 3_177_814,
        "projected": 15_787_462,
        "breakdown": [
            {"name": "subscription", "current": 3_000_000, "projected": 15_000_000},
            {"name": "cpuHour", "current": 177_814, "projected": 787_462},
        ],
    },
    {
        "granularity": "month",
        "start": "2026-10-01T00:00:00Z",
        "endExclusive": "2026-11-01T00:00:00Z",
        "current": 3_177_814,
        "projected": 419_296_198,
        "breakdown": [
            {"name": "subscription", "current": 3_000_000, "projected": 399_000_000},
            {"name": "cpuHour", "current": 177_814, "projected": 20_296_198},
        ],
    },
]


@pytest.mark.parametrize("run", ["over-http", "in-process"])
def test_status_costs_by_hand(
    db: Database, silver: tuple[Stack, sandbox_kube.KubeServer, str], request: pytest.FixtureRequest, run: str
) -> None:
    from finops.allocations import DEFAULT_AGGREGATION
    from infra.kube import KubeClient
    from usecases.collect_charges.service import collect_charges
    from usecases.reconcile.service import OpenCostTarget

    world, kube, allocations = silver
    store = kube.store
    store.patch(FB, "subscriptions", "shop", "silver-web", {"status": {"costs": None}}, subresource="status")
    ping(allocations, PINNED)
    if run == "over-http":
        assert ping(request.getfixturevalue("silver_charges"), PINNED)["outcome"] == "success"
    else:  # the same service in this process (what mutation testing can see)
        target = OpenCostTarget("opencost", "opencost", "finops-operator-custom-pricing-configs")
        with KubeClient.from_url(kube.url) as client:
            result = collect_charges(
                db, client, world.cluster, DEFAULT_AGGREGATION, target, scheduled=PINNED, now=datetime.now(UTC)
            )
        assert result.outcome == "success", result.errors
    sub = store.get(FB, "subscriptions", "shop", "silver-web")
    assert sub is not None
    assert sub["status"]["costs"] == EXPECTED_COSTS
    cpu = {r["hour"]: r["amount_micros"] for r in charges(db) if r["source"] == "cpuHour"}
    assert cpu == {
        PINNED - timedelta(hours=3): 11_854,
        PINNED - timedelta(hours=2): 71_126,
        PINNED - timedelta(hours=1): 23_708,
        PINNED: 71_126,
    }
