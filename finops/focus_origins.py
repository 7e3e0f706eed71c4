"""The origin charges FOCUS 1.3's split rows share out (``finops.focus_split``), before they are
split: on the estimate, each cluster-day as the daily rollups give it (``estimate_origins``); on a
bill basis, the reconciled clusters' bill charges (``bill_origins``: node-days, the day's disks and
load balancers, days on estimate, the cluster's other bill lines). Each is a ``ClusterOrigin``:
its FOCUS dimensions and its exact amount per namespace, idle and shared namespace (``Share``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal
from fractions import Fraction

from finops.focus_rows import Extras
from finops.periods import day_span
from finops.reconciliation import ClusterReconciliation, row_order


@dataclass(frozen=True)
class DailyCost:
    """One day's cost of a namespace and owner in a cluster (``is_idle``: the cluster's idle that
    day, namespace empty), as the daily rollups give it."""

    day: date
    cluster: str
    namespace: str
    owner: str | None
    cost_center: str | None
    micros: int
    core_hours: Decimal = Decimal(0)
    is_idle: bool = False
    gpu_hours: Decimal | None = None  # the GPU-hours billed (None: none); on an idle day, its GPU model's
    grams: int | None = None  # grams CO2e (None: the day has no emissions stored)
    gpu_model: str | None = None  # on an idle day: the GPU model whose idle this is (None: the rest of the idle)


@dataclass(frozen=True)
class DailyExtra:
    """What the hourly rows add to a ``DailyCost`` (the rollups hold neither): its GPU-hours and
    grams CO2e; on idle, per GPU model (``gpu_model``) the model's idle cost and GPU-hours."""

    day: date
    cluster: str
    namespace: str
    owner: str | None
    cost_center: str | None
    is_idle: bool
    gpu_model: str | None
    gpu_hours: Decimal | None
    idle_micros: int
    grams: int | None


def with_extras(days: Iterable[DailyCost], extras: Iterable[DailyExtra]) -> list[DailyCost]:
    """``days`` with their GPU-hours and grams, and each day's idle split: a ``DailyCost`` per GPU
    model's idle (its cost, GPU-hours, ``gpu_model``), the rest of the idle keeping its core-hours
    and the nodes' idle grams. The money is unchanged: the idle parts add up to the day's idle.
    An extra with no day (grams of a row whose cost is zero) is a day of zero cost: nothing dropped."""
    found = {(d.day, d.cluster, d.namespace, d.owner, d.cost_center, d.is_idle): d for d in days}
    models: list[DailyCost] = []
    for e in extras:
        key = (e.day, e.cluster, e.namespace, e.owner, e.cost_center, e.is_idle)
        if e.gpu_model is not None:  # a GPU model's idle: split from the day's idle
            idle = found.get(key) or DailyCost(e.day, e.cluster, e.namespace, None, None, 0, is_idle=True)
            found[key] = replace(idle, micros=idle.micros - e.idle_micros)
            models.append(
                DailyCost(
                    e.day, e.cluster, "", None, None, e.idle_micros, Decimal(0), True, e.gpu_hours, None, e.gpu_model
                )
            )
            continue
        day = found.get(key) or DailyCost(e.day, e.cluster, e.namespace, e.owner, e.cost_center, 0, is_idle=e.is_idle)
        found[key] = replace(day, gpu_hours=e.gpu_hours or None, grams=e.grams)
    return [*found.values(), *models]


@dataclass
class ClusterOrigin:
    """A charge of a cluster before it is split: its FOCUS dimensions, and its exact amount by
    namespace (``Share``, the idle capacity and the shared namespaces among them), the part that
    joins the shared pool (a tax line, a discount finding no cost) and the part of a line matching
    no resource (``unsplit``)."""

    cluster: str
    start: datetime
    end: datetime
    resource: str
    resource_name: str
    resource_type: str
    description: str
    category: tuple[str, str]
    method: str = "max-request-usage"  # how the namespaces' shares were measured
    shares: list[Share] = field(default_factory=list)
    pooled: Fraction = Fraction(0)  # the part joining the cluster's shared pool
    commitments: dict[str, Fraction] = field(default_factory=dict)
    unsplit: Fraction = Fraction(0)  # a line matching no resource: one row on __unreconciled__


@dataclass(frozen=True)
class Share:
    namespace: str
    owner: str | None
    cost_center: str | None
    is_idle: bool
    amount: Fraction
    core_hours: Decimal | None = None
    extras: Extras | None = None  # GPU-hours, grams and GPU model (the estimate's shares only)


def estimate_origins(days: list[DailyCost]) -> list[ClusterOrigin]:
    """On the estimate: one origin per cluster and day, its namespaces as the rollups give them."""
    by_day: dict[tuple[str, date], list[DailyCost]] = defaultdict(list)
    for d in days:
        by_day[(d.cluster, d.day)].append(d)
    origins = []
    for (cluster, day), entries in sorted(by_day.items()):
        start, end = day_span(day)
        origin = ClusterOrigin(
            cluster,
            start,
            end,
            cluster,
            cluster,
            "Kubernetes Cluster",
            f"Cluster {cluster} for the day: nodes, volumes and load balancers",
            ("Usage", "Usage-Based"),
        )
        for d in entries:
            extras = Extras(d.gpu_hours, d.grams, d.gpu_model)
            share = Share(d.namespace, d.owner, d.cost_center, d.is_idle, Fraction(d.micros), d.core_hours, extras)
            origin.shares.append(share)
        origins.append(origin)
    return origins


_RESOURCE_DAYS = {  # a billed day of a cluster's disks or load balancers: id suffix, name, type, method
    "disk": ("__volumes__", "persistent volumes", "Kubernetes Persistent Volumes", "volume-cost"),
    "load_balancer": ("__load_balancers__", "load balancers", "Kubernetes Load Balancers", "load-balancer-cost"),
}
_BILL_CATEGORIES = {  # a bill line's category: FOCUS ChargeCategory, ChargeFrequency
    "usage": ("Usage", "Usage-Based"),
    "discount": ("Credit", "Usage-Based"),
    "purchase": ("Purchase", "Recurring"),
    "support": ("Purchase", "Recurring"),
    "tax": ("Tax", "Recurring"),
}


def bill_origins(reconciliations: Iterable[ClusterReconciliation]) -> list[ClusterOrigin]:
    """On a bill basis: the reconciled clusters' charges (``finops.reconciliation.Origin``): each
    node's billed day, the day's disks and load balancers, each day left on estimate, and the
    cluster's other bill lines (discounts spread over their period's cost, shared lines, lines
    matching no resource)."""
    origins = []
    for done in reconciliations:
        cluster = done.cluster
        for charge in done.origins:
            keys = sorted(charge.shares, key=row_order)
            shares = [Share(key[0], key[1], key[2], key[3] == "idle", charge.shares[key]) for key in keys]
            category, method = ("Usage", "Usage-Based"), "max-request-usage"
            if charge.kind == "node":
                resource, name, kind = charge.provider_id or f"{cluster}/{charge.name}", charge.name, "Kubernetes Node"
                description = f"Node {charge.name} of cluster {cluster} for the day, as billed"
            elif charge.kind == "estimate":
                resource, name, kind = cluster, cluster, "Kubernetes Cluster"
                description = f"Cluster {cluster} for a day the bill does not cover yet: estimated"
            elif charge.kind in _RESOURCE_DAYS:
                suffix, name, kind, method = _RESOURCE_DAYS[charge.kind]
                resource, description = f"{cluster}/{suffix}", f"The {name} of cluster {cluster} for the day, as billed"
            else:  # a bill line: a tax or credit names no resource (null)
                resource = charge.provider_id
                name, kind = (resource, "Cloud Resource") if resource else ("", "")
                description = f"Bill line {charge.name} of cluster {cluster} ({charge.category})"
                category = _BILL_CATEGORIES[charge.category]
                method = "discount-proportional" if charge.category == "discount" else method
            origin = ClusterOrigin(
                cluster, charge.start, charge.end, resource, name, kind, description, category, method, shares
            )
            origin.pooled, origin.unsplit, origin.commitments = charge.pooled, charge.unsplit, dict(charge.commitments)
            origins.append(origin)
    return origins
