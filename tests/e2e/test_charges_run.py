"""We test what one ``collect_charges`` run makes of several Subscriptions (in-process, against the
sandbox Kubernetes API over HTTP and PostgreSQL):

- a Subscription whose Offering was never seen, or with a row that cannot be priced, is reported
  and not priced; the others are, and their ``status.costs`` written; an ``offeringRef`` without
  a namespace is in the Subscription's;
- usage rows without a rate are summed over the Subscriptions;
- a Subscription not activated does not stop the status work of those after it; a status patch
  refused with a conflict is not counted, and the run completes;
- without a scheduled time the run is pinned at the hour of ``now``;
- a deleted Offering is priced from its mirror, a Subscription whose reconcile failed this run
  from its last mirrored version.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from finops.errors import Conflict
from finops.hours import HOUR, Hour
from infra.kube import KubeClient
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from tests.e2e.billing_world import AGG, FB, OFFERING, PINNED, PRICEBOOK, subscription, usage
from usecases.collect_charges.service import ChargesResult, collect_charges
from usecases.reconcile.subscriptions import decide

ACTIVATED = PINNED.start - 3 * HOUR + timedelta(minutes=30)


def run(kube: sandbox_kube.KubeServer, db: Database, pinned: Hour = PINNED) -> ChargesResult:
    with KubeClient.from_url(kube.url) as client:
        return collect_charges(db, client, "c", AGG, None, scheduled=pinned.start, now=pinned.start)


def charged(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Per Subscription (namespace/name): its charge rows as (hour, source, offering version,
    Subscription version)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT namespace || '/' || name AS sub, hour, source, offering_version_id, subscription_version_id"
            " FROM subscription_charges ORDER BY 1, 2, 3"
        ).fetchall()
    found: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        found.setdefault(row["sub"], []).append(
            (row["hour"], row["source"], row["offering_version_id"], row["subscription_version_id"])
        )
    return found


def costs(kube: sandbox_kube.KubeServer, namespace: str, name: str) -> Any:
    stored = kube.store.get(FB, "subscriptions", namespace, name)
    assert stored is not None
    return (stored.get("status") or {}).get("costs")


HOURS = [PINNED.start - n * HOUR for n in (3, 2, 1, 0)]  # activated at h(3) + 30 min


def test_an_offering_never_seen_fails_its_subscription_only(db: Database) -> None:
    usage(db, 2, ACTIVATED - timedelta(minutes=30), PINNED.start)
    lost = subscription(0, offeringRef={"name": "missing", "namespace": "finops"})
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, lost, subscription(1)]) as kube:
        result = run(kube, db)
        assert result.errors["team-0/sub-0"] == "Offering finops/missing was never seen"
        assert result.outcome == "partial"
        assert (result.subscriptions, result.statuses_patched) == (1, 1)
        assert list(charged(db)) == ["team-1/sub-1"]
        assert [(hour, source) for hour, source, *_ in charged(db)["team-1/sub-1"]] == [
            (hour, source) for hour in HOURS for source in ("cpuHour", "fee")
        ]
        assert costs(kube, "team-1", "sub-1") is not None
        assert costs(kube, "team-0", "sub-0") is None


def test_a_row_that_cannot_be_priced_is_reported_for_its_subscription(db: Database) -> None:
    usage(db, 2, ACTIVATED - timedelta(minutes=30), PINNED.start)
    with db.connection() as conn:  # one of app-0's rows ends before it starts
        conn.execute(
            "UPDATE provider_allocations SET data_start = hour + interval '40 minutes',"
            " data_end = hour + interval '10 minutes' WHERE controller = 'app-0' AND hour = %s",
            (HOURS[1],),
        )
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, subscription(0), subscription(1)]) as kube:
        result = run(kube, db)
        assert result.errors == {"team-0/sub-0": "ValueError: UsageRow 'team-0/app-0-pod' ends before it starts"}
        assert result.outcome == "partial"
        assert (result.subscriptions, result.statuses_patched) == (1, 1)
        assert list(charged(db)) == ["team-1/sub-1"]
        assert costs(kube, "team-0", "sub-0") is None


def test_an_offering_ref_without_a_namespace_is_in_the_subscriptions(db: Database) -> None:
    usage(db, 1, ACTIVATED - timedelta(minutes=30), PINNED.start)
    local = {**OFFERING, "metadata": {"name": "gold", "namespace": "team-0"}}  # none in finops
    with sandbox_kube.serve(objects=[PRICEBOOK, local, subscription(0, offeringRef={"name": "gold"})]) as kube:
        result = run(kube, db)
        assert result.errors == {}
        assert (result.subscriptions, result.statuses_patched) == (1, 1)
        assert len(charged(db)["team-0/sub-0"]) == 2 * len(HOURS)


def test_unpriced_rows_are_summed_over_the_subscriptions(db: Database) -> None:
    usage(db, 2, ACTIVATED - timedelta(minutes=30), PINNED.start)
    with db.connection() as conn:  # two of app-0's hours were collected without a PriceBook
        conn.execute(
            "UPDATE provider_allocations SET pricebook_id = NULL WHERE controller = 'app-0' AND hour IN (%s, %s)",
            (HOURS[0], HOURS[1]),
        )
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, subscription(0), subscription(1)]) as kube:
        result = run(kube, db)
    assert result.unpriced_rows == 2
    assert result.counts()["usage_rows_unpriced"] == 2
    assert result.outcome == "partial" and result.errors == {}


def test_a_subscription_not_activated_does_not_stop_the_status_work(db: Database) -> None:
    usage(db, 2, ACTIVATED - timedelta(minutes=30), PINNED.start)
    # team-0/sub-0 (listed first) waits for a target that does not exist: never activated.
    waiting = subscription(
        0,
        activated=None,
        lifecycle={"targetRef": {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "name": "absent"}},
    )
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, waiting, subscription(1)]) as kube:
        result = run(kube, db)
        assert not (kube.store.get(FB, "subscriptions", "team-0", "sub-0") or {}).get("status", {}).get("activatedAt")
        assert (result.subscriptions, result.statuses_patched) == (1, 1)
        assert costs(kube, "team-1", "sub-1") is not None


def test_a_conflicting_status_patch_is_not_counted_and_the_run_completes(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage(db, 2, ACTIVATED - timedelta(minutes=30), PINNED.start)
    patch_status = KubeClient.patch_status

    def refusing(client: KubeClient, group: str, version: str, plural: str, *args: Any) -> Any:
        if plural == "subscriptions" and "costs" in args[-1].get("status", {}):
            raise Conflict("the object has been modified; please apply your changes to the latest version")
        return patch_status(client, group, version, plural, *args)

    monkeypatch.setattr(KubeClient, "patch_status", refusing)
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, subscription(0), subscription(1)]) as kube:
        result = run(kube, db)
        assert (result.subscriptions, result.statuses_patched) == (2, 0)
        assert result.errors == {} and result.outcome == "success"
        assert costs(kube, "team-1", "sub-1") is None
    assert len(charged(db)) == 2


def test_without_a_scheduled_time_the_run_is_pinned_at_the_hour_of_now(db: Database) -> None:
    usage(db, 1, ACTIVATED - timedelta(minutes=30), PINNED.start)
    with (
        sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, subscription(0)]) as kube,
        KubeClient.from_url(kube.url) as client,
    ):
        result = collect_charges(db, client, "c", AGG, None, scheduled=None, now=PINNED.start + timedelta(minutes=17))
    assert result.pinned_hour == PINNED
    assert result.counts()["hour"] == str(PINNED)
    assert max(hour for hour, *_ in charged(db)["team-0/sub-0"]) == PINNED.start


def test_deleted_offerings_and_failed_reconciles_price_from_their_mirrors(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage(db, 2, ACTIVATED - timedelta(minutes=30), PINNED.end)
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, subscription(0), subscription(1)]) as kube:
        first = run(kube, db)
        assert first.errors == {} and first.subscriptions == 2
        with db.connection() as conn:
            (offering,) = conn.execute("SELECT id FROM offering_versions").fetchall()
            subs = {r["name"]: r["id"] for r in conn.execute("SELECT name, id FROM subscription_versions").fetchall()}
        # The next hour the Offering is gone, and reconcile fails for team-1/sub-1.
        kube.store.delete(FB, "Offering", "finops", "gold")

        def failing(kube: Any, sub: dict[str, Any], world: Any, now: datetime, result: Any) -> Any:
            if sub["metadata"]["name"] == "sub-1":
                result.errors["team-1/sub-1"] = "reconcile failed"
                return None
            return decide(kube, sub, world, now, result)

        monkeypatch.setattr("usecases.reconcile.service.decide", failing)
        nxt = Hour(PINNED.end)
        second = run(kube, db, nxt)
    assert [key for key in second.errors if key != "team-1/sub-1"] == [], second.errors
    assert second.subscriptions == 2
    rows = charged(db)
    for n in (0, 1):
        last = [row for row in rows[f"team-{n}/sub-{n}"] if row[0] == nxt.start]
        assert {(source, o, s) for _, source, o, s in last} == {
            ("fee", offering["id"], subs[f"sub-{n}"]),
            ("cpuHour", offering["id"], subs[f"sub-{n}"]),
        }
