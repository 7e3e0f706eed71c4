"""The chargeback's carbon column: each line's grams CO2e, split exactly as the line's money is.

Why the same split: a team reads its grams beside its cost and must be able to explain one from
the other. So the grams of a period (what the collector stored per row, ``finops.carbon``: each
node's grams over its rows and idle by cost) go to the chargeback's lines by the policy's rules,
cluster by cluster, with the money's weights (``finops.chargeback._settle_cluster``):

- a row's own grams go to its line (``line_of``), as its allocated cost does;
- the grams of the namespaces listed in ``policy.shared.namespaces`` are a pool spread over the
  receivers by ``shared.split`` (in proportion to allocated cost, or evenly), or kept on
  ``__shared__`` when the cluster has no receiver;
- idle grams follow the ``idle`` option: ``distribute`` spreads them over the receivers in
  proportion to their allocated cost, ``separate`` (or no receiver) keeps them on the idle line;
- fixed costs and cloud spend bring money and no grams: nothing measures their emissions.

The receivers are the money's: the lines with a positive allocated cost in the cluster, weighed by
that cost on the report's basis. Every share is an exact ``Fraction``; the lines' grams are summed
over the clusters and rounded once, by largest remainder in the report's line order (ties to the
earlier line), so the column adds up to the stored grams, which are the nodes' and disks' grams:
an integer in, the same integer out.

A line holds grams only if some cluster with emissions in the period contributes to it; a line
whose cost comes only from clusters without emissions (or from cloud spend) has none (``None``),
never 0 g: an unmeasured figure is not a zero one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

from finops.chargeback import CostRow, IdleRow, Line, Report, line_of
from finops.errors import InvalidInput
from finops.lines import KIND_ORDER, SHARED, LineId, LineKey, LineKind
from finops.policy import IdlePolicy, Policy, SharedSplit
from finops.rounding import largest_remainder


@dataclass(frozen=True)
class GramsRow:
    """A namespace's grams CO2e over the period in one cluster (``is_idle``: the cluster's idle,
    namespace empty), as ``allocation_emissions`` sums them."""

    cluster: str
    namespace: str
    owner: str | None
    cost_center: str | None
    grams: int
    is_idle: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.grams, bool) or not isinstance(self.grams, int) or self.grams < 0:
            raise InvalidInput(f"grams: {self.grams!r} is not a whole, non-negative number of grams")


def line_grams(
    rows: Iterable[CostRow],
    idle: Iterable[IdleRow],
    grams: Iterable[GramsRow],
    policy: Policy,
    *,
    by: LineKey,
    measured: Collection[str],
) -> dict[LineId, int | None]:
    """Each line's whole grams (module docstring). ``rows`` and ``idle`` are the money the report
    was settled with (the weights); ``measured`` the clusters with emissions in the period. Lines
    with money and no measured cluster are ``None``; a line with grams and no money is added."""
    money: dict[str, list[CostRow]] = defaultdict(list)
    for row in rows:
        money[row.cluster].append(row)
    clusters_of_money: set[str] = set(money) | {entry.cluster for entry in idle}
    of_cluster: dict[str, list[GramsRow]] = defaultdict(list)
    for entry in grams:
        of_cluster[entry.cluster].append(entry)
    exact: dict[LineId, Fraction] = defaultdict(Fraction)
    for cluster in sorted(set(of_cluster) | (clusters_of_money & set(measured))):
        for line, amount in _settle_cluster(money[cluster], of_cluster[cluster], policy, by).items():
            exact[line] += amount
    order = sorted(exact, key=lambda line: (KIND_ORDER[line[0]], line[1]))
    total = sum(exact.values(), Fraction(0))
    if total.denominator != 1:  # pragma: no cover - every share of an integer pool adds back to it
        raise RuntimeError(f"the lines' grams add up to {total}, not a whole number")
    whole = largest_remainder([exact[line] for line in order], int(total))
    return dict(zip(order, whole, strict=True))


def _settle_cluster(money: list[CostRow], grams: list[GramsRow], policy: Policy, by: LineKey) -> dict[LineId, Fraction]:
    """One cluster's grams per line, exact: own grams, shared pool and idle, as its money goes."""
    shared_namespaces = set(policy.shared.namespaces)
    allocated: dict[LineId, int] = defaultdict(int)
    for row in money:
        if row.namespace not in shared_namespaces:
            allocated[line_of(row, by)] += row.allocated_micros
    lines: dict[LineId, Fraction] = {line: Fraction(0) for line in allocated}
    pool = idle = 0
    for entry in grams:
        if entry.is_idle:
            idle += entry.grams
        elif entry.namespace in shared_namespaces:
            pool += entry.grams
        else:
            line = line_of(CostRow(entry.cluster, entry.namespace, entry.owner, entry.cost_center, 0), by)
            lines[line] = lines.get(line, Fraction(0)) + entry.grams
    receivers = sorted(line for line, amount in allocated.items() if amount > 0)
    weight = sum(allocated[line] for line in receivers)
    if pool and not receivers:
        lines[(LineKind.SHARED, SHARED)] = lines.get((LineKind.SHARED, SHARED), Fraction(0)) + pool
    elif pool:
        even = policy.shared.split is SharedSplit.EVEN
        for line in receivers:
            lines[line] += Fraction(pool, len(receivers)) if even else Fraction(pool * allocated[line], weight)
    if policy.idle is IdlePolicy.DISTRIBUTE and receivers:
        for line in receivers:
            lines[line] += Fraction(idle * allocated[line], weight)
    elif idle or policy.idle is IdlePolicy.SEPARATE:  # as the money: option B's line is there even at zero
        line = (LineKind.IDLE, policy.idle_owner)
        lines[line] = lines.get(line, Fraction(0)) + idle
    return lines


def with_grams(report: Report, grams: Mapping[LineId, int | None], carbon: Mapping[str, object]) -> Report:
    """``report`` with each line's grams (``line_grams``) and the ``carbon`` summary; a line that
    has grams and no money (its rows' cost nets to zero) is added with zero money, so no gram is
    dropped."""
    zero = Decimal("0.00")
    lines = [replace(line, grams=grams.get((line.kind, line.owner))) for line in report.lines]
    known = {(line.kind, line.owner) for line in report.lines}
    for (kind, owner), amount in grams.items():
        if (kind, owner) not in known and amount:
            lines.append(Line(owner, kind, zero, zero, zero, zero, Decimal("0.0000"), amount))
    lines.sort(key=lambda line: (KIND_ORDER[line.kind], -line.total, line.owner))
    return replace(report, lines=tuple(lines), carbon=carbon)
