"""The billing world the charges benchmarks run against, and how they count what a run does.

- a sandbox Kubernetes API over real HTTP (``sandbox.kube``, served in this process), seeded in
  process with one active, ready PriceBook, an Offering with a fee and a ``cpuHour`` meter, and N
  activated Subscriptions (as reconciled then) over 100 namespaces, each metering its own Deployment;
- real allocation rows in PostgreSQL for those Deployments' pods, stamped with a PriceBook row,
  and the hour ledger (``allocation_hours``) saying which hours are settled;
- counters: every HTTP request the sandbox serves (and the time it spent serving it, which shares
  this process's GIL), and every named statement ``infra.postgres.Database`` runs.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from werkzeug.serving import WSGIRequestHandler, make_server

from finops.conditions import set_condition
from finops.hours import HOUR
from finops.subscriptions import FINALIZER, PASS
from infra.postgres import Database
from sandbox.kube import KubeServer, KubeStore, make_app

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

AGGREGATION = "namespace,controllerKind,controller,pod,container"
FB = "finops.stakater.com/v1alpha1"
NAMESPACES = 100
CPU_RATE = "0.031611"  # the PriceBook's cpuHour, and the rate the allocation rows were priced with


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def billing_objects(subscriptions: int, activated: datetime, *, first: int = 0) -> list[dict[str, Any]]:
    """The PriceBook, the Offering and ``subscriptions`` activated Subscriptions (sub-{first}...)."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "finops"}},
        {
            "apiVersion": FB,
            "kind": "PriceBook",
            "metadata": {"name": "standard", "namespace": "finops", "labels": {"finops.stakater.com/active": "true"}},
            "spec": {
                "currency": "USD",
                "valuationMode": "currency",
                "rates": {"cpuHour": CPU_RATE, "ramGbHour": "0.004237", "pvGbHour": "0.00005479452"},
            },
        },
        {
            "apiVersion": FB,
            "kind": "Offering",
            "metadata": {"name": "gold", "namespace": "finops"},
            "spec": {
                "pricing": {
                    "subscriptionFee": {"priceMicros": 1_000_000, "period": "1h", "tickAlignment": "HourBoundary"},
                    "resourcePricing": [{"name": "cpuHour", "margins": {"factorMilli": 1200}}],
                }
            },
        },
    ]
    objects += [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"tenant-{n}"}}
        for n in range(min(NAMESPACES, subscriptions))
    ]
    objects += [subscription(n, activated) for n in range(first, first + subscriptions)]
    return objects


def subscription(n: int, activated: datetime) -> dict[str, Any]:
    """Activated, so reconciled before: our finalizer, and the status its activation wrote (the
    first run then writes only what changed since: ``status.costs``)."""
    uid = str(uuid.UUID(int=n + 1))
    conditions = set_condition(None, "Ready", True, PASS.reason, PASS.message, now=activated)
    conditions = set_condition(conditions, "Active", True, "ActivationSucceeded", "billing", now=activated)
    return {
        "apiVersion": FB,
        "kind": "Subscription",
        "metadata": {
            "name": f"sub-{n}",
            "namespace": f"tenant-{n % NAMESPACES}",
            "uid": uid,
            "finalizers": [FINALIZER],
        },
        "spec": {
            "offeringRef": {"name": "gold", "namespace": "finops"},
            "usageSources": [{"resourceType": "Deployment", "name": f"app-{n}"}],
        },
        "status": {
            "activatedAt": iso(activated),
            "compatibilityRoot": uid,
            "ready": True,
            "conditions": conditions,
            "observedGeneration": 1,
        },
    }


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class RequestCounter:
    """WSGI middleware: the requests served, by method and kind of path, and the time spent."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app
        self.counts: Counter[str] = Counter()
        self.seconds = 0.0

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        try:
            return list(self.app(environ, start_response))  # the whole body, so the time is all of it
        finally:
            self.seconds += time.perf_counter() - started
            path = str(environ.get("PATH_INFO", ""))
            parts = [p for p in path.split("/") if p]
            shape = "status" if parts[-1:] == ["status"] else "item" if len(parts) in (5, 7) else "list/discovery"
            self.counts[f"{environ.get('REQUEST_METHOD')} {shape}"] += 1

    def reset(self) -> None:
        self.counts.clear()
        self.seconds = 0.0

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@contextlib.contextmanager
def serve_world(objects: list[dict[str, Any]]) -> Iterator[tuple[KubeServer, RequestCounter]]:
    """``sandbox.kube.serve`` (store seeded in process, no N POSTs) behind a request counter."""
    store = KubeStore()
    store.apply_manifests(objects)
    counter = RequestCounter(make_app(store))
    server = make_server("127.0.0.1", 0, counter, threaded=True, request_handler=_Quiet)
    with KubeServer(store, server).start() as running:
        yield running, counter


class StatementCounter:
    """Counts ``Database.fetch_all/fetch_one/execute/copy_rows`` calls (by query name) while active."""

    METHODS = ("fetch_all", "fetch_one", "execute", "copy_rows")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    @contextlib.contextmanager
    def active(self) -> Iterator[StatementCounter]:
        originals = {name: getattr(Database, name) for name in self.METHODS}

        def wrap(name: str, original: Any) -> Any:
            def counted(db: Database, first: Any, /, *args: Any, **kwargs: Any) -> Any:
                self.counts["copy " + str(args[0]) if name == "copy_rows" else str(first)] += 1
                return original(db, first, *args, **kwargs)

            return counted

        for name, original in originals.items():
            setattr(Database, name, wrap(name, original))
        try:
            yield self
        finally:
            for name, original in originals.items():
                setattr(Database, name, original)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def pricebook_row(db: Database, cluster: str) -> int:
    """The PriceBook version the allocation rows were priced with (what collect_allocations stores)."""
    with db.connection() as conn:
        row = conn.execute(
            "INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode, cpu_hour,"
            " spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour, network_gib)"
            " VALUES (%s, 'finops', 'standard', 'u', 'f', 'USD', 'currency', %s, 0.006655, 0.004237, 0.000892,"
            " 0.00005479452, 0.95, 0.01) RETURNING id",
            (cluster, CPU_RATE),
        ).fetchone()
    assert row is not None
    return int(row["id"])


def add_usage(
    db: Database,
    cluster: str,
    book: int,
    *,
    subscriptions: int,
    pods: int,
    first: datetime,
    last: datetime,
    state: str,
) -> int:
    """Allocation rows for hours [first, last] (``pods`` pods of every Subscription's Deployment,
    each with its app container), and those hours in the ledger in ``state``: the rows written."""
    months, month = [], first.replace(day=1, hour=0)
    while month <= last:
        months.append(month)
        month = (month + timedelta(days=32)).replace(day=1)
    with db.connection() as conn:
        for month in months:
            conn.execute("SELECT finops_ensure_allocation_partition(%s)", (month,))
        cursor = conn.execute(
            "INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind,"
            " controller_kind, controller, pod, container, node, minutes, cpu_core_request_avg, cpu_core_usage_avg,"
            " ram_byte_usage_avg, pricebook_id, currency, is_finalized)"
            " SELECT %(cluster)s, 'tenant-' || (n %% %(spread)s),"
            "   'tenant-' || (n %% %(spread)s) || '/deployment/app-' || n || '/app-' || n || '-' || p || '/app',"
            "   %(agg)s, h, 'workload', 'deployment', 'app-' || n, 'app-' || n || '-' || p, 'app', 'node-1', 60,"
            "   0.5, 0.05 + (n %% 13) * 0.07 + p * 0.011, 268435456, %(book)s, 'USD', %(final)s"
            " FROM generate_series(%(first)s::timestamptz, %(last)s::timestamptz, interval '1 hour') h,"
            "   generate_series(0, %(subs)s - 1) n, generate_series(0, %(pods)s - 1) p",
            {
                "cluster": cluster,
                "spread": NAMESPACES,
                "agg": AGGREGATION,
                "book": book,
                "final": state == "final",
                "first": first,
                "last": last,
                "subs": subscriptions,
                "pods": pods,
            },
        )
        written = cursor.rowcount
        conn.execute(
            "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, pricebook_id, currency)"
            " SELECT %(cluster)s, %(agg)s, h, %(state)s, %(rows)s, %(book)s, 'USD'"
            " FROM generate_series(%(first)s::timestamptz, %(last)s::timestamptz, interval '1 hour') h"
            " ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET state = EXCLUDED.state",
            {
                "cluster": cluster,
                "agg": AGGREGATION,
                "state": state,
                "rows": subscriptions * pods,
                "book": book,
                "first": first,
                "last": last,
            },
        )
    return written


def settle(db: Database, cluster: str, hour: datetime) -> None:
    """The collector's next run: ``hour``'s rows and ledger entry become final."""
    with db.connection() as conn:
        conn.execute(
            "UPDATE provider_allocations SET is_finalized = true WHERE cluster = %s AND hour = %s", (cluster, hour)
        )
        conn.execute("UPDATE allocation_hours SET state = 'final' WHERE cluster = %s AND hour = %s", (cluster, hour))


def hours_between(start: datetime, end: datetime) -> int:
    return (end - start) // HOUR


class Phases:
    """Wall seconds spent in the named functions of ``module`` while active (the rest is the caller's)."""

    def __init__(self, module: Any, names: Iterable[str]) -> None:
        self.module, self.names = module, tuple(names)
        self.seconds: dict[str, float] = dict.fromkeys(self.names, 0.0)

    @contextlib.contextmanager
    def active(self) -> Iterator[Phases]:
        originals = {name: getattr(self.module, name) for name in self.names}

        def wrap(name: str, original: Any) -> Any:
            def timed(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    self.seconds[name] += time.perf_counter() - start

            return timed

        for name, original in originals.items():
            setattr(self.module, name, wrap(name, original))
        try:
            yield self
        finally:
            for name, original in originals.items():
                setattr(self.module, name, original)
