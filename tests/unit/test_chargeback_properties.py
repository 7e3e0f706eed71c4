"""We test these aspects of the chargeback allocation on generated data (hypothesis): random
clusters, namespaces, owners and amounts (zero, a few micros, large, credits, negative idle),
both idle options, both splits, lines by team, cost centre and namespace, whole and partial months:

- the report's total is the exact sum of the inputs (allocated + idle + prorated fixed costs)
  rounded half-even to the cent: no money is lost or made, owners or not;
- the lines add up to the total, and each line's allocated + idle + shared equals its total;
- each column adds up to its exact total within a cent, and every line within a cent of exact;
- a line that has cost in one cluster only never receives another cluster's shared or idle cost.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from finops.chargeback import CostRow, IdleRow, LineKey, LineKind, Period, allocate
from finops.policy import FixedCost, IdlePolicy, Policy, SharedCosts, SharedSplit

CLUSTERS = ["prod-eu", "prod-us", "dev"]
NAMESPACES = ["kube-system", "monitoring", "shop", "search", "payments", "scratch"]
amounts = st.one_of(
    st.just(0),
    st.integers(1, 20),  # a few micros
    st.integers(0, 10**12),  # up to a million currency units
    st.integers(-(10**6), 0),  # a credit
)
cost_rows = st.builds(
    CostRow,
    cluster=st.sampled_from(CLUSTERS),
    namespace=st.sampled_from(NAMESPACES),
    owner=st.sampled_from([None, "payments", "catalog", "platform"]),
    cost_center=st.sampled_from([None, "cc-1", "cc-2"]),
    allocated_micros=amounts,
)
idle_rows = st.builds(IdleRow, cluster=st.sampled_from(CLUSTERS), idle_micros=st.integers(-(10**10), 10**12))
policies = st.builds(
    Policy,
    currency=st.just("EUR"),
    idle=st.sampled_from(IdlePolicy),
    shared=st.builds(
        SharedCosts,
        namespaces=st.lists(st.sampled_from(NAMESPACES), unique=True, max_size=3).map(tuple),
        fixed=st.lists(
            st.builds(
                FixedCost,
                name=st.sampled_from(["control-plane", "lb", "logging"]),
                amount_micros=st.integers(0, 10**10),
                cluster=st.sampled_from([None, *CLUSTERS, "decommissioned"]),
            ),
            max_size=3,
        ).map(tuple),
        split=st.sampled_from(SharedSplit),
    ),
)


@st.composite
def periods(draw: st.DrawFn) -> Period:
    start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=draw(st.integers(0, 24 * 500)))
    if draw(st.booleans()):
        start = start.replace(day=1, hour=0)
        return Period(start, start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1))
    return Period(start, start + timedelta(hours=draw(st.integers(1, 24 * 70))))


def cents(micros: Fraction) -> Fraction:
    return micros / 10_000


def exact_columns(rows: list[CostRow], idle: list[IdleRow], policy: Policy, period: Period) -> list[Fraction]:
    """[allocated, idle, shared] of the whole report, exact, in cents: worked out independently."""
    shared = set(policy.shared.namespaces)
    covered = (
        {r.cluster for r in rows} | {i.cluster for i in idle} | {f.cluster for f in policy.shared.fixed if f.cluster}
    )
    fixed = sum(f.amount_micros * sum(1 for c in covered if f.cluster in (None, c)) for f in policy.shared.fixed)
    return [
        cents(Fraction(sum(r.allocated_micros for r in rows if r.namespace not in shared))),
        cents(Fraction(sum(i.idle_micros for i in idle))),
        cents(sum(r.allocated_micros for r in rows if r.namespace in shared) + fixed * period.months()),
    ]


def near(value: Decimal, exact: Fraction) -> bool:
    return math.floor(exact) <= value * 100 <= math.ceil(exact)


@given(
    rows=st.lists(cost_rows, max_size=25),
    idle=st.lists(idle_rows, max_size=4),
    policy=policies,
    period=periods(),
    by=st.sampled_from(LineKey),
)
def test_every_report_adds_up_to_the_bill(
    rows: list[CostRow], idle: list[IdleRow], policy: Policy, period: Period, by: LineKey
) -> None:
    report = allocate(rows, idle, policy, period=period, by=by)
    columns = exact_columns(rows, idle, policy, period)
    assert report.total * 100 == round(sum(columns))
    assert sum((line.total for line in report.lines), Decimal(0)) == report.total
    for line in report.lines:
        assert line.allocated + line.idle + line.shared == line.total
        assert line.total == line.total.quantize(Decimal("0.01"))
    assert report.allocated + report.idle + report.shared == report.total
    assert near(report.allocated, columns[0])
    assert near(report.idle, columns[1])
    assert near(report.shared, columns[2])


@given(
    rows=st.lists(cost_rows, max_size=15),
    idle=st.lists(idle_rows, max_size=3),
    policy=policies,
    by=st.sampled_from(LineKey),
)
def test_no_owner_loses_no_money(rows: list[CostRow], idle: list[IdleRow], policy: Policy, by: LineKey) -> None:
    unlabelled = [CostRow(r.cluster, r.namespace, None, None, r.allocated_micros) for r in rows]
    whole_month = Period(datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))
    report = allocate(unlabelled, idle, policy, period=whole_month, by=by)
    assert report.total * 100 == round(sum(exact_columns(unlabelled, idle, policy, whole_month)))
    if by is not LineKey.NAMESPACE:
        assert {line.kind for line in report.lines} <= {LineKind.UNALLOCATED, LineKind.SHARED, LineKind.IDLE}


@given(
    rows_a=st.lists(cost_rows, max_size=12),
    rows_b=st.lists(
        st.builds(
            CostRow,
            cluster=st.just("b"),
            namespace=st.sampled_from(["web", "db"]),
            owner=st.sampled_from(["b-web", "b-db", None]),
            cost_center=st.none(),
            allocated_micros=amounts,
        ),
        min_size=1,
        max_size=5,
    ),
    idle=st.lists(idle_rows, max_size=4),
    policy=policies,
)
def test_overhead_stays_in_its_cluster(
    rows_a: list[CostRow], rows_b: list[CostRow], idle: list[IdleRow], policy: Policy
) -> None:
    # Cluster b has no shared namespace, no fixed cost naming it and no idle; its teams run nowhere else.
    policy = Policy(
        currency="EUR",
        idle=policy.idle,
        shared=SharedCosts(
            namespaces=policy.shared.namespaces,
            fixed=tuple(f for f in policy.shared.fixed if f.cluster is not None),
            split=policy.shared.split,
        ),
    )
    report = allocate(
        [*rows_a, *rows_b],
        idle,
        policy,
        period=Period(datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)),
    )
    for line in report.lines:
        if line.owner.startswith("b-"):
            assert (line.idle, line.shared) == (Decimal("0.00"), Decimal("0.00"))
            exact = sum(r.allocated_micros for r in rows_b if r.owner == line.owner)
            assert near(line.total, cents(Fraction(exact)))
