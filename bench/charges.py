"""Tenant billing, honestly: a whole ``collect_charges`` run and one event's reconcile, each against
a floor measured in the same run (the backlog is ``bench.charges_backlog``).

The world (``bench.charges_world``): a sandbox Kubernetes API over real HTTP holding one active,
ready PriceBook, an Offering with a fee and a ``cpuHour`` meter, and N Subscriptions over 100
namespaces, each metering its own Deployment, activated hours before the pinned hour (with the
finalizer and status their activation wrote); PostgreSQL
holds the Deployments' allocation rows (2 pods each, stamped with a PriceBook row) and the hour
ledger (earlier hours final, the pinned hour open, as ``collect_allocations`` leaves them).

1. Steady state, N = 1,000 and 5,000. One un-timed run reaches it (``status.costs``, the mirrors,
   the watermarks); the collector then settles that hour and stores the next one, and:
   - ours: the next hourly ``collect_charges`` (reconcile pass, pricing, ``status.costs``,
     finalizers), in process, pinned one hour later;
   - floor: one ``INSERT ... SELECT`` of as many charge rows into ``subscription_charges``, plus as
     many bare ``KubeClient.patch_status`` calls (a trivial status, same objects, same server) as
     the run patched statuses.
   With the run's statements (``Database`` calls), Kubernetes requests (served by the sandbox, in
   this process: its serving time is shown) and where the run's time went.
2. One event's ``reconcile_event`` at N = 5,000 against N = 1: a Subscription whose spec changed
   (its generation moves), and a status-only change (skipped after one read). Median of several,
   interleaved; the sandbox's own serving time is shown (its list sorts every stored object).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import charges_backlog
from bench.charges_world import (
    AGGREGATION,
    FB,
    Phases,
    RequestCounter,
    StatementCounter,
    add_usage,
    billing_objects,
    pricebook_row,
    serve_world,
    settle,
)
from bench.common import database
from finops.hours import HOUR
from infra.kube.client import KubeClient
from infra.postgres import Database
from sandbox.kube import KubeServer
from usecases.collect_charges import service
from usecases.collect_charges.service import ChargesResult, collect_charges
from usecases.reconcile.objects import GROUP, VERSION
from usecases.reconcile.service import ObjectRef, reconcile_event

SIZES = (1_000, 5_000)
PODS = 2  # per Deployment
PINNED = datetime(2026, 10, 14, 12, tzinfo=UTC)  # the un-timed run's hour; the timed run is the next
ACTIVATED = PINNED - timedelta(hours=5, minutes=30)
EVENTS = 15  # per kind of event and size
TARGET = 3.0


@dataclass
class World:
    db: Database
    cluster: str
    server: KubeServer
    requests: RequestCounter
    kube: KubeClient
    book: int
    subscriptions: int


@contextmanager
def world(db: Database, cluster: str, subscriptions: int) -> Iterator[World]:
    """The world after one un-timed run pinned at ``PINNED`` (steady state)."""
    book = pricebook_row(db, cluster)
    if subscriptions > 1:
        add_usage(
            db,
            cluster,
            book,
            subscriptions=subscriptions,
            pods=PODS,
            first=ACTIVATED.replace(minute=0),
            last=PINNED - HOUR,
            state="final",
        )
        add_usage(db, cluster, book, subscriptions=subscriptions, pods=PODS, first=PINNED, last=PINNED, state="open")
        with db.connection() as conn:  # what autovacuum would have done by the next hour
            conn.execute("ANALYZE provider_allocations")
            conn.execute("ANALYZE allocation_hours")
    with serve_world(billing_objects(subscriptions, ACTIVATED)) as (server, requests):
        kube = KubeClient.from_url(server.url)
        try:
            first = collect_charges(
                db, kube, cluster, AGGREGATION, None, scheduled=PINNED, now=PINNED + timedelta(minutes=5)
            )
            _check(first, subscriptions)
            yield World(db, cluster, server, requests, kube, book, subscriptions)
        finally:
            kube.close()


def _check(result: ChargesResult, subscriptions: int) -> None:
    counts = result.counts()
    if counts["errors"] or counts["remaining"] or counts["subscriptions_priced"] != subscriptions:
        raise RuntimeError(f"collect_charges did not price every Subscription: {counts} {result.errors}")


@dataclass
class Steady:
    subscriptions: int
    ours: float
    floor_insert: float
    floor_patches: float
    ours_cpu: float  # this process's CPU seconds (the sandbox server's included), not PostgreSQL's
    floor_cpu: float
    counts: dict[str, Any]
    statements: int
    statement_kinds: int
    requests: dict[str, int]
    server_seconds: float
    phases: dict[str, float]

    @property
    def floor(self) -> float:
        return self.floor_insert + self.floor_patches


def steady_state(w: World) -> Steady:
    """The next hourly run (timed), then its floor."""
    hour = PINNED + HOUR
    settle(w.db, w.cluster, PINNED)
    add_usage(w.db, w.cluster, w.book, subscriptions=w.subscriptions, pods=PODS, first=hour, last=hour, state="open")
    w.requests.reset()
    statements = StatementCounter()
    phases = Phases(service, ("reconcile_all", "price_plans", "read_totals", "write_costs", "release_finalizer"))
    with statements.active(), phases.active():
        start, cpu = time.perf_counter(), time.process_time()
        result = collect_charges(
            w.db, w.kube, w.cluster, AGGREGATION, None, scheduled=hour, now=hour + timedelta(minutes=5)
        )
        ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
    _check(result, w.subscriptions)
    counts = result.counts()
    requests, server_seconds = dict(w.requests.counts), w.requests.seconds

    start, cpu = time.perf_counter(), time.process_time()
    with w.db.connection() as conn:
        conn.execute(
            "INSERT INTO subscription_charges SELECT %(floor)s, 'u' || s, %(hour)s, 'fee', 'ns', 'n',"
            " (SELECT max(id) FROM offering_versions WHERE cluster = %(cluster)s),"
            " (SELECT max(id) FROM subscription_versions WHERE cluster = %(cluster)s),"
            " 1000000, 1, 1000000, 'USD', true, now(), 0 FROM generate_series(1, %(rows)s) s",
            {"floor": f"{w.cluster}-floor", "cluster": w.cluster, "hour": hour, "rows": counts["rows_written"]},
        )
    floor_insert = time.perf_counter() - start
    subs = w.server.store.list(FB, "subscriptions")[: counts["statuses_patched"]]
    start = time.perf_counter()
    for i, sub in enumerate(subs):
        w.kube.patch_status(
            GROUP,
            VERSION,
            "subscriptions",
            sub["metadata"]["namespace"],
            sub["metadata"]["name"],
            {"status": {"benchFloor": i}},
        )
    floor_patches, floor_cpu = time.perf_counter() - start, time.process_time() - cpu
    return Steady(
        w.subscriptions,
        ours,
        floor_insert,
        floor_patches,
        ours_cpu,
        floor_cpu,
        counts,
        statements.total,
        len(statements.counts),
        requests,
        server_seconds,
        phases.seconds,
    )


@dataclass
class Events:
    """One world's events: seconds, sandbox server seconds, requests and statements, by kind."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: {"spec": [], "status": []})
    server: dict[str, list[float]] = field(default_factory=lambda: {"spec": [], "status": []})
    requests: dict[str, int] = field(default_factory=dict)
    statements: dict[str, int] = field(default_factory=dict)

    def median(self, kind: str) -> float:
        return statistics.median(self.seconds[kind])

    def server_median(self, kind: str) -> float:
        return statistics.median(self.server[kind])


EXPECT: dict[str, Callable[[dict[str, Any]], bool]] = {
    "spec": lambda c: c["statuses_written"] == 1 and c["events_skipped"] == 0,
    "status": lambda c: c["events_skipped"] == 1 and c["statuses_written"] == 0,
}


def event(w: World, kind: str, i: int, found: Events) -> None:
    """Change sub-0 (its spec, or only its status), then time ``reconcile_event`` for it."""
    namespace, name = "tenant-0", "sub-0"
    if kind == "spec":  # its generation moves
        sources = [{"resourceType": "Deployment", "name": "app-0"}, {"resourceType": "Deployment", "name": f"x-{i}"}]
        w.server.store.patch(FB, "subscriptions", namespace, name, {"spec": {"usageSources": sources}})
    else:
        w.server.store.patch(
            FB, "subscriptions", namespace, name, {"status": {"benchNote": f"n-{i}"}}, subresource="status"
        )
    w.requests.reset()
    statements = StatementCounter()
    with statements.active():
        start = time.perf_counter()
        result = reconcile_event(
            w.kube,
            w.db,
            w.cluster,
            ObjectRef("Subscription", namespace, name),
            None,
            PINNED + 2 * HOUR + timedelta(minutes=1),
        )
        found.seconds[kind].append(time.perf_counter() - start)
    if result.errors or not EXPECT[kind](result.counts()):
        raise RuntimeError(f"reconcile_event ({kind}) did not do what it should: {result.counts()}")
    found.server[kind].append(w.requests.seconds)
    found.requests[kind], found.statements[kind] = w.requests.total, statements.total


def events(large: World, single: World) -> tuple[Events, Events]:
    """The same events in both worlds, interleaved (so a busy machine slows both alike)."""
    found = Events(), Events()
    for i in range(EVENTS):
        for kind in ("spec", "status"):
            for w, into in zip((large, single), found, strict=True):
                event(w, kind, i, into)
    return found


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms"


def main() -> None:
    with database() as db:
        steady: list[Steady] = []
        for n in SIZES:
            with world(db, f"steady-{n}", n) as w:
                steady.append(steady_state(w))
                if n == SIZES[-1]:
                    with world(db, "events-1", 1) as one:
                        large, single = events(w, one)

    print("charges: steady-state collect_charges (reconcile + pricing + status.costs + finalizers), the next hour")
    print("  over a sandbox Kubernetes API (HTTP, in process) and PostgreSQL; fee + cpuHour, 2 pods per Deployment")
    for s in steady:
        c = s.counts
        print(
            f"  N={s.subscriptions:,}: {c['rows_written']:,} rows, {c['statuses_patched']:,} status patches,"
            f" {c['objects_reconciled']:,} objects reconciled,"
            f" {c['statuses_written']} reconcile status writes"
        )
        print(f"    ours  collect_charges                                  {_ms(s.ours)}")
        print(f"    floor INSERT ... SELECT of as many rows                {_ms(s.floor_insert)}")
        print(f"          + as many bare patch_status calls                {_ms(s.floor_patches)}")
        print(
            f"    ratio ours/floor: {s.ours / s.floor:.2f}  (target <= {TARGET:.1f} at N={SIZES[-1]:,});"
            f" this process's CPU: {s.ours_cpu:.1f} s vs {s.floor_cpu:.1f} s,"
            f" ratio {s.ours_cpu / s.floor_cpu:.2f}"
        )
        print(
            f"    DB statements: {s.statements} ({s.statement_kinds} kinds); Kubernetes requests: "
            f"{sum(s.requests.values()):,} {dict(sorted(s.requests.items()))}; "
            f"sandbox server time {s.server_seconds * 1000:.0f} ms (shares this process)"
        )
        rest = s.ours - sum(s.phases.values())
        print(
            "    where: "
            + ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in s.phases.items())
            + f", the rest (planning) {rest * 1000:.0f} ms"
        )
    print(
        f"  one event's reconcile_event for one Subscription, median of {EVENTS} (interleaved):"
        f" N={SIZES[-1]:,} vs N=1 (the sandbox's list of Offerings sorts all it stores)"
    )
    for kind, label in (("spec", "spec changed"), ("status", "status-only (skipped)")):
        print(
            f"    {label:22} {_ms(large.median(kind))} vs {_ms(single.median(kind))}  ratio"
            f" {large.median(kind) / single.median(kind):.2f}  ({large.requests[kind]} vs {single.requests[kind]}"
            f" requests, {large.statements[kind]} vs {single.statements[kind]} statements)"
        )
        ours = [large.median(kind) - large.server_median(kind), single.median(kind) - single.server_median(kind)]
        print(
            f"      of which the sandbox server: {_ms(large.server_median(kind)).strip()} vs"
            f" {_ms(single.server_median(kind)).strip()}; without it"
            f" {_ms(ours[0]).strip()} vs {_ms(ours[1]).strip()}, ratio {ours[0] / ours[1]:.2f}"
        )
    charges_backlog.main()


if __name__ == "__main__":
    main()
