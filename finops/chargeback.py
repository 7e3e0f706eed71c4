"""Chargeback: turn a period's allocated, idle and shared costs into lines that add up to the bill.

The method is in ``docs/explanation/money-rules.md``; the policy (``finops.policy``) chooses its options. Each
cluster is settled on its own first, then the clusters are summed, so one cluster's overhead never
lands on a team that only runs elsewhere. Within a cluster:

- a line is an owner (``--by team``), a cost centre (``--by cost-center``) or a namespace
  (``--by namespace``); rows without the owner label (or cost centre) go to ``__unallocated__``;
- the allocated cost of a namespace listed in ``policy.shared.namespaces`` is not a line's: it joins
  the cluster's shared pool, with the policy's fixed costs (see "Fixed costs");
- the lines that *receive* shared (and, under option A, idle) cost are the lines with a positive
  allocated cost in that cluster, ``__unallocated__`` included: its cost is as real as a team's,
  and its share of the overhead is what a team will carry once the namespace is labelled;
- ``split: proportional`` spreads the pool in proportion to the receivers' allocated cost, ``even``
  gives each receiver the same amount;
- ``idle: distribute`` (option A) spreads the cluster's idle in proportion to allocated cost, as the
  method says, whatever ``split`` is; ``idle: separate`` (option B) puts it on the idle line, owned
  by ``policy.idle_owner`` whatever the lines are keyed by, and shown even when idle is zero. That
  line stays distinct from the same owner's namespaces (its ``kind`` is ``idle``): the owner's own
  consumption and the waste it is asked to shrink are different numbers;
- nothing is ever dropped. A pool with no receiver in its cluster (no positive allocated cost)
  goes to a ``__shared__`` line; idle with no receiver goes to the idle line even under option A;
- idle may be negative (OpenCost reports it when allocations exceed what the nodes cost, e.g.
  usage above capacity or prices that disagree with the bill). It is carried as it is, never
  clamped, because clamping would break the reconciliation with the bill: option B shows a
  negative idle line, option A lowers every receiver in proportion. A line's negative allocated
  cost (a credit) stays on the line, and the line receives nothing.

Fixed costs are per calendar month; the report prorates them by the part of each UTC calendar
month the period covers (``Period.months``: a whole month is exactly 1, 1-16 November is 15/30, a
period across two months adds both parts). The proration stays exact: nothing is rounded before
the report. An entry without ``cluster`` is charged in every cluster the report covers; the
clusters covered are those passed as ``clusters`` or, by default, those in the data plus those the
fixed entries name, so a fixed cost of a cluster with no data that period is still billed (on
``__shared__``, where a misspelt cluster name shows up too).

All arithmetic is exact (integer micros and ``Fraction``); the report rounds once, to cents, with
``finops.rounding.round_table``: the grand total is the exact total rounded half-even; the lines add
up to it, each line's allocated + idle + shared equals its total, each column adds up to its exact
total rounded to a neighbouring cent, and every figure is within a cent of exact. Line totals get
the spare cents by largest remainder (the rare exception is explained in ``finops.rounding``). The amounts are
in the policy's currency with two decimals.

Lines are ordered: owners by total, largest first (ties by name), then ``__unallocated__``, then
``__shared__``, then the idle line, so the exceptions are together at the bottom where they are
read as such. ``share`` is a line's total over the grand total, as a fraction with four decimals
(``0.5714``), rounded half-even from the rounded totals; shares need not add up to exactly 1, and
they are 0 when the grand total is 0.

Direct costs (cloud spend outside the clusters) are ``finops.directcosts``: ``allocate(...,
direct=...)`` adds them after the clusters are settled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from finops.allocations import UNALLOCATED
from finops.carbon import kilograms
from finops.coverage import Coverage
from finops.directcosts import DirectCost as DirectCost  # re-exported: callers build them with rows
from finops.directcosts import direct_line, share_out, whole_micros
from finops.lines import CLOUD as CLOUD
from finops.lines import KIND_ORDER as _KIND_ORDER
from finops.lines import SHARED, LineId, LineKind
from finops.lines import LineKey as LineKey
from finops.lines import parse_line_key as parse_line_key
from finops.periods import Period as Period  # re-exported: reports build their periods here
from finops.policy import IdlePolicy, Policy, SharedSplit
from finops.reconciliation import UNRECONCILED, ClusterReconciliation
from finops.rounding import round_table

MICROS_PER_CENT = 10_000


@dataclass(frozen=True)
class CostRow:
    """One namespace's allocated cost over the period in one cluster, as a SQL aggregation gives
    it (``SELECT cluster, namespace, team AS owner, cost_center, sum(total_cost_micros) AS
    allocated_micros ... WHERE entry_kind <> 'idle' GROUP BY 1, 2, 3, 4``). A namespace may come
    in several rows (its labels changed during the period); each goes to its own line."""

    cluster: str
    namespace: str
    owner: str | None  # the owner label's value on the namespace; None when unlabelled
    cost_center: str | None
    allocated_micros: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "allocated_micros", whole_micros("allocated_micros", self.allocated_micros))


@dataclass(frozen=True)
class IdleRow:
    """A cluster's idle cost over the period (``SELECT cluster, sum(total_cost_micros) AS
    idle_micros ... WHERE entry_kind = 'idle' GROUP BY 1``); negative is allowed. Several rows of
    one cluster are added up."""

    cluster: str
    idle_micros: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "idle_micros", whole_micros("idle_micros", self.idle_micros))


@dataclass(frozen=True)
class BillExtras:
    """What a cluster's bill adds beside its reconciled rows (``finops.reconciliation``): purchase,
    support and tax lines (and discounts spread as shared) join the shared pool; usage lines that
    match none of its resources go to the ``__unreconciled__`` line, which receives nothing."""

    shared_micros: int = 0
    unreconciled_micros: int = 0


@dataclass(frozen=True)
class Line:
    """One line of the report; amounts in the report's currency, two decimals."""

    owner: str
    kind: LineKind
    allocated: Decimal
    idle: Decimal
    shared: Decimal
    total: Decimal
    share: Decimal  # total / grand total, four decimals
    grams: int | None = None  # grams CO2e (finops.chargeback_carbon); None: not measured

    def as_document(self) -> dict[str, str | int | None]:
        return {
            "owner": self.owner,
            "allocated": str(self.allocated),
            "idle": str(self.idle),
            "shared": str(self.shared),
            "total": str(self.total),
            "share": str(self.share),
            "grams_co2e": self.grams,
            "kg_co2e": None if self.grams is None else kilograms(self.grams),
        }


@dataclass(frozen=True)
class Report:
    """A chargeback (or showback) report: the lines, and the total they add up to."""

    period: Period
    policy: Policy
    by: LineKey
    lines: tuple[Line, ...]
    total: Decimal
    clusters: tuple[str, ...] = ()  # the clusters the report covers
    coverage: Coverage | None = None  # the hours the figures stand on; set by the reports that read data
    basis: str = "estimate"  # estimate | billed | amortised (finops.reconcile_policy.Basis)
    reconciliation: Mapping[str, object] | None = None  # what the bill covered, and the variance
    carbon: Mapping[str, object] | None = None  # the grams' total and the hours with emissions; None: not read

    @property
    def currency(self) -> str:
        return self.policy.currency

    @property
    def allocated(self) -> Decimal:
        return sum((line.allocated for line in self.lines), _cents(0))

    @property
    def idle(self) -> Decimal:
        return sum((line.idle for line in self.lines), _cents(0))

    @property
    def shared(self) -> Decimal:
        return sum((line.shared for line in self.lines), _cents(0))

    def to_document(self) -> dict[str, object]:
        """The report as JSON-able data, amounts as decimal strings with two decimals."""
        return {
            "period": self.period.as_document(),
            "currency": self.currency,
            "policy": self.policy.as_document(),
            "by": self.by.value,  # what each line's "owner" names: a team, a cost centre or a namespace
            "lines": [line.as_document() for line in self.lines],
            "total": str(self.total),
            "coverage": self.coverage.as_document() if self.coverage else None,
            "basis": self.basis,
            "reconciliation": self.reconciliation,
            "carbon": self.carbon,
        }


@dataclass(frozen=True)
class BilledInputs:
    """What ``allocate`` takes on a bill basis: the reconciled clusters' rows, idle and extras."""

    rows: list[CostRow]
    idle: list[IdleRow]
    bills: dict[str, BillExtras]


def billed_inputs(reconciliations: Iterable[ClusterReconciliation]) -> BilledInputs:
    inputs = BilledInputs([], [], {})
    for done in reconciliations:
        for (namespace, owner, cost_center, kind), micros in done.rows.items():
            if kind == "idle":
                inputs.idle.append(IdleRow(done.cluster, micros))
            else:
                inputs.rows.append(CostRow(done.cluster, namespace, owner, cost_center, micros))
        inputs.bills[done.cluster] = BillExtras(done.shared_micros, done.unreconciled_micros)
    return inputs


def allocate(
    rows: Iterable[CostRow],
    idle: Iterable[IdleRow],
    policy: Policy,
    *,
    period: Period,
    by: LineKey | str = LineKey.TEAM,
    clusters: Collection[str] | None = None,
    direct: Iterable[DirectCost] = (),
    bills: Mapping[str, BillExtras] | None = None,
) -> Report:
    """Settle each cluster's costs on lines, sum the clusters, add the direct costs and round once
    (module docstring).

    ``clusters`` is the set the report covers (for fixed costs); rows of other clusters are a
    caller's mistake and raise ``ValueError``. By default the report covers the clusters in the
    data and those named by fixed entries. ``direct`` are costs outside any cluster (cloud spend).
    """
    key = by if isinstance(by, LineKey) else parse_line_key(by)
    settled = settle(rows, idle, policy, period=period, by=key, clusters=clusters, bills=bills)
    exact: dict[LineId, list[Fraction]] = defaultdict(lambda: [Fraction(0)] * 3)
    for lines in settled.values():
        for line, amounts in lines.items():
            exact[line] = [a + b for a, b in zip(exact[line], amounts, strict=True)]
    pool = Fraction(0)
    for cost in direct:
        if cost.overlaps(period) and cost.shared:
            pool += cost.within(period)
        elif cost.overlaps(period):
            exact[direct_line(cost, key)][0] += cost.within(period)
    allocated = {line: amounts[0] for line, amounts in exact.items()}
    for line, amount in share_out(allocated, pool, policy.shared.split).items():
        exact[line][2] += amount
    return _report(exact, policy, period, key, tuple(settled))


def settle(
    rows: Iterable[CostRow],
    idle: Iterable[IdleRow],
    policy: Policy,
    *,
    period: Period,
    by: LineKey | str = LineKey.TEAM,
    clusters: Collection[str] | None = None,
    bills: Mapping[str, BillExtras] | None = None,
) -> dict[str, dict[LineId, list[Fraction]]]:
    """Each covered cluster's lines before rounding, exact in micros: ``{cluster: {(kind, owner):
    [allocated, idle, shared]}}``, clusters in order. ``allocate`` sums and rounds these; an export
    that itemises a report (``finops.focus``) reads them to know where each line's cost arose."""
    key = by if isinstance(by, LineKey) else parse_line_key(by)
    rows_of: dict[str, list[CostRow]] = defaultdict(list)
    for row in rows:
        rows_of[row.cluster].append(row)
    idle_of: dict[str, int] = defaultdict(int)
    for entry in idle:
        idle_of[entry.cluster] += entry.idle_micros
    if clusters is None:
        named = {fixed.cluster for fixed in policy.shared.fixed if fixed.cluster is not None}
        covered = sorted(set(rows_of) | set(idle_of) | named | set(bills or {}))
    else:
        covered = sorted(set(clusters))
        if stray := sorted((set(rows_of) | set(idle_of)) - set(covered)):
            raise ValueError(f"rows of clusters {stray} are outside the report's clusters {covered}")
    months = period.months()
    settled: dict[str, dict[LineId, list[Fraction]]] = {}
    for cluster in covered:
        fixed = sum(entry.amount_micros for entry in policy.shared.fixed if entry.applies_to(cluster)) * months
        extras = (bills or {}).get(cluster, BillExtras())
        pool = fixed + extras.shared_micros
        settled[cluster] = _settle_cluster(rows_of[cluster], idle_of[cluster], pool, policy, key)
        if extras.unreconciled_micros:
            line = settled[cluster].setdefault((LineKind.UNRECONCILED, UNRECONCILED), [Fraction(0)] * 3)
            line[0] += extras.unreconciled_micros
    return settled


def line_of(row: CostRow, by: LineKey) -> LineId:
    """The line a namespace's cost goes to (a shared namespace's joins the pool instead)."""
    value = {LineKey.TEAM: row.owner, LineKey.COST_CENTER: row.cost_center, LineKey.NAMESPACE: row.namespace}[by]
    return (LineKind.OWNER, value) if value else (LineKind.UNALLOCATED, UNALLOCATED)


def _settle_cluster(
    rows: list[CostRow], idle: int, fixed: Fraction, policy: Policy, by: LineKey
) -> dict[LineId, list[Fraction]]:
    """One cluster's lines, exact in micros: [allocated, idle, shared]."""
    shared_namespaces = set(policy.shared.namespaces)
    pool = fixed
    allocated: dict[LineId, int] = defaultdict(int)
    for row in rows:
        if row.namespace in shared_namespaces:
            pool += row.allocated_micros
        else:
            allocated[line_of(row, by)] += row.allocated_micros
    lines = {line: [Fraction(amount), Fraction(0), Fraction(0)] for line, amount in allocated.items()}
    receivers = sorted(line for line, amount in allocated.items() if amount > 0)
    weight = sum(allocated[line] for line in receivers)
    if pool and not receivers:
        lines.setdefault((LineKind.SHARED, SHARED), [Fraction(0)] * 3)[2] += pool
    elif pool:
        even = policy.shared.split is SharedSplit.EVEN
        for line in receivers:
            lines[line][2] += pool / len(receivers) if even else pool * allocated[line] / weight
    if policy.idle is IdlePolicy.DISTRIBUTE and receivers:
        for line in receivers:
            lines[line][1] += Fraction(idle * allocated[line], weight)
    elif idle or policy.idle is IdlePolicy.SEPARATE:  # option B shows its idle line even at zero
        lines.setdefault((LineKind.IDLE, policy.idle_owner), [Fraction(0)] * 3)[1] += idle
    return lines


def _report(
    exact: dict[LineId, list[Fraction]], policy: Policy, period: Period, by: LineKey, clusters: tuple[str, ...]
) -> Report:
    ids = sorted(exact, key=lambda line: (_KIND_ORDER[line[0]], line[1]))
    cents = round_table([[amount / MICROS_PER_CENT for amount in exact[line]] for line in ids])
    grand = sum(sum(row) for row in cents)
    lines = [
        Line(
            owner=owner,
            kind=kind,
            allocated=_cents(row[0]),
            idle=_cents(row[1]),
            shared=_cents(row[2]),
            total=_cents(sum(row)),
            share=_share(sum(row), grand),
        )
        for (kind, owner), row in zip(ids, cents, strict=True)
    ]
    lines.sort(key=lambda line: (_KIND_ORDER[line.kind], -line.total, line.owner))
    return Report(period=period, policy=policy, by=by, lines=tuple(lines), total=_cents(grand), clusters=clusters)


def _cents(cents: int) -> Decimal:
    return Decimal(cents).scaleb(-2)


def _share(part: int, whole: int) -> Decimal:
    if whole == 0:
        return Decimal("0.0000")
    return Decimal(round(Fraction(part * 10_000, whole))).scaleb(-4)
