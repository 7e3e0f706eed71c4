"""Direct costs (``DirectCost``: cloud spend outside the cluster, such as a managed database, a
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

Tax, support and commitment fees that name no cluster are ``shared`` direct costs: no owner's,
they are spread over the report's lines with positive allocated cost (``share_out``).
``cloud_spend`` groups a period's direct costs as the FOCUS export reads them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from finops.allocations import UNALLOCATED
from finops.lines import CLOUD, RECEIVERS, SHARED, LineId, LineKey, LineKind
from finops.periods import ONE_MICROSECOND as _ONE_MICROSECOND
from finops.periods import Period
from finops.policy import SharedSplit


def whole_micros(name: str, value: object) -> int:
    """An amount in micros; a whole ``Decimal`` (PostgreSQL's ``sum(bigint)``) is accepted."""
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be whole micros, got {value!r}")
    return value


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
    shared: bool = False  # tax, support, a commitment fee: spread over the report's lines

    def __post_init__(self) -> None:
        object.__setattr__(self, "amount_micros", whole_micros("amount_micros", self.amount_micros))
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


def direct_line(cost: DirectCost, by: LineKey) -> LineId:
    """The line a direct cost goes to: its owner's or cost centre's, ``__unallocated__`` when
    untagged, and ``__cloud__`` in a report by namespace."""
    if by is LineKey.NAMESPACE:
        return (LineKind.CLOUD, CLOUD)
    value = cost.owner if by is LineKey.TEAM else cost.cost_center
    return (LineKind.OWNER, value) if value else (LineKind.UNALLOCATED, UNALLOCATED)


def share_out(allocated: Mapping[LineId, Fraction], pool: Fraction, split: SharedSplit) -> dict[LineId, Fraction]:
    """A pool of shared direct costs over the lines with positive allocated cost, as ``split``
    says; on ``__shared__`` when there is none."""
    if not pool:
        return {}
    receivers = sorted(line for line, amount in allocated.items() if line[0] in RECEIVERS and amount > 0)
    if not receivers:
        return {(LineKind.SHARED, SHARED): pool}
    weight = sum(allocated[line] for line in receivers)
    if split is SharedSplit.EVEN:
        return {line: pool / len(receivers) for line in receivers}
    return {line: pool * allocated[line] / weight for line in receivers}


OwnedKey = tuple[LineId, str | None, str]  # the line, cost centre and label of owned cloud spend


@dataclass
class CloudSpend:
    """The period's cloud spend as both FOCUS builders need it: what each line has allocated
    (settled in the clusters, plus its own cloud spend, the weight of shared charges), the owned
    spend by line, cost centre and label (with its owner tag), and the shared charges by label."""

    allocated: dict[LineId, Fraction]
    owned: dict[OwnedKey, Fraction]
    owners: dict[OwnedKey, str | None]
    shared: dict[str, Fraction]


def cloud_spend(
    direct: list[DirectCost], settled: dict[str, dict[LineId, list[Fraction]]], period: Period
) -> CloudSpend:
    spend = CloudSpend(defaultdict(Fraction), defaultdict(Fraction), {}, defaultdict(Fraction))
    for lines in settled.values():
        for line, amounts in lines.items():
            spend.allocated[line] += amounts[0]
    for cost in direct:
        if cost.shared:
            spend.shared[cost.label] += cost.within(period)
            continue
        key = (direct_line(cost, LineKey.TEAM), cost.cost_center, cost.label)
        spend.owned[key] += cost.within(period)
        spend.allocated[key[0]] += cost.within(period)
        spend.owners[key] = cost.owner
    return spend
