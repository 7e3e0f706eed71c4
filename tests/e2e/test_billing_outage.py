"""We test that tenant billing survives an outage longer than ``HOURS_LOOKBACK`` (through
``collect_allocations`` and ``collect_charges`` served by functions-framework, against the sandbox
OpenCost and Kubernetes API and PostgreSQL):

- while allocation hours are missing, no usage charge at or after the gap is final (a gap is never
  charged as zero);
- the next allocation run fetches every hour OpenCost still has, and usage charges finalize again,
  each priced from its own rows;
- a metered Subscription deleted afterwards settles and its finalizer is released.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.cluster import cluster_objects
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import DATA
from tests.e2e.test_collect_charges import FB, NOW, UNIT, billing_objects, charges, expected_usage, iso, ping

BEFORE = NOW - timedelta(hours=36)  # the last allocation run before the outage
ACTIVATED = BEFORE - timedelta(hours=4)
AFTER = BEFORE + timedelta(hours=31)  # the first run after a 30-hour outage


@pytest.fixture(scope="module")
def outage_kube(scenario: sandbox_opencost.Scenario) -> Iterator[sandbox_kube.KubeServer]:
    objects: list[dict[str, Any]] = billing_objects()
    objects[-1]["status"]["activatedAt"] = iso(ACTIVATED)
    with sandbox_kube.serve(seed_dir=DATA / "kube", objects=[*cluster_objects(scenario), *objects]) as server:
        yield server


@pytest.fixture(scope="module")
def outage_opencost(scenario: sandbox_opencost.Scenario) -> Iterator[sandbox_opencost.OpenCostServer]:
    """The test cluster's OpenCost, holding data past the wall clock: the Subscription is deleted
    at the wall clock's instant, and its hour must have samples even in the first minute of an
    hour (the shared OpenCost's data ends at the current minute, so that hour would be empty)."""
    with sandbox_opencost.serve(scenario.model_copy(update={"data_until_now": False})) as server:
        yield server


@pytest.fixture(scope="module")
def functions(
    stack: Stack, outage_kube: sandbox_kube.KubeServer, outage_opencost: sandbox_opencost.OpenCostServer
) -> Iterator[tuple[str, str]]:
    world = replace(stack, kube_url=outage_kube.url, opencost_url=outage_opencost.url)
    with (
        serve_function(world, "collect_allocations", HOURS_LOOKBACK="5") as allocations,
        serve_function(world, "collect_charges") as charge,
    ):
        yield allocations, charge


def usage(db: Database) -> dict[Any, dict[str, Any]]:
    return {r["hour"]: r for r in charges(db) if r["source"] == "cpuHour"}


def test_billing_finalizes_again_after_an_outage_and_a_deleted_subscription_settles(
    db: Database, functions: tuple[str, str], outage_kube: sandbox_kube.KubeServer
) -> None:
    allocations, charge = functions
    ping(allocations, BEFORE)  # BEFORE-5h .. BEFORE-1h final, BEFORE open
    ping(charge, BEFORE)
    assert {h for h, r in usage(db).items() if r["is_finalized"]} == {ACTIVATED + timedelta(hours=n) for n in range(4)}

    # 30 hours without allocation runs; charges keep running. Hours BEFORE .. AFTER-1h are open or
    # missing in the ledger: their usage is charged open (0 for now), never final.
    gap = [BEFORE + timedelta(hours=n) for n in range(31)]
    ping(charge, AFTER)
    during = usage(db)
    assert not any(during[h]["is_finalized"] for h in gap)
    assert {during[h]["amount_micros"] for h in gap[1:]} == {0}

    # The allocation run after the outage fetches every hour since (far beyond HOURS_LOOKBACK=5),
    # then usage finalizes again, each hour priced from its own rows.
    caught_up = ping(allocations, AFTER)
    assert caught_up["hours_written"] == 32 and caught_up["hours_lost"] == 0, caught_up
    ping(charge, AFTER)
    after = usage(db)
    assert all(after[h]["is_finalized"] for h in gap) and not after[AFTER]["is_finalized"]
    for hour in (gap[0], gap[15], gap[-1]):
        assert after[hour]["amount_micros"] == expected_usage(db, hour, UNIT) > 0
    assert after[gap[15]]["unit_price_micros"] == Decimal(UNIT)

    # Deleted: deactivated now, settled once usage is final through the deactivation hour.
    outage_kube.store.delete(FB, "subscriptions", "shop", "gold-web")
    later = NOW + timedelta(hours=2)
    ping(allocations, later)
    settled = ping(charge, later)
    assert settled["finalizers_released"] == 1, settled
    assert outage_kube.store.get(FB, "subscriptions", "shop", "gold-web") is None
