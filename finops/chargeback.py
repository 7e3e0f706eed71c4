"""Chargeback: turn a period's allocated, idle and shared costs into lines that add up to the bill.

The method is in ``docs/architecture.md``; the policy (``finops.policy``) chooses its options. Each
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

Direct costs (``DirectCost``: cloud spend outside the cluster, such as a managed database, a
snapshot or egress, tagged with the same ``team`` and ``cost-center`` keys) are added by
``allocate(..., direct=...)`` to the allocated column of the line keyed like a ``CostRow``: the
owner's line by team, the cost centre's by cost-center, ``__unallocated__`` when the tag is missing.
Lines by namespace put every direct cost on one ``__cloud__`` line (kind ``cloud``, after
``__unallocated__``): spend outside the cluster has no namespace, and calling it unallocated would
hide that most of it has an owner. A direct cost belongs to no cluster: it is added after the
clusters are settled, so it never receives idle or shared cost and never changes what a line
receives (receivers and weights are the clusters' own); a team with only cloud spend gets a line
with allocated cost alone. A direct cost carrying its charge period (``start``/``end``) counts for
the part of that period inside the report's period, prorated exactly by time (a charge of
[Oct 31 12:00, Nov 1 12:00) is half in October); without a period it counts whole. The proration is
exact like everything else, rounded once with the rest of the report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction

from finops.allocations import UNALLOCATED
from finops.coverage import Coverage
from finops.errors import InvalidInput
from finops.periods import ONE_MICROSECOND as _ONE_MICROSECOND
from finops.periods import Period as Period  # re-exported: reports build their periods here
from finops.policy import IdlePolicy, Policy, SharedSplit
from finops.rounding import round_table

SHARED = "__shared__"
CLOUD = "__cloud__"  # the one line of direct costs in a report by namespace
MICROS_PER_CENT = 10_000


class LineKey(StrEnum):
    """What one line of the report stands for (``--by``)."""

    TEAM = "team"
    COST_CENTER = "cost-center"
    NAMESPACE = "namespace"


class LineKind(StrEnum):
    """Owner lines, and the three lines the method keeps visible beside them."""

    OWNER = "owner"
    UNALLOCATED = "unallocated"
    SHARED = "shared"
    IDLE = "idle"
    CLOUD = "cloud"  # direct costs in a report by namespace


_KIND_ORDER = {LineKind.OWNER: 0, LineKind.UNALLOCATED: 1, LineKind.CLOUD: 2, LineKind.SHARED: 3, LineKind.IDLE: 4}
LineId = tuple[LineKind, str]  # a line as (kind, owner): what a ``Line`` of the report stands for


def _whole_micros(name: str, value: object) -> int:
    """An amount in micros; a whole ``Decimal`` (PostgreSQL's ``sum(bigint)``) is accepted."""
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be whole micros, got {value!r}")
    return value


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
        object.__setattr__(self, "allocated_micros", _whole_micros("allocated_micros", self.allocated_micros))


@dataclass(frozen=True)
class IdleRow:
    """A cluster's idle cost over the period (``SELECT cluster, sum(total_cost_micros) AS
    idle_micros ... WHERE entry_kind = 'idle' GROUP BY 1``); negative is allowed. Several rows of
    one cluster are added up."""

    cluster: str
    idle_micros: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "idle_micros", _whole_micros("idle_micros", self.idle_micros))


@dataclass(frozen=True)
class DirectCost:
    """Spend outside the cluster (a cloud bill's line), owned through its tags: added to its
    owner's line, receives no idle or shared cost, belongs to no cluster (module docstring).

    ``start``/``end`` is its charge period, half-open; when given, only the part inside the
    report's period counts, prorated exactly by time (a charge with ``start == end`` is a moment,
    counted whole when it falls inside the period). ``label`` says where it comes from (e.g. the
    cloud service); it does not affect the figures."""

    owner: str | None  # the team tag; None when untagged
    cost_center: str | None
    amount_micros: int
    label: str = "cloud"
    start: datetime | None = None
    end: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "amount_micros", _whole_micros("amount_micros", self.amount_micros))
        if (self.start is None) != (self.end is None):
            raise ValueError("a direct cost's charge period needs both start and end")
        if self.start is not None and self.end is not None:
            if self.start.tzinfo is None or self.end.tzinfo is None:
                raise ValueError("a direct cost's charge period must be timezone-aware")
            if self.end < self.start:
                raise ValueError(f"a direct cost's charge period ends before it starts: {self.start} > {self.end}")

    def within(self, period: Period) -> Fraction:
        """The part of the amount inside ``period``, exact in micros."""
        if self.start is None or self.end is None:
            return Fraction(self.amount_micros)
        if self.start == self.end:
            return Fraction(self.amount_micros if period.start <= self.start < period.end else 0)
        inside = min(self.end, period.end) - max(self.start, period.start)
        if inside <= timedelta(0):
            return Fraction(0)
        return self.amount_micros * Fraction(inside // _ONE_MICROSECOND, (self.end - self.start) // _ONE_MICROSECOND)

    def overlaps(self, period: Period) -> bool:
        """Whether any part of the charge period falls inside ``period`` (always, without one)."""
        if self.start is None or self.end is None:
            return True
        if self.start == self.end:
            return period.start <= self.start < period.end
        return self.start < period.end and period.start < self.end


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

    def as_document(self) -> dict[str, str]:
        return {
            "owner": self.owner,
            "allocated": str(self.allocated),
            "idle": str(self.idle),
            "shared": str(self.shared),
            "total": str(self.total),
            "share": str(self.share),
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
            "lines": [line.as_document() for line in self.lines],
            "total": str(self.total),
            "coverage": self.coverage.as_document() if self.coverage else None,
        }


def parse_line_key(value: str) -> LineKey:
    """``--by``: team, cost-center or namespace."""
    for key in LineKey:
        if value == key.value:
            return key
    raise InvalidInput(f"by: {value!r} is not one of {', '.join(key.value for key in LineKey)}")


def allocate(
    rows: Iterable[CostRow],
    idle: Iterable[IdleRow],
    policy: Policy,
    *,
    period: Period,
    by: LineKey | str = LineKey.TEAM,
    clusters: Collection[str] | None = None,
    direct: Iterable[DirectCost] = (),
) -> Report:
    """Settle each cluster's costs on lines, sum the clusters, add the direct costs and round once
    (module docstring).

    ``clusters`` is the set the report covers (for fixed costs); rows of other clusters are a
    caller's mistake and raise ``ValueError``. By default the report covers the clusters in the
    data and those named by fixed entries. ``direct`` are costs outside any cluster (cloud spend).
    """
    key = by if isinstance(by, LineKey) else parse_line_key(by)
    settled = settle(rows, idle, policy, period=period, by=key, clusters=clusters)
    exact: dict[LineId, list[Fraction]] = defaultdict(lambda: [Fraction(0)] * 3)
    for lines in settled.values():
        for line, amounts in lines.items():
            exact[line] = [a + b for a, b in zip(exact[line], amounts, strict=True)]
    for cost in direct:
        if cost.overlaps(period):
            exact[direct_line(cost, key)][0] += cost.within(period)
    return _report(exact, policy, period, key, tuple(settled))


def settle(
    rows: Iterable[CostRow],
    idle: Iterable[IdleRow],
    policy: Policy,
    *,
    period: Period,
    by: LineKey | str = LineKey.TEAM,
    clusters: Collection[str] | None = None,
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
        covered = sorted(set(rows_of) | set(idle_of) | named)
    else:
        covered = sorted(set(clusters))
        if stray := sorted((set(rows_of) | set(idle_of)) - set(covered)):
            raise ValueError(f"rows of clusters {stray} are outside the report's clusters {covered}")
    months = period.months()
    settled: dict[str, dict[LineId, list[Fraction]]] = {}
    for cluster in covered:
        fixed = sum(entry.amount_micros for entry in policy.shared.fixed if entry.applies_to(cluster)) * months
        settled[cluster] = _settle_cluster(rows_of[cluster], idle_of[cluster], fixed, policy, key)
    return settled


def direct_line(cost: DirectCost, by: LineKey) -> LineId:
    """The line a direct cost goes to: its owner's or cost centre's, ``__unallocated__`` when
    untagged, and ``__cloud__`` in a report by namespace."""
    if by is LineKey.NAMESPACE:
        return (LineKind.CLOUD, CLOUD)
    value = cost.owner if by is LineKey.TEAM else cost.cost_center
    return (LineKind.OWNER, value) if value else (LineKind.UNALLOCATED, UNALLOCATED)


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
