"""Reconciliation: a cluster's estimated cost replaced by what the cloud bill charged, exactly.

OpenCost prices each pod at list prices (or the PriceBook's); the invoice differs by discounts,
commitments, credits, support and tax. For the days an imported bill covers, a report on the
``billed`` or ``amortised`` basis (``finops.reconcile_policy``) stands on the bill instead:

1. **Lines to resources** (``finops.bill_lines``). A bill line of category ``usage`` whose resource id matches the
   ``providerID`` of one of the cluster's nodes, disks or load balancers (OpenCost's assets,
   stored per hour) is that resource's. Ids match when equal after dropping a scheme
   (``aws://``), leading slashes and case, or when one ends with ``/`` + the other
   (``aws:///eu-west-1a/i-0abc`` is billed as ``i-0abc``). Other lines are the cluster's when
   their tags name it (``Reconciliation.cluster_of_tags``). Lines of no cluster stay direct costs.
2. **The unit is the resource's UTC day.** A line is prorated exactly by time over the days its
   charge period covers (a line at a moment counts on its day). A day is *billed* for a cluster
   when at least one usage line matched to its resources covers it; other days stay on estimate
   (bills arrive days late) and the report says which.
3. **Nodes.** For node ``n`` on a billed day, the estimate ``E`` is the node's asset cost (CPU,
   RAM and GPU) and the bill ``B`` the sum of its matched lines. Each allocation's compute cost on
   ``n`` (its total less storage, load balancer, network, shared and external cost) becomes
   ``compute x B / E``; the node's idle (``E`` less its allocations) becomes ``idle x B / E``.
   So the node's allocations and idle add up to ``B`` exactly; CPU, RAM and GPU move together
   because the node's own split is the estimate's. A node without an asset that day has no
   known idle: ``E`` is its allocations' compute. ``E = 0`` puts ``B`` on idle. A node with cost
   but no bill line on a billed day is reconciled to zero and listed as ``missing`` in the
   variance (the bill is what was paid; a node billed elsewhere shows up here).
4. **Disks and load balancers**, whose cost the allocations do not keep per volume: the day's
   storage cost of every allocation (and unmounted volume) is scaled by the cluster's matched disk
   lines over the estimated storage cost; load balancers likewise. Without estimated cost, the
   billed amount goes to idle.
5. **What has no bill counterpart** in an allocation (network, shared and external cost) is zero
   on a billed day: egress and the like are billed as lines of their own, which reach the report
   through step 6.
6. **The cluster's other lines.** Usage lines of the cluster that match no resource go to the
   visible ``__unreconciled__`` line (nothing is dropped). Discount and credit lines (savings-plan
   negation, credits, refunds) are spread by the policy: ``proportional`` over the cluster's
   positive reconciled cost on the days of their charge period, or into the shared pool.
   Purchase, support and tax lines of the cluster are shared cost (the policy's split).
7. **Exact.** Everything above is a ``Fraction``; each cluster is rounded once, to micros, by
   largest remainder over its lines (``finops.rounding.largest_remainder``) so that they add up to
   the cluster's exact total rounded half-even. With a bill covering the whole period, the cluster's
   total is the sum of its bill lines, to the micro.

``reconcile`` is pure: the report (``usecases.reports.reconciled``) reads the rows, assets and
bill lines and hands the result to the chargeback. The result also keeps, exactly, what each row's
cost came from (``Origin``: a node's billed day, a day of disks, a bill line, a day on estimate)
and which commitment covered it, for the FOCUS 1.3 export's split rows (``finops.focus_split``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction

from finops.periods import day_span
from finops.reconcile_policy import Basis, DiscountRule, Reconciliation
from finops.rounding import largest_remainder

UNRECONCILED = "__unreconciled__"
_DAY = timedelta(days=1)
_MICROSECOND = timedelta(microseconds=1)

RowKey = tuple[str, str | None, str | None, str]  # (namespace, owner, cost centre, entry kind)


@dataclass(frozen=True)
class EstimateRow:
    """One cluster's estimated cost of a day, per node and namespace (a SQL group); micros."""

    day: date
    node: str  # '' when the allocation has no node (idle, unmounted volumes)
    namespace: str
    owner: str | None
    cost_center: str | None
    entry_kind: str  # workload | idle | unmounted
    total_micros: int
    pv_micros: int
    lb_micros: int
    other_micros: int  # network, shared and external cost: no bill counterpart

    @property
    def key(self) -> RowKey:
        return (self.namespace, self.owner, self.cost_center, self.entry_kind)

    @property
    def compute_micros(self) -> int:
        return self.total_micros - self.pv_micros - self.lb_micros - self.other_micros


@dataclass(frozen=True)
class Asset:
    """What OpenCost estimated a node, disk or load balancer cost on a day (nodes: CPU + RAM + GPU)."""

    day: date
    kind: str  # node | disk | load_balancer
    name: str
    provider_id: str
    estimate_micros: int


@dataclass(frozen=True)
class BillCharge:
    """A stored bill line (``cloud_costs``)."""

    ref: str  # where it came from: source and row
    start: datetime
    end: datetime
    billed_micros: int
    effective_micros: int | None
    category: str  # usage | discount | purchase | tax | support
    resource_id: str | None = None
    account: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    commitment: str | None = None  # the commitment discount the line belongs to

    def amount(self, basis: Basis) -> int:
        if basis is Basis.AMORTISED and self.effective_micros is not None:
            return self.effective_micros
        return self.billed_micros

    def per_day(self, amount: int, days: Iterable[date]) -> dict[date, Fraction]:
        """``amount`` prorated exactly over ``days`` (only the days given; a moment counts whole)."""
        wanted = set(days)
        if self.start == self.end:
            day = self.start.astimezone(UTC).date()
            return {day: Fraction(amount)} if day in wanted else {}
        whole = (self.end - self.start) // _MICROSECOND
        shares: dict[date, Fraction] = {}
        for day in wanted:
            begin = datetime.combine(day, time(), UTC)
            inside = min(self.end, begin + _DAY) - max(self.start, begin)
            if inside > timedelta(0):
                shares[day] = Fraction(amount * (inside // _MICROSECOND), whole)
        return shares


@dataclass(frozen=True)
class ResourceVariance:
    """A node, disk or load balancer over the billed days: its estimate against its bill."""

    kind: str
    name: str
    provider_id: str
    estimate_micros: int
    billed_micros: Fraction
    on_bill: bool  # whether any usage line of the billed days is this resource's

    @property
    def status(self) -> str:
        """``missing``: cost measured, no line billed for it (paid elsewhere, or a wrong id). A
        line at zero (usage a commitment covers, in FOCUS) is on the bill: ``matched``."""
        return "matched" if self.on_bill or self.estimate_micros == 0 else "missing"


@dataclass
class Origin:
    """A charge a reconciled cluster's cost comes from, and where it went, exactly: its shares by
    row, the part joining the cluster's shared pool (``pooled``) and the part on
    ``__unreconciled__`` (``unsplit``). Kinds: a node's billed day (``node``), the day's billed
    disks or load balancers (``disk``, ``load_balancer``), a day on estimate (``estimate``), and a
    bill line of the cluster that bills none of its resources (``line``: a discount spread over
    its period's cost, its rest pooled; a tax, support or purchase pooled; usage unsplit).
    ``commitments`` is the part each commitment's lines bill (a node covered by a Savings Plan)."""

    kind: str
    start: datetime
    end: datetime
    name: str  # the node, the line's ref; '' for the day's disks, load balancers or estimate
    provider_id: str = ""
    category: str = "usage"  # the bill line's (finops.cloudcharges), 'usage' for resource days
    shares: dict[RowKey, Fraction] = field(default_factory=lambda: defaultdict(Fraction))
    pooled: Fraction = Fraction(0)
    unsplit: Fraction = Fraction(0)
    commitments: dict[str, Fraction] = field(default_factory=dict)

    def add(self, key: RowKey, amount: Fraction) -> None:
        self.shares[key] += amount

    @property
    def amount(self) -> Fraction:
        return sum(self.shares.values(), Fraction(0)) + self.pooled + self.unsplit


@dataclass
class ClusterReconciliation:
    """One cluster's period on the chosen basis, whole micros (step 7)."""

    cluster: str
    basis: Basis
    rows: dict[RowKey, int]  # allocated and idle cost per namespace and owner ('' namespace: idle)
    shared_micros: int  # purchase, support, tax (and discounts under the shared rule)
    unreconciled_micros: int  # usage lines of the cluster matching none of its resources
    billed_days: tuple[date, ...]
    estimated_days: tuple[date, ...]
    resources: tuple[ResourceVariance, ...]
    unreconciled_lines: tuple[str, ...]  # their refs, to find them in the bill
    origins: tuple[Origin, ...] = ()  # what the rows, shared and unreconciled cost come from, exact

    @property
    def total_micros(self) -> int:
        return sum(self.rows.values()) + self.shared_micros + self.unreconciled_micros


def reconcile(
    cluster: str,
    days: Iterable[date],
    rows: Iterable[EstimateRow],
    assets: Iterable[Asset],
    charges: Iterable[tuple[BillCharge, tuple[str, str] | None]],
    policy: Reconciliation,
    basis: Basis,
) -> ClusterReconciliation:
    """One cluster over ``days`` (the report's period) on ``basis`` (module docstring)."""
    days = sorted(set(days))
    rows, assets, charges = list(rows), list(assets), list(charges)
    billed: dict[tuple[str, str], dict[date, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    applied: dict[tuple[str, str], dict[date, dict[str, Fraction]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(Fraction))
    )
    for charge, resource in charges:
        if resource is not None:
            for day, amount in charge.per_day(charge.amount(basis), days).items():
                billed[resource][day] += amount
                if charge.commitment:
                    applied[resource][day][charge.commitment] += amount
    billed_days = sorted({day for per_day in billed.values() for day in per_day}) if basis is not Basis.ESTIMATE else []
    on_bill = set(billed_days)
    exact: dict[date, dict[RowKey, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    estimated: dict[date, Origin] = {}
    for row in rows:
        if row.day not in on_bill:
            exact[row.day][row.key] += row.total_micros
            if row.day not in estimated:
                estimated[row.day] = Origin("estimate", *day_span(row.day), "")
            estimated[row.day].add(row.key, Fraction(row.total_micros))
    origins = [estimated[day] for day in sorted(estimated)]
    variances = _reconcile_billed(on_bill, rows, assets, billed, exact, origins, applied)
    shared = unreconciled = Fraction(0)
    refs: list[str] = []
    for charge, resource in charges:
        if resource is not None:
            continue
        per_day = charge.per_day(charge.amount(basis), days)
        if not per_day:
            continue
        start, end = max(charge.start, day_span(days[0])[0]), min(charge.end, day_span(days[-1])[1])
        line = Origin("line", start, max(start, end), charge.ref, charge.resource_id or "", charge.category)
        whole = sum(per_day.values(), Fraction(0))
        if charge.category == "usage":
            unreconciled += whole
            refs.append(charge.ref)
            line.unsplit = whole
        elif charge.category == "discount" and policy.discounts is DiscountRule.PROPORTIONAL:
            line.pooled = _spread(per_day, exact, line)  # what finds no cost joins the shared pool
            shared += line.pooled
        else:
            shared += whole
            line.pooled = whole
        if charge.commitment:
            line.commitments[charge.commitment] = whole
        origins.append(line)
    keys = sorted({key for lines in exact.values() for key in lines}, key=row_order)
    amounts = [sum((exact[day].get(key, Fraction(0)) for day in exact), Fraction(0)) for key in keys]
    values = [*amounts, shared, unreconciled]
    rounded = largest_remainder(values, round(sum(values, Fraction(0))))
    return ClusterReconciliation(
        cluster=cluster,
        basis=basis,
        rows=dict(zip(keys, rounded[: len(keys)], strict=True)),
        shared_micros=rounded[-2],
        unreconciled_micros=rounded[-1],
        billed_days=tuple(billed_days),
        estimated_days=tuple(day for day in days if day not in on_bill),
        resources=tuple(variances),
        unreconciled_lines=tuple(refs),
        origins=tuple(origin for origin in origins if origin.amount or any(origin.shares.values())),
    )


def row_order(key: RowKey) -> tuple[str, str, str, str]:
    return (key[0], key[1] or "", key[2] or "", key[3])


IDLE_KEY: RowKey = ("", None, None, "idle")


def _reconcile_billed(
    on_bill: set[date],
    rows: list[EstimateRow],
    assets: list[Asset],
    billed: Mapping[tuple[str, str], Mapping[date, Fraction]],
    exact: dict[date, dict[RowKey, Fraction]],
    origins: list[Origin],
    applied: Mapping[tuple[str, str], Mapping[date, Mapping[str, Fraction]]],
) -> list[ResourceVariance]:
    """Steps 3-5 for the billed days, into ``exact`` and ``origins`` (one per node and day, one per
    day for the disks and for the load balancers); the variance per resource."""
    estimate: dict[tuple[str, str], int] = defaultdict(int)
    provider: dict[tuple[str, str], str] = {}
    node_estimate: dict[tuple[date, str], int] = {}
    for asset in assets:
        provider[(asset.kind, asset.name)] = asset.provider_id
        if asset.day in on_bill:
            estimate[(asset.kind, asset.name)] += asset.estimate_micros
            if asset.kind == "node":
                key = (asset.day, asset.name)
                node_estimate[key] = node_estimate.get(key, 0) + asset.estimate_micros
    on_node: dict[tuple[date, str], list[EstimateRow]] = defaultdict(list)
    storage: dict[date, list[EstimateRow]] = defaultdict(list)
    for row in rows:
        if row.day in on_bill:
            exact[row.day][row.key] += 0  # the row stays visible at zero
            if row.compute_micros and row.entry_kind != "idle":
                on_node[(row.day, row.node)].append(row)
            storage[row.day].append(row)
    nodes = {name for kind, name in billed if kind == "node"} | {name for _, name in node_estimate}
    for day in sorted(on_bill):
        for node in sorted(nodes | {name for (d, name) in on_node if d == day}):
            members = on_node.get((day, node), [])
            measured = sum(row.compute_micros for row in members)
            guess = node_estimate.get((day, node), measured)
            bill = billed.get(("node", node), {}).get(day, Fraction(0))
            if (day, node) not in node_estimate:  # '' stands for allocations without a node
                estimate[("node", node)] += measured
            origin = Origin("node", *day_span(day), node, provider.get(("node", node), ""))
            origin.commitments = dict(applied.get(("node", node), {}).get(day, {}))
            origins.append(origin)
            if guess == 0:
                origin.add(IDLE_KEY, bill)
                exact[day][IDLE_KEY] += bill
                continue
            factor = bill / guess
            for row in members:
                origin.add(row.key, row.compute_micros * factor)
                exact[day][row.key] += row.compute_micros * factor
            origin.add(IDLE_KEY, (guess - measured) * factor)
            exact[day][IDLE_KEY] += (guess - measured) * factor
        for kind, column in (("disk", "pv_micros"), ("load_balancer", "lb_micros")):
            bill = sum((per_day.get(day, Fraction(0)) for (k, _), per_day in billed.items() if k == kind), Fraction(0))
            origin = Origin(kind, *day_span(day), "")
            for (k, _), per_day in applied.items():
                for commitment, amount in per_day.get(day, {}).items() if k == kind else ():
                    origin.commitments[commitment] = origin.commitments.get(commitment, Fraction(0)) + amount
            origins.append(origin)
            weight = sum(getattr(row, column) for row in storage[day])
            if weight == 0:
                origin.add(IDLE_KEY, bill)
                exact[day][IDLE_KEY] += bill
                continue
            factor = bill / weight
            for row in storage[day]:
                origin.add(row.key, getattr(row, column) * factor)
                exact[day][row.key] += getattr(row, column) * factor
    resources = set(estimate) | set(billed)
    return [
        ResourceVariance(
            kind=kind,
            name=name,
            provider_id=provider.get((kind, name), ""),
            estimate_micros=estimate.get((kind, name), 0),
            billed_micros=sum((billed.get((kind, name), {}).get(day, Fraction(0)) for day in on_bill), Fraction(0)),
            on_bill=any(day in on_bill for day in billed.get((kind, name), {})),
        )
        for kind, name in sorted(resources)
    ]


def _spread(per_day: Mapping[date, Fraction], exact: dict[date, dict[RowKey, Fraction]], origin: Origin) -> Fraction:
    """A discount spread over each day's positive cost in proportion, into ``origin``'s shares;
    what finds no cost is returned (it joins the shared pool)."""
    left = Fraction(0)
    for day, amount in per_day.items():
        lines = exact.get(day, {})
        weight = sum((value for value in lines.values() if value > 0), Fraction(0))
        if weight == 0:
            left += amount
            continue
        for key in [key for key, value in lines.items() if value > 0]:
            share = amount * lines[key] / weight
            origin.add(key, share)
            lines[key] += share
    return left
