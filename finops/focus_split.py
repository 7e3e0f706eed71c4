"""FOCUS 1.3's split cost allocation: each charge the clusters and the cloud bill incur (the origin
charge), written as the rows that share it out among namespaces, teams and the idle and shared
lines, with the method and the ratio of each share.

The origin charges and their rows, on the estimate (``estimate_origins``):

- **a cluster-day**: everything one cluster cost on one UTC day (its nodes, volumes and load
  balancers, as the daily rollups price them: every namespace, the unmounted volumes and the idle
  capacity). Rows: one per namespace and owner (``max-request-usage``: its billed max(request,
  usage), ``AllocatedResourceId`` ``<cluster>/<namespace>``); the day's idle capacity, either to
  the receiving lines in proportion to their allocated cost (``idle-proportional``) or kept apart
  (``idle-separate``, the unallocated portion: no ``AllocatedResourceId``); and the shared
  namespaces' cost that day, to the receiving lines by the policy's split (``shared-proportional``
  or ``shared-even``; ``shared-unassigned`` without receivers);
- **a fixed shared cost** of a cluster (``policy.shared.fixed``, e.g. the control-plane fee), for
  the period: rows per receiving line, by the policy's split;
- **a shared cloud charge** (tax, support: the cloud spend marked shared, one origin per label):
  rows per line with allocated cost, by the policy's split.

On a bill basis (``bill_origins``: the month reconciled to the imported bill,
``finops.reconciliation``) a cluster's origins are the bill's instead: **a node's billed day**
(``ResourceId`` the node's provider id), split among the namespaces that ran on it and the
node's idle capacity by their estimated compute (``max-request-usage``); **the day's billed disks**
and **load balancers**, split by each namespace's volume (``volume-cost``) or load balancer cost
(``load-balancer-cost``); **a day the bill does not cover yet**, split as on the estimate; **a
discount line** spread over its period's reconciled cost (``discount-proportional``, category
``Credit``), what finds no cost by the policy's shared split; **a tax, support or purchase line**
(or a discount under the ``shared`` rule), split by the policy's shared split; **a usage line
matching no resource**, one unsplit row on ``__unreconciled__``. The idle and shared parts of
each are shared out as above, by the policy's rule (a day's idle on the bill may be negative, and
a month's pool zero while a day's part is not). A charge a commitment covered (a Savings Plan's
covered usage, its negation) carries, on each of its rows, the commitment and the row's part of
what it covered (``ContractApplied``, in cents adding up to the covered amount, negative on a
negation; ``finops.commitments``).

A share of overhead goes to a line, not a namespace: its ``AllocatedResourceId`` is
``<cluster>/__overhead__/<owner>`` (``__cloud__/__overhead__/<owner>`` for a cloud charge). The
idle and shared weights are the month's: a line receives, from each day's idle, the share the
policy gives it of the month's (``finops.chargeback.settle``: by allocated cost, or even), so its
rows over the month add up to what the chargeback gives it. Cloud spend that is not shared is owned whole: a row of
its own, not split (the ``Allocated`` columns null).

Every row of an origin keeps the origin's dimensions (``ResourceId``, ``ChargePeriod``,
``ChargeCategory``, service), carries ``AllocatedRatio`` (its exact share of the origin, written
with 12 decimals, the ratios of one origin adding up to exactly 1) and, for a namespace, the
core-hours behind it (``UsageQuantity`` in ``Core-Hours``).

Rounding: the rows of an origin add up to the origin's cost in cents exactly (an origin that is a
whole number of cents, as a fee or a bill line is, keeps it; a cluster-day estimated in micros is
its exact cost rounded up or down), the rows add up to the report's total, and grouped by line
they give the chargeback report's lines to the cent (``finops.rounding.round_table``: origins as
rows, the report's line figures as column totals). Both cannot always hold: when origins that are
whole cents leave no cent to move (in practice only with credits among the costs), the origins
stay exact and each line is within a cent of the report's; the export then says so
(``LINES_NOTE``), on stderr and in its sidecar.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from finops.chargeback import MICROS_PER_CENT, CostRow, Period, Report, line_of
from finops.directcosts import DirectCost, cloud_spend, share_out
from finops.focus_origins import ClusterOrigin
from finops.focus_rows import Draft, Extras, Split
from finops.lines import SHARED, LineId, LineKey, LineKind
from finops.policy import IdlePolicy, Policy, SharedSplit
from finops.reconciliation import UNRECONCILED
from finops.rounding import largest_remainder, round_table

RATIO_PLACES = 12
LINES_NOTE = (
    "FOCUS 1.3: the origin charges are exact, and some lines differ from the chargeback report by a cent "
    "(no rounding of the origin charges reaches the report's figures)"
)
UNMOUNTED = "__unmounted__"
_UNALLOCATED_PORTION = {LineKind.IDLE, LineKind.SHARED}


def tags_of(policy: Policy, owner: str | None, cost_center: str | None, namespace: str | None = None) -> dict[str, str]:
    """The policy's owner and cost-centre label keys, and ``namespace``, those that have a value."""
    tags = {policy.owner_label: owner, policy.cost_center_label: cost_center, "namespace": namespace}
    return {key: value for key, value in tags.items() if value}


class LineTags:
    """The tags of a line's share of overhead in a cluster: its owner, and its cost centre when
    the owner has exactly one in that cluster."""

    def __init__(self, rows: Iterable[CostRow], policy: Policy) -> None:
        self.policy = policy
        self.centers: dict[tuple[str, str | None], set[str]] = defaultdict(set)
        for row in rows:
            if row.cost_center:
                self.centers[(row.cluster, row.owner)].add(row.cost_center)

    def __call__(self, cluster: str, line: LineId) -> dict[str, str]:
        owner = line[1] if line[0] is LineKind.OWNER else None
        found = self.centers.get((cluster, owner), set())
        return tags_of(self.policy, owner, next(iter(found)) if len(found) == 1 else None)


class _Origin:
    """One origin charge's rows, as they are drafted."""

    def __init__(self, commitments: dict[str, Fraction] | None = None, **fields: object) -> None:
        self.fields = fields
        self.drafts: list[Draft] = []
        self.commitments = commitments or {}  # the part of the charge each commitment covered

    def add(
        self,
        line: LineId,
        column: int,
        amount: Fraction,
        split: Split,
        quantity: Decimal | None = None,
        extras: Extras | None = None,
    ) -> None:
        if not amount and quantity is None and not (extras and (extras.grams or extras.gpu_hours)):
            return  # no idle or shared that day: no share rows
        exact = [Fraction(0)] * 3
        exact[column] = amount
        draft = Draft(line=line, exact=exact, quantity=quantity, split=split, extras=extras, **self.fields)  # type: ignore[arg-type]
        self.drafts.append(draft)


def split_drafts(
    rows: list[CostRow],
    origins: list[ClusterOrigin],
    settled: dict[str, dict[LineId, list[Fraction]]],
    direct: list[DirectCost],
    policy: Policy,
    period: Period,
    report: Report,
) -> tuple[list[Draft], str | None]:
    """The rows of every origin charge of the period, rounded (module docstring), and a note when
    their lines are not the report's to the cent (``LINES_NOTE``). ``origins`` are the clusters'
    charges (``estimate_origins`` or ``bill_origins``); the fixed fees and cloud charges are
    added here."""
    drafted = _cluster_origins(rows, origins, settled, policy, period) + _cloud_origins(direct, settled, policy, period)
    exact_lines = _round(drafted, report)
    return [draft for origin in drafted for draft in origin.drafts], None if exact_lines else LINES_NOTE


def _receivers(lines: dict[LineId, list[Fraction]], policy: Policy) -> dict[int, dict[LineId, Fraction]]:
    """Where a cluster's idle (1) and shared (2) cost go, as weights adding up to 1, by the
    policy's rule as ``finops.chargeback.settle`` applies it: the lines with allocated cost, or the
    idle and shared lines. Not the month's pools: those may be zero while a charge's part is not
    (a negative idle day on the bill, or a part under the micro the report rounds rows to)."""
    allocated = {
        line: amounts[0]
        for line, amounts in sorted(lines.items())
        if line[0] in (LineKind.OWNER, LineKind.UNALLOCATED) and amounts[0] > 0
    }
    weight = sum(allocated.values(), Fraction(0))
    proportional = {line: amount / weight for line, amount in allocated.items()}
    idle_line: dict[LineId, Fraction] = {(LineKind.IDLE, policy.idle_owner): Fraction(1)}
    if not allocated:
        return {1: idle_line, 2: {(LineKind.SHARED, SHARED): Fraction(1)}}
    even = {line: Fraction(1, len(allocated)) for line in allocated}
    return {
        1: proportional if policy.idle is IdlePolicy.DISTRIBUTE else idle_line,
        2: even if policy.shared.split is SharedSplit.EVEN else proportional,
    }


def _shared_method(policy: Policy, line: LineId) -> str:
    if line[0] is LineKind.SHARED:
        return "shared-unassigned"
    return "shared-even" if policy.shared.split is SharedSplit.EVEN else "shared-proportional"


def _share(scope: str, line: LineId, method: str, ratio_tags: dict[str, str]) -> Split:
    """A share of overhead: to the line, or the unallocated portion (idle or shared kept apart)."""
    if line[0] in _UNALLOCATED_PORTION:
        return Split(method, None, None, {})
    return Split(method, f"{scope}/__overhead__/{line[1]}", line[1], ratio_tags)


@dataclass(frozen=True)
class _Overhead:
    """A cluster's idle (column 1) or shared (column 2) cost within an origin, to the lines that
    receive it: weighted as the policy settles the period."""

    cluster: str
    weights: dict[int, dict[LineId, Fraction]]
    policy: Policy
    line_tags: LineTags

    def __call__(self, origin: _Origin, column: int, amount: Fraction, extras: Extras | None = None) -> None:
        weights = self.weights[column]
        parts = _spread(extras, list(weights.values()))
        for (line, weight), part in zip(weights.items(), parts, strict=True):
            if column == 1:
                method = "idle-separate" if line[0] is LineKind.IDLE else "idle-proportional"
            else:
                method = _shared_method(self.policy, line)
            split = _share(self.cluster, line, method, self.line_tags(self.cluster, line))
            origin.add(line, column, amount * weight, split, extras=part)


def _spread(extras: Extras | None, weights: list[Fraction]) -> list[Extras | None]:
    """An idle or shared pile's grams and GPU-hours over the rows that receive it, by the same
    weights as its money (adding up to 1): whole grams and micro-GPU-hours by largest remainder,
    so the rows add up to the pile's (``x_CarbonGramsCO2e`` sums to the stored grams)."""
    if extras is None or (extras.grams is None and extras.gpu_hours is None and extras.gpu_model is None):
        return [None] * len(weights)
    grams: list[int | None] = [None] * len(weights)
    if extras.grams is not None:
        grams = list(largest_remainder([extras.grams * w for w in weights], extras.grams))
    hours: list[Decimal | None] = [None] * len(weights)
    if extras.gpu_hours is not None:
        units = round(Fraction(extras.gpu_hours) * 10**6)
        hours = [Decimal(u).scaleb(-6) for u in largest_remainder([units * w for w in weights], units)]
    return [Extras(h, g, extras.gpu_model) for h, g in zip(hours, grams, strict=True)]


def _cluster_origins(
    rows: list[CostRow],
    charges: list[ClusterOrigin],
    settled: dict[str, dict[LineId, list[Fraction]]],
    policy: Policy,
    period: Period,
) -> list[_Origin]:
    shared_namespaces = set(policy.shared.namespaces)
    line_tags = LineTags(rows, policy)
    of_cluster: dict[str, list[ClusterOrigin]] = defaultdict(list)
    for charge in charges:
        of_cluster[charge.cluster].append(charge)

    origins = []
    for cluster, lines in settled.items():
        overhead = _Overhead(cluster, _receivers(lines, policy), policy, line_tags)

        for charge in of_cluster.pop(cluster, []):
            origin = _Origin(
                charge.commitments,
                start=charge.start,
                end=charge.end,
                cluster=cluster,
                resource=charge.resource,
                resource_name=charge.resource_name,
                resource_type=charge.resource_type,
                description=charge.description,
                tags={},
                category=charge.category,
            )
            if charge.unsplit:
                whole = [charge.unsplit, Fraction(0), Fraction(0)]
                line = (LineKind.UNRECONCILED, UNRECONCILED)
                origin.drafts.append(Draft(line=line, exact=whole, **origin.fields))  # type: ignore[arg-type]
            overhead(origin, 2, charge.pooled)
            idle: dict[str | None, tuple[Fraction, Extras | None]] = {}  # per GPU model (None: the rest)
            shared, shared_extras = Fraction(0), Extras()
            for d in charge.shares:
                if d.is_idle:
                    model = d.extras.gpu_model if d.extras else None
                    before, extras = idle.get(model, (Fraction(0), None))
                    idle[model] = (before + d.amount, _add(extras, d.extras))
                elif d.namespace in shared_namespaces:
                    shared += d.amount
                    shared_extras = _add(shared_extras, d.extras) or shared_extras
                else:
                    row = CostRow(cluster, d.namespace, d.owner, d.cost_center, 0)
                    namespace = d.namespace or UNMOUNTED
                    tags = tags_of(policy, d.owner, d.cost_center, d.namespace or None)
                    split = Split(charge.method, f"{cluster}/{namespace}", namespace, tags, d.core_hours)
                    origin.add(line_of(row, LineKey.TEAM), 0, d.amount, split, d.core_hours, d.extras)
            if not idle:
                idle[None] = (Fraction(0), None)
            for model in sorted(idle, key=lambda m: (m is not None, m or "")):
                overhead(origin, 1, *idle[model])
            overhead(origin, 2, shared, shared_extras)
            origins.append(origin)
        fees: dict[str, Fraction] = defaultdict(Fraction)  # by name: two entries of one name are one charge
        for fixed in policy.shared.fixed:
            if fixed.applies_to(cluster):
                fees[fixed.name] += fixed.amount_micros * period.months()
        for name, micros in sorted(fees.items()):
            origin = _Origin(
                start=period.start,
                end=period.end,
                cluster=cluster,
                resource=f"{cluster}/{name}",
                resource_name=name,
                resource_type="Kubernetes Shared Cost",
                description=f"Fixed shared cost {name} of cluster {cluster}",
                tags={},
                category=("Usage", "Recurring"),
            )
            overhead(origin, 2, micros)
            origins.append(origin)
    if of_cluster:  # pragma: no cover - every cluster with charges is settled
        raise RuntimeError(f"charges of clusters outside the report: {sorted(of_cluster)}")
    return origins


def _add(a: Extras | None, b: Extras | None) -> Extras | None:
    """Two piles' grams and GPU-hours summed (None when neither measured); the GPU model kept."""
    if a is None or b is None:
        return a or b
    grams = None if a.grams is None and b.grams is None else (a.grams or 0) + (b.grams or 0)
    hours = None
    if a.gpu_hours is not None or b.gpu_hours is not None:
        hours = (a.gpu_hours or Decimal(0)) + (b.gpu_hours or Decimal(0))
    return Extras(hours, grams, a.gpu_model or b.gpu_model)


def _cloud_origins(
    direct: list[DirectCost], settled: dict[str, dict[LineId, list[Fraction]]], policy: Policy, period: Period
) -> list[_Origin]:
    spend = cloud_spend(direct, settled, period)

    def cloud(description: str, label: str) -> _Origin:
        return _Origin(
            start=period.start,
            end=period.end,
            cluster="",
            resource="",
            resource_name="",
            resource_type="",
            description=description,
            tags={},
            service=("Other", "Other (Other)", label),
        )

    origins = []
    weights = share_out(spend.allocated, Fraction(1), policy.shared.split)
    for label, amount in sorted(spend.shared.items()):
        origin = cloud(f"Cloud charge shared by every line: {label}", label)
        for line, weight in weights.items():
            tags = tags_of(policy, line[1] if line[0] is LineKind.OWNER else None, None)
            origin.add(line, 2, amount * weight, _share("__cloud__", line, _shared_method(policy, line), tags))
        origins.append(origin)
    for (line, cost_center, label), amount in spend.owned.items():
        origin = cloud(f"Cloud spend outside the clusters: {label}", label)
        origin.fields["tags"] = tags_of(policy, spend.owners[(line, cost_center, label)], cost_center)
        origin.drafts.append(Draft(line=line, exact=[amount, Fraction(0), Fraction(0)], **origin.fields))  # type: ignore[arg-type]
        origins.append(origin)
    return origins


def _round(origins: list[_Origin], report: Report) -> bool:
    """Cents for every row: the table of origins by (line, column) rounded to the report's line
    figures, then each cell's cents over its rows by largest remainder; and each split row's
    ratio of its origin, to ``RATIO_PLACES`` decimals adding up to 1. False when the report's
    figures were out of reach and the lines are only within a cent of them."""
    columns = [((line.kind, line.owner), k) for line in report.lines for k in range(3)]
    targets = [int(figure * 100) for line in report.lines for figure in (line.allocated, line.idle, line.shared)]
    index = {column: j for j, column in enumerate(columns)}
    for origin in origins:  # a line the report leaves out (its parts net to zero over the month): zero
        for draft in origin.drafts:
            for k in range(3):
                if (draft.line, k) not in index:
                    index[(draft.line, k)] = len(columns)
                    columns.append((draft.line, k))
                    targets.append(0)
    table = []
    for origin in origins:
        exact = [Fraction(0)] * len(columns)
        for draft in origin.drafts:
            for k, amount in enumerate(draft.exact):
                if amount:
                    exact[index[(draft.line, k)]] += amount / MICROS_PER_CENT
        table.append(exact)
    try:
        cents, exact_lines = round_table(table, targets), True
    except ValueError:  # see the module docstring: rare, and said in the export's note
        cents, exact_lines = round_table(table), False
    for origin, row in zip(origins, cents, strict=True):
        cells: dict[tuple[LineId, int], list[Draft]] = defaultdict(list)
        for draft in origin.drafts:
            k = next((k for k, amount in enumerate(draft.exact) if amount), 0)
            cells[(draft.line, k)].append(draft)
        for (line, k), drafts in cells.items():
            values = [draft.exact[k] / MICROS_PER_CENT for draft in drafts]
            for draft, share in zip(drafts, largest_remainder(values, row[index[(line, k)]]), strict=True):
                draft.cents[k] = share
        _ratios(origin)
    return exact_lines


def _ratios(origin: _Origin) -> None:
    """Each split row's ratio of its origin, to ``RATIO_PLACES`` decimals adding up to 1; and
    its part of what each commitment covered of the origin, in cents adding up to it."""
    split = [draft for draft in origin.drafts if draft.split is not None] or origin.drafts
    if not split:
        return
    total = sum((sum(draft.exact) for draft in split), Fraction(0))
    exact = [sum(draft.exact) / total if total else Fraction(1, len(split)) for draft in split]
    if split[0].split is not None:
        scale = 10**RATIO_PLACES
        for draft, units in zip(split, largest_remainder([r * scale for r in exact], scale), strict=True):
            draft.ratio = Decimal(units).scaleb(-RATIO_PLACES)
    for commitment, amount in sorted(origin.commitments.items()):
        cents = amount / MICROS_PER_CENT
        for draft, applied in zip(split, largest_remainder([r * cents for r in exact], round(cents)), strict=True):
            draft.applied[commitment] = applied
