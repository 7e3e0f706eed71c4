"""The metric families ``GET /metrics`` exposes, read from PostgreSQL in a handful of grouped queries.

Every figure comes from the database, never from a replica's memory, so every replica answers the
same and a scrape that reaches any of them (through the Service, load-balanced) never multiplies
a sum. Every family carries ``cluster`` (one database serves many clusters; each cluster's
``cost_api`` exposes its own).

**Money** is exact until the last step: integer micros (and fractional micros for workload idle,
as ``Decimal``) are summed exactly, and only the exposition value is ``micros / 10**6`` as a float
(Prometheus has no other number type; a float holds every amount below 9 x 10^9 currency units
to the micro). The unit is in the name (``_cost_per_hour``: currency units per hour, ``currency``
label; empty when the hour was collected with no PriceBook active).

**The hour.** Per-hour families describe *the last complete hour*
(``finops_cost_hour_timestamp_seconds``, its start): the newest hour of the hour ledger that is
over and stored in full (``final``, or ``open`` but fetched after it ended), with rows. An open
hour fetched while it ran (the pinned hour) holds only the minutes before its run; taking it
would make every figure dip once an hour.

**Ownership** is as stamped on the rows (``OWNER_LABEL``/``COST_CENTER_LABEL``, which the
chargeback policy's ``owner_label``/``cost_center_label`` match): a namespace without the owner
label is ``__unallocated__``, as in the chargeback. The cluster's three piles partition its hour:
``allocated`` (namespaced rows with an owner), ``unallocated`` (rows without an owner) and ``idle``
(OpenCost's ``__idle__``); they add up to the hour's cost. Workload idle (``*_workload_idle_*``)
is the part of a namespace's CPU and RAM cost its pods requested but did not use
(``finops.measurement``); it is *inside* the namespace's cost, unlike the cluster's idle.

**Health** families are timestamps rather than ages (Prometheus computes ``time() - ts``, and a
timestamp never goes stale between scrapes); the shipped rules record the ages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from finops.allocations import UNALLOCATED
from infra.postgres import Database

MICROS = Decimal(1_000_000)
SYNC_STATUSES = ("pending", "measuring")
LEDGER_STATES = ("open", "final", "lost")
CLUSTER_KINDS = ("allocated", "unallocated", "idle")


def money(micros: int | Decimal) -> float:
    """Currency units from exact micros: the only conversion to float, at the last step."""
    if isinstance(micros, int):
        return micros / 1_000_000  # int / int is correctly rounded
    return float(micros / MICROS)


def timestamp(moment: datetime) -> float:
    return moment.timestamp()


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=["cluster", *labels])


@dataclass
class Figures:
    """A cost and its workload idle, summed exactly (micros; idle in fractional micros)."""

    cost: int = 0
    idle: Decimal = field(default_factory=Decimal)

    def add(self, cost: int, idle: Decimal) -> None:
        self.cost += cost
        self.idle += idle


@dataclass
class Hour:
    """One hour's figures per namespace, per owner and per pile of the cluster."""

    namespaces: defaultdict[tuple[str, str, str, str], Figures]  # (namespace, owner, cost centre, currency)
    owners: defaultdict[tuple[str, str, str], Figures]  # (owner, cost centre, currency)
    cluster: dict[tuple[str, str], int]  # (kind, currency) -> micros


def sum_hour(rows: list[dict[str, Any]]) -> Hour:
    """Namespaces, owners and the cluster's piles from ``metrics_namespace_costs`` rows."""
    hour = Hour(defaultdict(Figures), defaultdict(Figures), {})
    for currency in {r["currency"] for r in rows}:
        for kind in CLUSTER_KINDS:
            hour.cluster[(kind, currency)] = 0
    for r in rows:
        cost, idle, currency = int(r["cost_micros"]), Decimal(r["workload_idle_micros"]), r["currency"]
        if r["idle"]:
            hour.cluster[("idle", currency)] += cost
            continue
        owner, cost_center = r["owner"] or UNALLOCATED, r["cost_center"] or UNALLOCATED
        hour.cluster[("allocated" if r["owner"] else "unallocated", currency)] += cost
        if r["namespace"]:  # namespace-less entries count in the cluster and their owner only
            hour.namespaces[(r["namespace"], owner, cost_center, currency)].add(cost, idle)
        hour.owners[(owner, cost_center, currency)].add(cost, idle)
    return hour


def last_complete_hour(db: Database, cluster: str, aggregation: str) -> datetime | None:
    """The start of the hour the per-hour families describe (see the module's docstring)."""
    found = db.fetch_one("metrics_cost_hour", cluster=cluster, aggregation=aggregation)
    return found["hour"] if found else None


def cost_families(db: Database, cluster: str, aggregation: str, start: datetime | None) -> Iterator[Metric]:
    """The hour's cost per namespace, owner and pile, and the month so far per owner."""
    at = _gauge(
        "finops_cost_hour_timestamp_seconds",
        "Start of the last complete hour, the hour every *_per_hour family describes (absent: none yet)",
        [],
    )
    namespace_cost = _gauge(
        "finops_namespace_cost_per_hour",
        "Cost of the namespace in the last complete hour (currency units per hour)",
        ["namespace", "owner", "cost_center", "currency"],
    )
    namespace_idle = _gauge(
        "finops_namespace_workload_idle_cost_per_hour",
        "Part of the namespace's CPU and RAM cost its pods requested but did not use, last complete hour",
        ["namespace", "owner", "cost_center", "currency"],
    )
    owner_cost = _gauge(
        "finops_owner_cost_per_hour",
        "Cost of the owner's namespaces (the owner label; __unallocated__ without it), last complete hour",
        ["owner", "cost_center", "currency"],
    )
    owner_idle = _gauge(
        "finops_owner_workload_idle_cost_per_hour",
        "Workload idle of the owner's namespaces, last complete hour (currency units per hour)",
        ["owner", "cost_center", "currency"],
    )
    piles = _gauge(
        "finops_cluster_cost_per_hour",
        "The cluster's last complete hour by pile: allocated (owned), unallocated (no owner label), idle",
        ["kind", "currency"],
    )
    if start is not None:
        at.add_metric([cluster], timestamp(start))
        hour = sum_hour(db.fetch_all("metrics_namespace_costs", cluster=cluster, aggregation=aggregation, hour=start))
        for (namespace, owner, cost_center, currency), figures in sorted(hour.namespaces.items()):
            namespace_cost.add_metric([cluster, namespace, owner, cost_center, currency], money(figures.cost))
            namespace_idle.add_metric([cluster, namespace, owner, cost_center, currency], money(figures.idle))
        for (owner, cost_center, currency), figures in sorted(hour.owners.items()):
            owner_cost.add_metric([cluster, owner, cost_center, currency], money(figures.cost))
            owner_idle.add_metric([cluster, owner, cost_center, currency], money(figures.idle))
        for (kind, currency), cost in sorted(hour.cluster.items()):
            piles.add_metric([cluster, kind, currency], money(cost))
    yield from (at, namespace_cost, namespace_idle, owner_cost, owner_idle, piles)

    month = _gauge(
        "finops_owner_cost_month_to_date",
        "Cost of the owner's namespaces in the current UTC month so far, idle excluded (currency units)",
        ["owner", "cost_center", "currency"],
    )
    for r in db.fetch_all("metrics_owner_month_to_date", cluster=cluster, aggregation=aggregation):
        month.add_metric(
            [cluster, r["owner"] or UNALLOCATED, r["cost_center"] or UNALLOCATED, r["currency"]],
            money(int(r["cost_micros"])),
        )
    yield month


def health_families(db: Database, cluster: str, aggregation: str) -> Iterator[Metric]:
    """Runs, the hour ledger, sync events waiting for a measurement, Subscriptions priced."""
    runs = _gauge(
        "finops_job_runs",
        "Runs kept in job_runs (JOB_RUNS_RETENTION_DAYS) by function and outcome; not a counter: retention lowers it",
        ["function", "outcome"],
    )
    last_run = _gauge(
        "finops_job_run_last_finished_timestamp_seconds",
        "When the newest run of the function with this outcome finished",
        ["function", "outcome"],
    )
    for r in db.fetch_all("metrics_job_runs", cluster=cluster):
        runs.add_metric([cluster, r["function"], r["outcome"]], int(r["runs"]))
        last_run.add_metric([cluster, r["function"], r["outcome"]], timestamp(r["last_finished"]))
    yield from (runs, last_run)

    ledger = {r["state"]: r for r in db.fetch_all("metrics_ledger", cluster=cluster, aggregation=aggregation)}
    hours = _gauge("finops_ledger_hours", "Hours of the hour ledger by state (lost: given up)", ["state"])
    for state in LEDGER_STATES:
        hours.add_metric([cluster, state], int(ledger[state]["hours"]) if state in ledger else 0)
    newest = _gauge(
        "finops_newest_final_hour_end_timestamp_seconds",
        "End of the newest final hour of the hour ledger (absent: no final hour yet)",
        [],
    )
    if "final" in ledger:
        newest.add_metric([cluster], timestamp(ledger["final"]["newest"]) + 3600)
    yield from (hours, newest)

    events = {r["status"]: r for r in db.fetch_all("metrics_sync_events", cluster=cluster)}
    waiting = _gauge(
        "finops_sync_events_open", "Accepted Argo CD syncs not measured yet (pending, measuring)", ["status"]
    )
    for status in SYNC_STATUSES:
        waiting.add_metric([cluster, status], int(events[status]["events"]) if status in events else 0)
    oldest = _gauge(
        "finops_sync_event_oldest_open_timestamp_seconds",
        "When the oldest sync event still waiting for its measurement arrived (absent: none waiting)",
        [],
    )
    if events:
        oldest.add_metric([cluster], min(timestamp(r["oldest"]) for r in events.values()))
    yield from (waiting, oldest)

    billing = db.fetch_one("metrics_subscriptions", cluster=cluster) or {}
    active = _gauge("finops_subscriptions_active", "Activated Subscriptions not deactivated", [])
    active.add_metric([cluster], int(billing.get("active") or 0))
    priced = _gauge("finops_subscriptions_priced", "Activated Subscriptions with final charges", [])
    priced.add_metric([cluster], int(billing.get("priced") or 0))
    through = _gauge(
        "finops_subscriptions_priced_through_oldest_timestamp_seconds",
        "End of the last final charge hour of the Subscription priced least far (all its sources)",
        [],
    )
    if billing.get("oldest_through") is not None:
        through.add_metric([cluster], timestamp(billing["oldest_through"]) + 3600)
    yield from (active, priced, through)
