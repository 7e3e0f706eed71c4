"""A month's chargeback as FOCUS rows (FinOps Open Cost and Usage Specification), itemised, in
version 1.3 or 1.2: every column of the version with allowed values (``finops.focus_rows``;
checked by ``tests/focus_conformance.py``, written from the column definitions).

In 1.3 the rows are split cost allocation: each origin charge shared out (``finops.focus_split``
says which charges and how): the estimate's cluster-days, or, on a bill basis, the imported bill's
lines (node-days, disks, discounts, taxes) with the commitments they apply. This module builds
1.2's rows, and settles the report both build on.

The file is the chargeback report (by team) broken down into rows; grouping it by ``x_LineKind``
and ``x_Owner`` gives the report's lines back to the cent, column by column, and the sum of
``BilledCost`` is the report's total. What each 1.2 row stands for:

- **allocated cost**: one row per day, cluster, namespace and owner (``ChargePeriod`` is the UTC
  day; ``ResourceId`` is ``<cluster>/<namespace>``, ``__unmounted__`` for cost without a
  namespace; ``ConsumedQuantity`` is the billed core-hours, max(request, usage)). A namespace
  relabelled during a day has a row per owner. A namespace listed in ``policy.shared.namespaces``
  has no rows of its own: its cost is shared cost, and appears in the rows below;
- **overhead received**: one row per cluster and line that receives idle (option A) or shared
  cost there, ``ChargePeriod`` the whole month and ``ResourceId`` ``<cluster>/__overhead__``. The
  policy settles overhead over the period, in proportion to the period's allocated cost, so a
  daily split would be invented, not measured;
- **idle line** (option B, or idle without receivers): one row per day and cluster,
  ``ResourceId`` ``<cluster>/__idle__``, owned by ``policy.idle_owner`` (``x_LineKind`` ``idle``,
  distinct from the same team's own namespaces);
- **shared without receivers** (``__shared__``): one row per cluster for the month,
  ``<cluster>/__shared__``;
- **cloud spend** (direct costs, when given): one row per owner, cost centre and service for the
  month (the part of each charge inside it), with no cluster: ``ServiceName`` is the cloud
  service, ``ServiceCategory`` ``Other``.

What our FOCUS columns mean (an empty CSV field is null; nothing else stands for null):

- ``ChargeCategory``: ``Usage`` for the rows measured in core-hours (allocated cost, the idle
  line); ``Adjustment`` for overhead received, shared cost without receivers and cloud spend:
  FOCUS requires a pricing quantity on every ``Usage`` row, and these rows have none (overhead is
  a share of money, cloud spend arrives without its quantity). ``ChargeClass`` is always null: an
  export restates a month, it never corrects an invoiced one row by row.
- ``PricingQuantity``/``PricingUnit`` and ``ConsumedQuantity``/``ConsumedUnit``: the billed
  core-hours, max(request, usage), in ``Core-Hours``, on ``Usage`` rows; null on the others
  (``PricingCategory`` ``Standard`` on them). 1.3 leaves these null, as FOCUS 1.3 requires without
  a ``SkuPriceId``; ``x_CoreHours`` has the core-hours in both versions.
- ``BilledCost`` = ``EffectiveCost`` = ``ListCost`` = ``ContractedCost``: the cluster's prices
  come from the bill after discounts, and no list or contracted unit price is known, so FOCUS's
  rule for a charge without unit prices (each cost equals the billed cost) applies;
  ``x_AllocatedCost`` + ``x_IdleCost`` + ``x_SharedCost`` = ``BilledCost`` on each row. On a bill
  basis all four are the export's basis: the bill's billed cost, or its effective (amortised)
  cost on ``amortised``; rows split from a bill line keep its category (``Credit`` for a discount,
  ``Tax``, ``Purchase`` for support and commitment fees) and carry ``ContractApplied`` when a
  commitment covered it (``finops.focus_split``, ``finops.commitments``).
- ``InvoiceIssuerName`` (who charges for the row): ``issuer``, the platform team running the
  chargeback (``build_focus``'s argument, ``Kubernetes`` by default), on every row: the export is
  its chargeback, cloud spend included. ``ProviderName`` (who makes the resources available) is
  ``issuer`` too and ``PublisherName`` (who produces them) ``Kubernetes`` on cluster rows; on cloud
  spend both are ``Cloud``, since an import does not keep the report's provider. 1.3's
  ``ServiceProviderName`` and ``HostProviderName`` are ``ProviderName``'s value.
- ``BillingAccountId``/``BillingAccountName``, ``SubAccountId``/``SubAccountName`` and
  ``x_Cluster``: the cluster, of type ``Kubernetes Cluster`` (cloud spend: account ``__cloud__``,
  named ``cloud spend``, of type ``Cloud Spend``, no sub-account or cluster).
- ``ServiceCategory``/``ServiceSubcategory``/``ServiceName``: ``Compute``/``Containers``/
  ``Kubernetes`` for cluster rows, ``Other``/``Other (Other)`` and the cloud service for cloud
  spend. ``ResourceType`` names what ``ResourceId`` is (``Kubernetes Namespace``...).
- ``Tags``: a JSON object with the policy's owner and cost-centre label keys and ``namespace``
  (an overhead row carries the cost centre when the owner has one in that cluster).

- ``x_GpuHours``, ``x_GpuModel``, ``x_CarbonGramsCO2e`` (``finops.focus_rows.Extras``, on the
  estimate): a namespace's billed GPU-hours and grams CO2e on its rows; a GPU model's idle on rows
  of its own (``x_GpuModel``; ``focus_origins.with_extras`` splits it from the day's idle); the
  nodes' idle grams on the idle rows. In 1.3 an idle or shared pile's grams and GPU-hours follow
  its money's rows (``focus_split._spread``); 1.2's month of overhead carries none. Null: not
  measured, never 0.

Amounts have two decimals, in the policy's currency (ISO 4217); timestamps are ISO 8601 UTC
(``2026-10-01T00:00:00Z``), periods half-open. Columns FOCUS defines come first, ours (``x_``)
last.

Rounding: the rows of one report line share out that line's rounded allocated, idle and shared
figures by largest remainder (``finops.rounding``), so no money is made or lost by itemising and
each row is within a cent of exact in each column.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from finops.chargeback import (
    MICROS_PER_CENT,
    CostRow,
    IdleRow,
    Period,
    Report,
    allocate,
    billed_inputs,
    line_of,
    settle,
)
from finops.commitments import CommitmentDataset, contract_of
from finops.directcosts import DirectCost, cloud_spend, share_out
from finops.errors import InvalidInput
from finops.focus_origins import DailyCost as DailyCost  # re-exported: the exports build these
from finops.focus_origins import bill_origins, estimate_origins
from finops.focus_rows import COLUMNS as COLUMNS  # re-exported: the exports write these
from finops.focus_rows import DATETIMES, DECIMALS, Draft, Extras, FocusVersion, record
from finops.focus_split import UNMOUNTED, LineTags, split_drafts, tags_of
from finops.lines import LineId, LineKey, LineKind
from finops.periods import day_span
from finops.policy import Policy
from finops.reconciliation import ClusterReconciliation
from finops.rounding import largest_remainder

DEFAULT_ISSUER = "Kubernetes"
_KIND_ORDER = {kind: i for i, kind in enumerate(LineKind)}


@dataclass(frozen=True)
class FocusExport:
    """The rows, rounded, and the chargeback report they itemise; ``rows()`` writes them out in
    ``version``'s columns (``COLUMNS[version]`` to strings), one at a time."""

    drafts: tuple[Draft, ...]
    report: Report
    policy: Policy
    issuer: str = DEFAULT_ISSUER
    version: FocusVersion = FocusVersion.V1_3
    note: str | None = None  # finops.focus_split.LINES_NOTE when the lines are not the report's to the cent

    def rows(self) -> Iterator[dict[str, str]]:
        for draft in self.drafts:
            yield record(draft, self.policy, self.report.period, self.issuer, self.version)

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS[self.version]

    decimals = DECIMALS
    datetimes = DATETIMES

    def commitments(self) -> CommitmentDataset:
        """The Contract Commitment dataset of the commitments the rows name (1.3's
        ``ContractApplied``); empty when none does."""
        named = {ident for draft in self.drafts for ident in draft.applied}
        listed = tuple(contract_of(self.policy.reconciliation.commitments, ident) for ident in sorted(named))
        return CommitmentDataset(listed, self.policy.currency)


def build_focus(
    daily: Iterable[DailyCost],
    policy: Policy,
    *,
    period: Period,
    clusters: Collection[str] | None = None,
    direct: Iterable[DirectCost] = (),
    issuer: str = DEFAULT_ISSUER,
    version: FocusVersion = FocusVersion.V1_3,
    reconciled: Sequence[ClusterReconciliation] | None = None,
) -> FocusExport:
    """The FOCUS rows of the period's chargeback by team (module docstring); ``issuer`` names the
    provider and invoice issuer of the cluster rows. With ``reconciled`` (the clusters on a bill
    basis, ``finops.reconciliation``) the origin charges are the bill's, and ``daily`` is unused:
    1.3 only, since 1.2 has no split rows to show them."""
    direct = [cost for cost in direct if cost.overlaps(period)]
    # One order whatever the reader's (a database's collation, an engine's hash table): the cents
    # that rounding moves between rows of equal remainders go to the same rows.
    daily = sorted(daily, key=lambda d: (d.day, d.cluster, d.namespace, d.is_idle, d.owner or "", d.cost_center or "",
                                         d.gpu_model or "", d.micros, d.core_hours))  # fmt: skip
    bills = None
    if reconciled is None:
        rows = [CostRow(d.cluster, d.namespace, d.owner, d.cost_center, d.micros) for d in daily if not d.is_idle]
        idle = [IdleRow(d.cluster, d.micros) for d in daily if d.is_idle]
    elif version is FocusVersion.V1_3:
        inputs = billed_inputs(reconciled)
        rows, idle, bills = inputs.rows, inputs.idle, inputs.bills
    else:
        raise InvalidInput(
            "a FOCUS 1.2 export stands on the estimate (--basis estimate): a bill basis needs --focus-version 1.3"
        )
    report = allocate(rows, idle, policy, period=period, by=LineKey.TEAM, clusters=clusters, direct=direct, bills=bills)
    settled = settle(rows, idle, policy, period=period, by=LineKey.TEAM, clusters=clusters, bills=bills)
    note = None
    if version is FocusVersion.V1_2:
        drafts = _allocated(daily, policy) + _overhead(settled, daily, rows, policy, period)
        drafts += _direct(direct, settled, policy, period)
        _round(drafts, report)
    else:
        origins = estimate_origins(daily) if reconciled is None else bill_origins(reconciled)
        drafts, note = split_drafts(rows, origins, settled, direct, policy, period, report)
    drafts.sort(key=_order)
    return FocusExport(tuple(drafts), report, policy, issuer, version, note)


def _order(d: Draft) -> tuple[object, ...]:
    """By period, cluster, line and resource; a line's own cost before its shares of overhead."""
    column = next((k for k, amount in enumerate(d.exact) if amount), 0)
    recipient = (d.split.resource or "") if d.split else ""
    return (d.start, d.end, d.cluster, _KIND_ORDER[d.line[0]], d.line[1], d.resource, column, recipient)


def _allocated(daily: list[DailyCost], policy: Policy) -> list[Draft]:
    shared = set(policy.shared.namespaces)
    drafts = []
    for d in daily:
        if d.is_idle or d.namespace in shared:
            continue
        start, end = day_span(d.day)
        namespace = d.namespace or UNMOUNTED
        drafts.append(
            Draft(
                line=line_of(CostRow(d.cluster, d.namespace, d.owner, d.cost_center, d.micros), LineKey.TEAM),
                exact=[Fraction(d.micros), Fraction(0), Fraction(0)],
                start=start,
                end=end,
                cluster=d.cluster,
                resource=f"{d.cluster}/{namespace}",
                resource_name=namespace,
                resource_type="Kubernetes Namespace" if d.namespace else "Kubernetes Cluster Resources",
                description=(
                    f"Namespace {namespace} in cluster {d.cluster}: billed max(request, usage)"
                    if d.namespace
                    else f"Volumes and load balancers without a namespace in cluster {d.cluster}"
                ),
                tags=tags_of(policy, d.owner, d.cost_center, d.namespace or None),
                quantity=d.core_hours,
                extras=Extras(d.gpu_hours, d.grams),
            )
        )
    return drafts


def _overhead(
    settled: dict[str, dict[LineId, list[Fraction]]],
    daily: list[DailyCost],
    rows: list[CostRow],
    policy: Policy,
    period: Period,
) -> list[Draft]:
    line_tags = LineTags(rows, policy)
    drafts = []
    for cluster, lines in settled.items():
        for line, (_, idle, shared) in lines.items():
            kind, owner = line
            if kind is LineKind.IDLE:
                for d in daily:
                    if d.is_idle and d.cluster == cluster:
                        start, end = day_span(d.day)
                        resource, name, description = (
                            f"{cluster}/__idle__",
                            "idle capacity",
                            (f"Idle capacity of cluster {cluster}: supplied, neither requested nor used"),
                        )
                        if d.gpu_model is not None:
                            resource, name = f"{cluster}/__idle__/gpu:{d.gpu_model}", f"idle {d.gpu_model} GPUs"
                            description = f"Idle {d.gpu_model} GPUs of cluster {cluster}: supplied, not used"
                        drafts.append(
                            Draft(
                                line=line,
                                exact=[Fraction(0), Fraction(d.micros), Fraction(0)],
                                start=start,
                                end=end,
                                cluster=cluster,
                                resource=resource,
                                resource_name=name,
                                resource_type="Kubernetes Idle Capacity",
                                description=description,
                                tags=tags_of(policy, owner, None),
                                quantity=d.core_hours,
                                extras=Extras(d.gpu_hours, d.grams, d.gpu_model),
                            )
                        )
                continue
            if not idle and not shared:
                continue
            if kind is LineKind.SHARED:
                resource, name = f"{cluster}/__shared__", "shared services"
                description = f"Shared services of cluster {cluster} with no allocated cost to spread them over"
                tags = {}
            else:
                resource, name = f"{cluster}/__overhead__", "idle and shared share"
                description = f"Share of cluster {cluster}'s {_piles(idle, shared)}, in proportion to allocated cost"
                tags = line_tags(cluster, line)
            drafts.append(
                Draft(
                    line=line,
                    exact=[Fraction(0), idle, shared],
                    start=period.start,
                    end=period.end,
                    cluster=cluster,
                    resource=resource,
                    resource_name=name,
                    resource_type="Kubernetes Shared Cost",
                    description=description,
                    tags=tags,
                )
            )
    return drafts


def _piles(idle: Fraction, shared: Fraction) -> str:
    return " and ".join(name for name, amount in (("idle capacity", idle), ("shared services", shared)) if amount)


def _direct(
    direct: list[DirectCost], settled: dict[str, dict[LineId, list[Fraction]]], policy: Policy, period: Period
) -> list[Draft]:
    spend = cloud_spend(direct, settled, period)
    pool = sum(spend.shared.values(), Fraction(0))
    shared = [
        Draft(
            line=line,
            exact=[Fraction(0), Fraction(0), amount],
            start=period.start,
            end=period.end,
            cluster="",
            resource="",
            resource_name="",
            resource_type="",
            description="Cloud charges shared by every line: tax, support, commitment fees",
            tags=tags_of(policy, line[1] if line[0] is LineKind.OWNER else None, None),
            service=("Other", "Other (Other)", "shared cloud charges"),
        )
        for line, amount in share_out(spend.allocated, pool, policy.shared.split).items()
    ]
    return shared + [
        Draft(
            line=line,
            exact=[amount, Fraction(0), Fraction(0)],
            start=period.start,
            end=period.end,
            cluster="",
            resource="",
            resource_name="",
            resource_type="",
            description=f"Cloud spend outside the clusters: {label}",
            tags=tags_of(policy, spend.owners[(line, cost_center, label)], cost_center),
            service=("Other", "Other (Other)", label),
        )
        for (line, cost_center, label), amount in spend.owned.items()
    ]


def _round(drafts: list[Draft], report: Report) -> None:
    """Give each row its cents: per line and column, the report's figure shared out over the
    line's rows by largest remainder."""
    of_line: dict[LineId, list[Draft]] = defaultdict(list)
    for draft in drafts:
        of_line[draft.line].append(draft)
    for line in report.lines:
        mine = of_line.pop((line.kind, line.owner), [])
        for column, figure in enumerate((line.allocated, line.idle, line.shared)):
            target = int(figure * 100)
            if not mine:
                if target:  # pragma: no cover - every line's cost arises in some row
                    raise RuntimeError(f"line {line.owner} has {figure} but no rows")
                continue
            values = [draft.exact[column] / MICROS_PER_CENT for draft in mine]
            for draft, cents in zip(mine, largest_remainder(values, target), strict=True):
                draft.cents[column] = cents
    if of_line:  # pragma: no cover - every row belongs to a line of the report
        raise RuntimeError(f"rows of lines missing from the report: {sorted(of_line)}")
