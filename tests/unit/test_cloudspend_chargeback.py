"""We test these aspects of cloud spend in the chargeback (``finops.chargeback.DirectCost``):

- a direct cost is added to its owner's allocated cost (by team, by cost centre); untagged spend
  goes on ``__unallocated__``; by namespace everything goes on one ``__cloud__`` line;
- it receives no idle or shared cost and changes nothing any other line receives: the method's
  example gives the same shares with cloud spend added;
- a team with only cloud spend gets a line of its own, and its share of the tax and support
  charges (proportional or even, values by hand);
- only the part of a charge inside the period counts, prorated exactly by time; a moment counts
  whole inside the period and not at all outside;
- on generated data (hypothesis, the generators of ``test_chargeback_properties``): with direct
  costs too, the report adds up to the exact total of everything rounded half-even, the lines and
  columns add up, and every line's idle and shared are those of the report without direct costs
  (within a cent: rounding may settle a tie the other way).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tests.unit.test_chargeback_properties as base
from finops.chargeback import CostRow, DirectCost, IdleRow, LineKey, LineKind, Period, Report, allocate
from finops.policy import Policy, parse_policy

M = 1_000_000
OCTOBER = Period(datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
TEAMS = [
    CostRow("prod", "payments", "payments", "cc-1", 4000 * M),
    CostRow("prod", "catalog", "catalog", "cc-2", 2000 * M),
    CostRow("prod", "analytics", "analytics", "cc-2", 1000 * M),
]
IDLE = [IdleRow("prod", 1000 * M)]


def policy(**overrides: object) -> Policy:
    return parse_policy(
        {"currency": "EUR", "shared": {"fixed": [{"name": "shared", "amount": "2000.00"}]}, **overrides}
    )


def figures(report: Report) -> list[tuple[str, str, str, str, str, str]]:
    return [
        (li.kind.value, li.owner, str(li.allocated), str(li.idle), str(li.shared), str(li.total)) for li in report.lines
    ]


def test_cloud_spend_goes_on_its_owner_and_receives_nothing() -> None:
    direct = [
        DirectCost("payments", "cc-1", 300 * M, "Amazon RDS"),
        DirectCost(None, None, 40 * M, "AWS Data Transfer"),
        DirectCost("search", "cc-3", 7_500_000, "Amazon OpenSearch Service"),
    ]
    report = allocate(TEAMS, IDLE, policy(), period=OCTOBER, direct=direct)
    assert figures(report) == [
        ("owner", "payments", "4300.00", "0.00", "1142.86", "5442.86"),
        ("owner", "catalog", "2000.00", "0.00", "571.43", "2571.43"),
        ("owner", "analytics", "1000.00", "0.00", "285.71", "1285.71"),
        ("owner", "search", "7.50", "0.00", "0.00", "7.50"),
        ("unallocated", "__unallocated__", "40.00", "0.00", "0.00", "40.00"),
        ("idle", "platform", "0.00", "1000.00", "0.00", "1000.00"),
    ]
    assert report.total == Decimal("10347.50")
    assert report.clusters == ("prod",)


def test_option_a_spreads_idle_over_the_cluster_only() -> None:
    direct = [DirectCost("payments", None, 7000 * M)]
    without = allocate(TEAMS, IDLE, policy(idle="distribute"), period=OCTOBER)
    report = allocate(TEAMS, IDLE, policy(idle="distribute"), period=OCTOBER, direct=direct)
    assert [(li.owner, li.idle, li.shared) for li in report.lines] == [
        (li.owner, li.idle, li.shared) for li in without.lines
    ]
    assert report.lines[0].total == Decimal("12714.29")


def test_lines_by_cost_center_and_namespace() -> None:
    direct = [DirectCost("payments", "cc-1", 300 * M), DirectCost("search", None, 5 * M), DirectCost(None, None, M)]
    by_cc = allocate(TEAMS, IDLE, policy(), period=OCTOBER, by="cost-center", direct=direct)
    assert [(li.kind.value, li.owner, str(li.allocated)) for li in by_cc.lines] == [
        ("owner", "cc-1", "4300.00"),
        ("owner", "cc-2", "3000.00"),
        ("unallocated", "__unallocated__", "6.00"),
        ("idle", "platform", "0.00"),
    ]
    by_ns = allocate(
        [*TEAMS, CostRow("prod", "scratch", None, None, M)],
        IDLE,
        policy(),
        period=OCTOBER,
        by=LineKey.NAMESPACE,
        direct=direct,
    )
    assert [(li.kind.value, li.owner, str(li.allocated), str(li.shared)) for li in by_ns.lines][-3:] == [
        ("owner", "scratch", "1.00", "0.29"),
        ("cloud", "__cloud__", "306.00", "0.00"),
        ("idle", "platform", "0.00", "0.00"),
    ]


@pytest.mark.parametrize(
    ("start", "end", "counted"),
    [
        (datetime(2026, 9, 30, 12, tzinfo=UTC), datetime(2026, 10, 1, 12, tzinfo=UTC), "12.00"),  # half inside
        (datetime(2026, 10, 31, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC), "8.00"),  # a third inside
        (datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC), "8.18"),  # 31 of 91 days
        (datetime(2026, 10, 5, tzinfo=UTC), datetime(2026, 10, 6, tzinfo=UTC), "24.00"),
        (datetime(2026, 10, 31, 23, tzinfo=UTC), datetime(2026, 10, 31, 23, tzinfo=UTC), "24.00"),  # a moment
    ],
)
def test_a_charge_counts_for_its_part_inside_the_period(start: datetime, end: datetime, counted: str) -> None:
    report = allocate(
        [], [], policy(shared={}), period=OCTOBER, direct=[DirectCost("payments", None, 24 * M, "x", start, end)]
    )
    assert [(li.owner, str(li.total)) for li in report.lines if li.kind is LineKind.OWNER] == [("payments", counted)]


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)),
        (datetime(2026, 9, 30, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC)),  # ends where October starts
        (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)),  # a moment just after
    ],
)
def test_a_charge_outside_the_period_makes_no_line(start: datetime, end: datetime) -> None:
    report = allocate(
        [], [], policy(shared={}), period=OCTOBER, direct=[DirectCost("payments", None, 24 * M, "x", start, end)]
    )
    assert report.lines == ()  # no cluster, so no idle line either
    assert report.total == Decimal("0.00")


def test_a_direct_cost_is_checked() -> None:
    with pytest.raises(ValueError, match="needs both start and end"):
        DirectCost("a", None, 1, start=datetime(2026, 10, 1, tzinfo=UTC))
    with pytest.raises(ValueError, match="ends before it starts"):
        DirectCost("a", None, 1, start=datetime(2026, 10, 2, tzinfo=UTC), end=datetime(2026, 10, 1, tzinfo=UTC))
    with pytest.raises(ValueError, match="timezone-aware"):
        DirectCost("a", None, 1, start=datetime(2026, 10, 1), end=datetime(2026, 10, 2))
    with pytest.raises(ValueError, match="whole micros"):
        DirectCost("a", None, 1.5)  # type: ignore[arg-type]
    assert DirectCost("a", None, Decimal(3)).amount_micros == 3  # type: ignore[arg-type]


@st.composite
def direct_costs(draw: st.DrawFn) -> DirectCost:
    owner = draw(st.sampled_from([None, "payments", "catalog", "cloud-only"]))
    cost_center = draw(st.sampled_from([None, "cc-1", "cc-9"]))
    amount = draw(base.amounts)
    if draw(st.booleans()):
        return DirectCost(owner, cost_center, amount)
    start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=draw(st.integers(0, 60 * 24 * 520)))
    return DirectCost(
        owner, cost_center, amount, "svc", start, start + timedelta(minutes=draw(st.integers(0, 60 * 24 * 40)))
    )


def exact_part(cost: DirectCost, period: Period) -> Fraction:
    """Worked out independently, in seconds."""
    if cost.start is None or cost.end is None:
        return Fraction(cost.amount_micros)
    if cost.start == cost.end:
        return Fraction(cost.amount_micros if period.start <= cost.start < period.end else 0)
    inside = (min(cost.end, period.end) - max(cost.start, period.start)).total_seconds()
    return cost.amount_micros * Fraction(max(0, int(inside)), int((cost.end - cost.start).total_seconds()))


@given(
    rows=st.lists(base.cost_rows, max_size=20),
    idle=st.lists(base.idle_rows, max_size=4),
    direct=st.lists(direct_costs(), max_size=8),
    policy=base.policies,
    period=base.periods(),
    by=st.sampled_from(LineKey),
)
def test_every_report_with_cloud_spend_adds_up(
    rows: list[CostRow], idle: list[IdleRow], direct: list[DirectCost], policy: Policy, period: Period, by: LineKey
) -> None:
    report = allocate(rows, idle, policy, period=period, by=by, direct=direct)
    columns = base.exact_columns(rows, idle, policy, period)
    columns[0] += base.cents(sum((exact_part(cost, period) for cost in direct), Fraction(0)))
    assert report.total * 100 == round(sum(columns))
    assert sum((line.total for line in report.lines), Decimal(0)) == report.total
    for line in report.lines:
        assert line.allocated + line.idle + line.shared == line.total
    assert base.near(report.allocated, columns[0])
    assert base.near(report.idle, columns[1])
    assert base.near(report.shared, columns[2])
    without = {(li.kind, li.owner): li for li in allocate(rows, idle, policy, period=period, by=by).lines}
    for line in report.lines:
        before = without.get((line.kind, line.owner))
        if before is None:  # a line of cloud spend only
            assert (line.idle, line.shared) == (Decimal("0.00"), Decimal("0.00"))
            assert line.kind in (LineKind.OWNER, LineKind.UNALLOCATED, LineKind.CLOUD)
        else:
            assert abs(line.idle - before.idle) <= Decimal("0.01")
            assert abs(line.shared - before.shared) <= Decimal("0.01")


@given(
    rows=st.lists(base.cost_rows, max_size=20),
    idle=st.lists(base.idle_rows, max_size=4),
    direct=st.lists(direct_costs(), max_size=8),
    taxes=st.lists(base.amounts, min_size=1, max_size=3),
    policy=base.policies,
    period=base.periods(),
    by=st.sampled_from(LineKey),
)
def test_shared_cloud_charges_go_to_the_shared_column_of_the_lines_with_cost(
    rows: list[CostRow],
    idle: list[IdleRow],
    direct: list[DirectCost],
    taxes: list[int],
    policy: Policy,
    period: Period,
    by: LineKey,
) -> None:
    shared = [DirectCost(None, None, amount, "tax", shared=True) for amount in taxes]
    report = allocate(rows, idle, policy, period=period, by=by, direct=[*direct, *shared])
    columns = base.exact_columns(rows, idle, policy, period)
    columns[0] += base.cents(sum((exact_part(cost, period) for cost in direct), Fraction(0)))
    columns[2] += base.cents(Fraction(sum(taxes)))
    assert report.total * 100 == round(sum(columns))
    assert base.near(report.allocated, columns[0])  # nobody's allocated cost moves
    assert base.near(report.shared, columns[2])  # the charges are all in the shared column
    receivers = (LineKind.OWNER, LineKind.UNALLOCATED, LineKind.CLOUD, LineKind.SHARED)
    before = {
        (li.kind, li.owner): li.shared for li in allocate(rows, idle, policy, period=period, by=by, direct=direct).lines
    }
    for line in report.lines:
        if line.kind not in receivers:
            assert line.shared == before[(line.kind, line.owner)]


@pytest.mark.parametrize("split", ["proportional", "even"])
def test_a_team_with_only_cloud_spend_receives_its_share_of_tax_and_support(split: str) -> None:
    # payments: 4000 in the cluster; search: 1000 of cloud spend only. Tax 50 and support 25
    # (75) are spread over both lines: 4000:1000 proportionally (60 and 15), or 37.50 each.
    rows = [CostRow("prod", "payments", "payments", "cc-1", 4000 * M)]
    direct = [
        DirectCost("search", "cc-3", 1000 * M, "Amazon OpenSearch Service"),
        DirectCost(None, None, 50 * M, "tax", shared=True),
        DirectCost(None, None, 25 * M, "AWS Support (Business)", shared=True),
    ]
    report = allocate(
        rows, [], parse_policy({"currency": "EUR", "shared": {"split": split}}), period=OCTOBER, direct=direct
    )
    payments, search = ("60.00", "15.00") if split == "proportional" else ("37.50", "37.50")
    assert figures(report) == [
        ("owner", "payments", "4000.00", "0.00", payments, str(4000 + Decimal(payments))),
        ("owner", "search", "1000.00", "0.00", search, str(1000 + Decimal(search))),
        ("idle", "platform", "0.00", "0.00", "0.00", "0.00"),
    ]
    assert report.total == Decimal("5075.00")
