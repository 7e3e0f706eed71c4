"""We test that tenant billing stays linear in the number of Subscriptions (``collect_charges``
and ``reconcile`` against the sandbox Kubernetes API over HTTP and PostgreSQL):

- a steady-state hourly run makes the same database statements and the same Kubernetes requests
  with 10 Subscriptions as with 100, but for one ``status.costs`` patch per Subscription;
- one event reconciles the object it names with the same requests whatever the cluster holds;
- ``collect_charges``' status patches, delivered back as ApiServerSource events to the served
  ``reconcile`` function, cause no reconcile work; a spec change does;
- an Offering that appears reconciles the Subscriptions waiting for it (found through the index);
- a backlog priced over several pings, one batch each, ends with the charges and statuses of one
  unbounded run;
- a Subscription's target kind is resolved through discovery (``NetworkPolicy``, not
  ``networkpolicys``), in one event and in the full pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from finops.hours import HOUR, Hour
from infra.kube import KubeClient
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox.localstack import Stack, serve_function
from tests.e2e.billing_world import ACTIVATED, AGG, FB, OFFERING, PINNED, PRICEBOOK, iso, subscription, usage
from usecases.collect_charges.service import ChargesResult, Limits, collect_charges
from usecases.reconcile.service import ObjectRef, reconcile_event


class Counted:
    """Every database statement and Kubernetes request made while it is active, by name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.db: Counter[str] = Counter()
        self.kube: Counter[tuple[str, str]] = Counter()
        for method in ("execute", "fetch_one", "fetch_all"):
            original = getattr(Database, method)

            def counted(db: Database, query: str, /, *args: Any, _original: Any = original, **kw: Any) -> Any:
                self.db[query] += 1
                return _original(db, query, *args, **kw)

            monkeypatch.setattr(Database, method, counted)
        copy_rows = Database.copy_rows

        def copied(db: Database, conn: Any, table: str, *args: Any) -> int:
            self.db[f"COPY {table}"] += 1
            return copy_rows(db, conn, table, *args)

        monkeypatch.setattr(Database, "copy_rows", copied)
        call = KubeClient._call

        def requested(client: KubeClient, method: str, operation: Any, **kw: Any) -> Any:
            what = operation.plural + (f"/{operation.subresource}" if operation.subresource else "")
            self.kube[(method, what)] += 1
            return call(client, method, operation, **kw)

        monkeypatch.setattr(KubeClient, "_call", requested)


def run(db: Database, kube: sandbox_kube.KubeServer, pinned: Hour, limits: Limits | None = None) -> ChargesResult:
    with KubeClient.from_url(kube.url) as client:
        result = collect_charges(
            db, client, "c", AGG, None, scheduled=pinned.start, now=pinned.start, limits=limits or Limits()
        )
    assert not result.errors, result.errors
    return result


def steady_run(db: Database, n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Counted, ChargesResult]:
    """N Subscriptions priced once, then the next hour's run, counted."""
    usage(db, n, ACTIVATED - timedelta(minutes=30), PINNED.start)
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, *(subscription(i) for i in range(n))]) as kube:
        run(db, kube, PINNED)
        nxt = Hour(PINNED.end)
        usage(db, n, nxt.start, nxt.start)
        mirrors = versions(db)
        with monkeypatch.context() as patched:
            counted = Counted(patched)
            result = run(db, kube, nxt)
        assert versions(db) == mirrors  # nothing changed: no mirror row rewritten (no dead rows an hour)
    return counted, result


def versions(db: Database) -> list[tuple[str, str]]:
    """Every mirrored version with its row version (``xmin`` moves when a row is rewritten)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT 's' || id AS id, xmin::text AS v FROM subscription_versions UNION ALL"
            " SELECT 'o' || id, xmin::text FROM offering_versions ORDER BY 1"
        ).fetchall()
    return [(row["id"], row["v"]) for row in rows]


def test_a_steady_run_makes_the_same_statements_and_requests_at_10_and_100(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, small_result = steady_run(db, 10, monkeypatch)
    with db.connection() as conn:
        conn.execute(
            "TRUNCATE subscription_charges, subscription_charge_watermarks, subscription_index,"
            " subscription_versions, offering_versions, provider_allocations, allocation_hours, pricebooks"
            " CASCADE"
        )
    large, large_result = steady_run(db, 100, monkeypatch)
    assert (small_result.subscriptions, large_result.subscriptions) == (10, 100)
    assert (small_result.rows, large_result.rows) == (10 * 2 * 2, 100 * 2 * 2)  # fee + cpuHour, 2 hours each
    status_patches = ("PATCH", "subscriptions/status")
    assert (small.kube.pop(status_patches), large.kube.pop(status_patches)) == (10, 100)  # status.costs only
    assert small.kube == large.kube
    assert small.db == large.db
    assert sum(small.db.values()) <= 20, small.db


def test_one_event_costs_the_same_whatever_the_cluster_holds(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = []
    for n in (10, 100):
        with db.connection() as conn:
            conn.execute("TRUNCATE subscription_index, subscription_versions, offering_versions CASCADE")
        objects = [PRICEBOOK, OFFERING, *(subscription(i, activated=None) for i in range(n))]
        with sandbox_kube.serve(objects=objects) as kube:
            with KubeClient.from_url(kube.url) as client, monkeypatch.context() as patched:
                reconcile_event(client, db, "c", ObjectRef("Offering", "finops", "gold"), None, PINNED.start)
                counted = Counted(patched)
                result = reconcile_event(
                    client, db, "c", ObjectRef("Subscription", "team-3", "sub-3"), None, PINNED.start
                )
            assert result.reconciled == 1 and not result.errors
            stored = kube.store.get(FB, "subscriptions", "team-3", "sub-3")
            assert stored is not None and stored["status"]["ready"] == "True"
            counts.append((counted.kube, counted.db))
    assert counts[0] == counts[1]


@pytest.fixture
def served_reconcile(stack: Stack) -> Iterator[tuple[sandbox_kube.KubeServer, str, Stack]]:
    """A cluster of 20 priced Subscriptions, and ``reconcile`` served over it."""
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, *(subscription(i) for i in range(20))]) as kube:
        world = replace(stack, kube_url=kube.url)
        with serve_function(world, "reconcile") as url:
            yield kube, url, world


def reconcile_runs(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        rows = conn.execute("SELECT counts FROM job_runs WHERE function = 'reconcile' ORDER BY started_at").fetchall()
    return [row["counts"] for row in rows]


def test_our_status_writes_cause_no_reconcile_work(
    db: Database, served_reconcile: tuple[sandbox_kube.KubeServer, str, Stack]
) -> None:
    kube, url, world = served_reconcile
    usage(db, 20, ACTIVATED - timedelta(minutes=30), PINNED.end)
    with KubeClient.from_url(kube.url) as client:
        collect_charges(db, client, world.cluster, AGG, None, scheduled=PINNED.start, now=PINNED.start)
        events = kube.attach_events(url, [(FB, "PriceBook"), (FB, "Offering"), (FB, "Subscription")])
        nxt = Hour(PINNED.end)
        result = collect_charges(db, client, world.cluster, AGG, None, scheduled=nxt.start, now=nxt.start)
    assert result.statuses_patched == 20
    events.wait_idle(60)
    assert len(events.deliveries) == 20 and all(d.ok for d in events.deliveries)
    runs = reconcile_runs(db)
    assert len(runs) == 20
    assert all(r["events_skipped"] == 1 and r["objects_reconciled"] == 0 and r["statuses_written"] == 0 for r in runs)
    # A spec change is work: the Subscription is reconciled, its new generation observed.
    kube.store.patch(FB, "subscriptions", "team-1", "sub-1", {"spec": {"usageSources": []}})
    events.wait_idle(60)
    work, echo = reconcile_runs(db)[20:]  # the change, then the event of reconcile's own status write
    assert (work["events_skipped"], work["objects_reconciled"], work["statuses_written"]) == (0, 1, 1)
    assert (echo["events_skipped"], echo["objects_reconciled"]) == (1, 0)
    sub = kube.store.get(FB, "subscriptions", "team-1", "sub-1")
    assert sub is not None and sub["status"]["observedGeneration"] == sub["metadata"]["generation"]


def test_an_offering_that_appears_activates_the_subscriptions_waiting_for_it(db: Database) -> None:
    with sandbox_kube.serve(objects=[PRICEBOOK, *(subscription(i, activated=None) for i in range(4))]) as kube:
        with KubeClient.from_url(kube.url) as client:
            for i in range(4):
                reconcile_event(client, db, "c", ObjectRef("Subscription", f"team-{i}", f"sub-{i}"), None, PINNED.start)
            waiting = kube.store.get(FB, "subscriptions", "team-2", "sub-2")
            assert waiting is not None and waiting["status"]["conditions"][0]["reason"] == "OfferingNotFound"
            kube.store.create(OFFERING)
            result = reconcile_event(client, db, "c", ObjectRef("Offering", "finops", "gold"), None, PINNED.start)
        assert result.reconciled == 1 + 4 and not result.errors
        for i in range(4):
            sub = kube.store.get(FB, "subscriptions", f"team-{i}", f"sub-{i}")
            assert sub is not None and sub["status"]["activatedAt"] == iso(PINNED.start)


def charge_table(db: Database) -> list[tuple[Any, ...]]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT subscription_uid, hour, source, unit_price_micros, quantity, amount_micros, is_finalized,"
            " unpriced_rows FROM subscription_charges ORDER BY 1, 2, 3"
        ).fetchall()
    return [tuple(row.values()) for row in rows]


def test_a_backlog_priced_over_several_pings_ends_as_one_unbounded_run(db: Database) -> None:
    # 3 Subscriptions activated three days ago; each ping writes one batch (a budget already spent
    # after it) of at most 100 rows, 5 hours of a source at a time.
    activated = PINNED.start - 72 * HOUR + timedelta(minutes=30)
    usage(db, 3, activated - timedelta(minutes=30), PINNED.start)
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, *(subscription(i, activated) for i in range(3))]) as kube:
        pings: list[ChargesResult] = []
        while not pings or pings[-1].remaining:
            pings.append(run(db, kube, PINNED, Limits(chunk_hours=5, batch_rows=100, budget_seconds=1e-9)))
            assert len(pings) < 20
        assert len(pings) > 3 and all(p.batches == 1 for p in pings)
        # A Subscription's status.costs is written once, by the ping that finished pricing it.
        assert sum(p.statuses_patched for p in pings) == 3 and pings[0].statuses_patched == 0
        bounded = charge_table(db)
        with db.connection() as conn:
            conn.execute("TRUNCATE subscription_charges, subscription_charge_watermarks")
        unbounded = run(db, kube, PINNED)
        assert unbounded.batches == 1 and unbounded.remaining == 0
        assert charge_table(db) == bounded
        assert len(bounded) == 3 * 2 * 73
        assert unbounded.statuses_patched == 0  # the same status.costs


def test_target_kinds_are_resolved_through_discovery(db: Database) -> None:
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny-all", "namespace": "team-0"},
        "spec": {},
    }
    target = {
        "lifecycle": {"targetRef": {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "name": "deny-all"}}
    }
    with sandbox_kube.serve(objects=[PRICEBOOK, OFFERING, policy, subscription(0, activated=None, **target)]) as kube:
        with KubeClient.from_url(kube.url) as client:
            reconcile_event(client, db, "c", ObjectRef("Offering", "finops", "gold"), None, PINNED.start)
            reconcile_event(client, db, "c", ObjectRef("Subscription", "team-0", "sub-0"), None, PINNED.start)
            sub = kube.store.get(FB, "subscriptions", "team-0", "sub-0")
            assert sub is not None and sub["status"]["ready"] == "True"
            kube.store.delete("networking.k8s.io/v1", "NetworkPolicy", "team-0", "deny-all")
            run(db, kube, PINNED)  # the full pass lists NetworkPolicies once
        sub = kube.store.get(FB, "subscriptions", "team-0", "sub-0")
        assert sub is not None and sub["status"]["deactivatedAt"] == iso(PINNED.start)
        active = [c for c in sub["status"]["conditions"] if c["type"] == "Active"]
        assert active[0]["reason"] == "TargetNotFound"
