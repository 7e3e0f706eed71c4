"""We test FOCUS 1.3 split from a reconciled bill (``finops.focus_split.bill_origins``) on
generated months (hypothesis): nodes and namespaces over two days (shared namespaces and
relabels included), any policy, bills with usage per node (part of it covered by a commitment),
discounts (spread or shared) carrying the commitment, a tax and a line matching no resource.

- every origin charge (a node's billed day, the day's disks, a day left on estimate, a bill line)
  is split into rows adding up to its exact amount, within a cent (exactly when whole cents),
  whose ratios add up to exactly 1; the expected amounts are read from the reconciliation's own
  origins, which ``tests/unit/test_reconciliation.py`` proves add up to the bill;
- grouped by line the rows are the chargeback report on the bill, to the cent (or within a cent,
  said in the note);
- a commitment's applied cost on the rows of an origin adds up, in cents, to what it covered.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

import tests.unit.test_chargeback_properties as base
from finops.bill_lines import ResourceIndex, assign
from finops.commitments import parse_commitments
from finops.focus import build_focus
from finops.policy import IdlePolicy, Policy
from finops.reconcile_policy import Basis, DiscountRule, Reconciliation
from finops.reconciliation import Asset, BillCharge, EstimateRow, reconcile
from tests.unit.test_focus import NOVEMBER, assert_itemises

DAYS = (date(2026, 11, 1), date(2026, 11, 2))
NODES = {"node-a": "aws:///eu-west-1a/i-0aaa", "node-b": "aws:///eu-west-1b/i-0bbb"}
DISK = "aws:///eu-west-1a/vol-0ccc"
PLAN = "sp-1"
COMMITMENTS = parse_commitments(
    [{"id": PLAN, "category": "spend", "type": "Savings Plan", "start": "2026-01-01T00:00:00Z",
      "end": "2027-01-01T00:00:00Z", "cost": "1000.00"}],
    "commitments",
)  # fmt: skip

rows = st.lists(
    st.builds(
        EstimateRow,
        day=st.sampled_from(DAYS),
        node=st.sampled_from([*NODES, ""]),
        namespace=st.sampled_from([*base.NAMESPACES, ""]),
        owner=st.sampled_from([None, "checkout", "search"]),
        cost_center=st.sampled_from([None, "cc-1"]),
        entry_kind=st.sampled_from(["workload", "workload", "idle", "unmounted"]),
        total_micros=st.integers(0, 10**9),
        pv_micros=st.integers(0, 10**7),
        lb_micros=st.just(0),
        other_micros=st.just(0),
    ),
    max_size=12,
)
charges = st.lists(
    st.tuples(
        st.sampled_from(["i-0aaa", "i-0bbb", "vol-0ccc", "nat-1", None]),
        st.integers(-(10**8), 10**10),
        st.sampled_from(["usage", "usage", "discount", "tax"]),
        st.sampled_from(DAYS),
        st.booleans(),  # the plan covers it
    ),
    min_size=1,
    max_size=8,
)


def charge(resource: str | None, amount: int, category: str, day: date, covered: bool, n: int) -> BillCharge:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    tags = {"eks:cluster-name": "demo"}
    return BillCharge(f"bill#{n}", start, start + timedelta(days=1), amount, None, category, resource, "111", tags,
                      PLAN if covered else None)  # fmt: skip


def origin_key(resource: str, start: str, description: str) -> tuple[str, str]:
    if description.startswith("Bill line "):
        return ("line", description.removeprefix("Bill line ").partition(" of cluster")[0])
    return (resource, start)


@settings(max_examples=150, deadline=None)
@given(estimate=rows, bill=charges, policy=base.policies, rule=st.sampled_from(DiscountRule), late=st.booleans())
def test_every_billed_charge_is_split_exactly(
    estimate: list[EstimateRow], bill: list[tuple], policy: Policy, rule: DiscountRule, late: bool
) -> None:
    lines = [charge(*item, n) for n, item in enumerate(bill) if not (late and item[3] == DAYS[1])]
    lines.append(charge("i-0aaa", 1, "usage", DAYS[0], False, len(bill)))  # the first day is billed
    assets = [Asset(day, "node", name, provider, 10**8) for day in DAYS for name, provider in NODES.items()]
    assets += [Asset(day, "disk", "pv-1", DISK, 10**6) for day in DAYS]
    reconciliation = Reconciliation(discounts=rule, commitments=COMMITMENTS)
    mine, _ = assign(lines, ResourceIndex({"demo": assets}), reconciliation, frozenset({"demo"}))
    done = reconcile("demo", DAYS, estimate, assets, mine.get("demo", []), reconciliation, Basis.BILLED)
    policy = replace(policy, reconciliation=reconciliation)

    export = build_focus((), policy, period=NOVEMBER, reconciled=[done])
    assert_itemises(export, export.report)

    expected: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    covered: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    suffix = {"disk": "demo/__volumes__", "load_balancer": "demo/__load_balancers__", "estimate": "demo"}
    for origin in done.origins:
        start = origin.start.isoformat().replace("+00:00", "Z")
        key = ("line", origin.name) if origin.kind not in (*suffix, "node") else (
            origin.provider_id if origin.kind == "node" else suffix[origin.kind], start)  # fmt: skip
        expected[key] += origin.amount / 10_000
        covered[key] += origin.commitments.get(PLAN, Fraction(0)) / 10_000
    for fixed in policy.shared.fixed:
        if fixed.applies_to("demo"):
            expected[(f"demo/{fixed.name}", "2026-11-01T00:00:00Z")] += Fraction(fixed.amount_micros, 10_000)

    found: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in export.rows():
        if row["x_Cluster"] == "demo":
            found[origin_key(row["ResourceId"], row["ChargePeriodStart"], row["ChargeDescription"])].append(row)
    for key, mine_rows in found.items():
        exact = expected.pop(key)
        cents = sum(Fraction(Decimal(r["BilledCost"])) * 100 for r in mine_rows)
        assert abs(cents - exact) < 1, (key, cents, exact)
        if exact.denominator == 1:
            assert cents == exact, key
        split = [r for r in mine_rows if r["AllocatedMethodDetails"]]
        if split:
            ratios = [json.loads(r["AllocatedMethodDetails"], parse_float=Decimal)["Elements"][0] for r in split]
            assert sum(element["AllocatedRatio"] for element in ratios) == 1
        applied = sum(
            Fraction(
                json.loads(r["ContractApplied"], parse_float=Decimal)["Elements"][0]["ContractCommitmentAppliedCost"]
            )
            * 100
            for r in mine_rows
            if r["ContractApplied"]
        )
        if covered[key] and mine_rows:
            assert abs(applied - covered[key]) < 1, (key, applied, covered[key])
    assert not [key for key, exact in expected.items() if exact], expected  # every charge with money has rows


def split_of(estimate: list[EstimateRow], lines: list[BillCharge], policy: Policy) -> dict[tuple[str, str], Decimal]:
    """The export's rows added up by origin charge."""
    assets = [Asset(day, "node", "node-a", NODES["node-a"], 10**8) for day in DAYS]
    reconciliation = replace(policy.reconciliation, commitments=COMMITMENTS)
    mine, _ = assign(lines, ResourceIndex({"demo": assets}), reconciliation, frozenset({"demo"}))
    done = reconcile("demo", DAYS, estimate, assets, mine["demo"], reconciliation, Basis.BILLED)
    export = build_focus((), replace(policy, reconciliation=reconciliation), period=NOVEMBER, reconciled=[done])
    assert_itemises(export, export.report)
    found: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for row in export.rows():
        found[origin_key(row["ResourceId"], row["ChargePeriodStart"], row["ChargeDescription"])] += Decimal(
            row["BilledCost"]
        )
    return dict(found)


def test_a_node_day_keeps_its_idle_when_the_months_idle_is_zero() -> None:
    # node-a billed 1.00 a day; its namespace used half the node on day 1 and one and a half on
    # day 2: idle +0.50 then -0.50, the month's idle 0. Each day's rows still add up to 1.00.
    estimate = [
        EstimateRow(DAYS[0], "node-a", "shop", "checkout", None, "workload", 5 * 10**7, 0, 0, 0),
        EstimateRow(DAYS[1], "node-a", "shop", "checkout", None, "workload", 15 * 10**7, 0, 0, 0),
    ]
    lines = [charge("i-0aaa", 10**6, "usage", day, False, n) for n, day in enumerate(DAYS)]
    for idle in ("separate", "distribute"):
        policy = Policy(currency="EUR", idle=IdlePolicy(idle))
        found = split_of(estimate, lines, policy)
        assert found == {(NODES["node-a"], f"{day}T00:00:00Z"): Decimal("1.00") for day in DAYS}, idle


def test_a_discount_is_one_charge_when_part_of_it_finds_no_cost() -> None:
    # -2.00 over both days; only day 1 has cost: -1.00 is spread there, -1.00 joins the shared
    # pool, and the line is one origin of -2.00 whose commitment covered all of it.
    estimate = [EstimateRow(DAYS[0], "node-a", "shop", "checkout", None, "workload", 10**8, 0, 0, 0)]
    start = datetime(2026, 11, 1, tzinfo=UTC)
    discount = BillCharge("neg", start, start + timedelta(days=2), -2 * 10**6, None, "discount", None, "111",
                          {"eks:cluster-name": "demo"}, PLAN)  # fmt: skip
    lines = [charge("i-0aaa", 3 * 10**6, "usage", DAYS[0], False, 1), discount]
    found = split_of(estimate, lines, Policy(currency="EUR"))
    assert found[("line", "neg")] == Decimal("-2.00")
