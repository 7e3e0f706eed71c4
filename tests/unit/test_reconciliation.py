"""Reconciling a cluster's estimate to its bill (finops.reconciliation): each rule on a small
cluster computed by hand, and the totals against the bill for generated ones."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finops.bill_lines import ResourceIndex, assign
from finops.reconcile_policy import Basis, DiscountRule, Reconciliation
from finops.reconciliation import (
    IDLE_KEY,
    Asset,
    BillCharge,
    ClusterReconciliation,
    EstimateRow,
    ResourceVariance,
    reconcile,
)

D1, D2, D3 = date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)
M = 1_000_000  # micros per currency unit
NODE_A = "aws:///eu-west-1a/i-0aaa"
NODE_B = "aws:///eu-west-1b/i-0bbb"
DEFAULT = Reconciliation()


def at(day: date, hour: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour)


def row(
    day: date,
    node: str,
    namespace: str,
    owner: str | None,
    total: int,
    *,
    pv: int = 0,
    lb: int = 0,
    other: int = 0,
    kind: str = "workload",
    cc: str | None = None,
) -> EstimateRow:
    return EstimateRow(day, node, namespace, owner, cc, kind, total, pv, lb, other)


def line(
    resource: str | None,
    billed: int,
    *,
    day: date = D1,
    days: int = 1,
    category: str = "usage",
    effective: int | None = None,
    tags: dict[str, str] | None = None,
) -> BillCharge:
    return BillCharge(
        f"bill#{resource}-{billed}-{category}",
        at(day),
        at(day) + timedelta(days=days),
        billed,
        effective,
        category,
        resource,
        "111",
        tags or {},
    )


def assets(day: date = D1) -> list[Asset]:
    return [Asset(day, "node", "node-a", NODE_A, 100 * M), Asset(day, "node", "node-b", NODE_B, 50 * M)]


def run(
    rows: Sequence[EstimateRow],
    charges: Sequence[BillCharge],
    *,
    basis: Basis = Basis.BILLED,
    days: Sequence[date] = (D1,),
    policy: Reconciliation = DEFAULT,
    items: Sequence[Asset] | None = None,
) -> ClusterReconciliation:
    items = assets() if items is None else items
    index = ResourceIndex({"demo": items})
    mine, direct = assign(charges, index, policy, frozenset({"demo"}))
    assert not direct, "every line of these tests is the cluster's"
    return reconcile("demo", days, rows, items, mine.get("demo", []), policy, basis)


def test_rows_on_a_node_scale_by_billed_over_estimated_and_idle_takes_the_rest() -> None:
    # node-a: estimate 100 of which 60 allocated (40 idle), billed 80: factor 0.8
    rows = [row(D1, "node-a", "shop", "checkout", 45 * M), row(D1, "node-a", "search", "search", 15 * M)]
    done = run(rows, [line("i-0aaa", 80 * M), line("i-0bbb", 50 * M)])
    assert done.rows[("shop", "checkout", None, "workload")] == 36 * M
    assert done.rows[("search", "search", None, "workload")] == 12 * M
    assert done.rows[IDLE_KEY] == 32 * M + 50 * M  # node-a's idle 40 x 0.8, node-b all idle
    assert done.total_micros == 130 * M
    assert done.billed_days == (D1,) and done.estimated_days == ()


def test_network_and_other_costs_without_a_bill_line_are_zero_on_a_billed_day() -> None:
    rows = [row(D1, "node-a", "shop", "checkout", 70 * M, other=10 * M)]  # compute 60 of 100
    done = run(rows, [line("i-0aaa", 100 * M), line("i-0bbb", 50 * M)])
    assert done.rows[("shop", "checkout", None, "workload")] == 60 * M
    assert done.total_micros == 150 * M


def test_a_node_missing_from_the_bill_is_reconciled_to_zero_and_listed() -> None:
    rows = [row(D1, "node-a", "shop", "checkout", 60 * M), row(D1, "node-b", "web", "web", 20 * M)]
    done = run(rows, [line("i-0aaa", 100 * M)])
    assert done.rows[("web", "web", None, "workload")] == 0
    statuses = {item.name: (item.status, item.estimate_micros, item.billed_micros) for item in done.resources}
    assert statuses["node-b"] == ("missing", 50 * M, Fraction(0))
    assert statuses["node-a"] == ("matched", 100 * M, Fraction(100 * M))
    assert done.total_micros == 100 * M


def test_a_node_billed_at_zero_is_on_the_bill() -> None:
    # FOCUS: usage a commitment covers has BilledCost 0; the node is on the bill, not missing
    rows = [row(D1, "node-a", "shop", "checkout", 60 * M)]
    done = run(rows, [line("i-0aaa", 0), line("i-0bbb", 50 * M)])
    assert {item.name: item.status for item in done.resources} == {"node-a": "matched", "node-b": "matched"}
    assert done.rows[("shop", "checkout", None, "workload")] == 0


def test_days_the_bill_does_not_cover_stay_on_estimate() -> None:
    rows = [row(D1, "node-a", "shop", "checkout", 60 * M), row(D2, "node-a", "shop", "checkout", 60 * M, other=5 * M)]
    done = run(rows, [line("i-0aaa", 50 * M)], days=(D1, D2), items=assets(D1) + assets(D2))
    assert done.billed_days == (D1,) and done.estimated_days == (D2,)
    assert done.rows[("shop", "checkout", None, "workload")] == 30 * M + 60 * M  # D2 whole, network included


def test_the_estimate_basis_changes_nothing() -> None:
    rows = [row(D1, "node-a", "shop", "checkout", 60 * M), row(D1, "", "", None, 90 * M, kind="idle")]
    done = run(rows, [line("i-0aaa", 10 * M)], basis=Basis.ESTIMATE)
    assert done.rows == {("shop", "checkout", None, "workload"): 60 * M, IDLE_KEY: 90 * M}
    assert done.billed_days == ()


def test_amortised_uses_the_effective_cost() -> None:
    rows = [row(D1, "node-a", "shop", "checkout", 100 * M)]
    charges = [line("i-0aaa", 100 * M, effective=70 * M), line("i-0bbb", 50 * M, effective=None)]
    assert run(rows, charges, basis=Basis.AMORTISED).rows[("shop", "checkout", None, "workload")] == 70 * M
    assert run(rows, charges, basis=Basis.BILLED).rows[("shop", "checkout", None, "workload")] == 100 * M


def test_discounts_are_spread_over_positive_reconciled_cost_or_shared() -> None:
    rows = [row(D1, "node-a", "shop", "checkout", 75 * M), row(D1, "node-a", "search", "search", 25 * M)]
    charges = [line("i-0aaa", 100 * M), line("i-0bbb", 0), line("i-0aaa", -20 * M, category="discount")]
    done = run(rows, charges)
    assert done.rows[("shop", "checkout", None, "workload")] == 60 * M
    assert done.rows[("search", "search", None, "workload")] == 20 * M
    assert done.shared_micros == 0 and done.total_micros == 80 * M
    shared = run(rows, charges, policy=Reconciliation(discounts=DiscountRule.SHARED))
    assert shared.rows[("shop", "checkout", None, "workload")] == 75 * M
    assert shared.shared_micros == -20 * M


def test_tax_support_and_purchases_are_shared_and_unmatched_usage_is_unreconciled() -> None:
    tagged = {"eks:cluster-name": "demo"}
    rows = [row(D1, "node-a", "shop", "checkout", 100 * M)]
    charges = [
        line("i-0aaa", 100 * M),
        line("i-0bbb", 50 * M),
        line(None, 7 * M, category="tax", tags=tagged),
        line(None, 3 * M, category="support", tags=tagged),
        line("arn:sp", 11 * M, category="purchase", tags=tagged),
        line("nat-123", 5 * M, tags=tagged),
    ]
    done = run(rows, charges)
    assert done.shared_micros == 21 * M
    assert done.unreconciled_micros == 5 * M and done.unreconciled_lines == ("bill#nat-123-5000000-usage",)
    assert done.total_micros == 150 * M + 21 * M + 5 * M


def test_lines_of_no_cluster_stay_direct_and_accounts_restrict_tags() -> None:
    index = ResourceIndex({"demo": assets()})
    other = line("db-1", 9 * M, tags={"team": "x"})
    foreign = BillCharge("f", at(D1), at(D2), M, None, "usage", "nat-9", "999", {"eks:cluster-name": "demo"})
    policy = Reconciliation(accounts={"demo": ("111",)})
    mine, direct = assign([other, foreign, line("i-0aaa", M)], index, policy, frozenset({"demo"}))
    assert direct == [other, foreign]
    assert [charge.resource_id for charge, _ in mine["demo"]] == ["i-0aaa"]


def test_a_line_over_two_days_is_prorated_exactly() -> None:
    rows = [row(day, "node-a", "shop", "checkout", 100 * M) for day in (D1, D2)]
    charges = [line("i-0aaa", 3 * M, days=2), line("i-0bbb", 0, days=2)]
    done = run(rows, charges, days=(D1, D2), items=assets(D1) + assets(D2))
    assert done.rows[("shop", "checkout", None, "workload")] == 3 * M


def test_storage_is_scaled_by_the_clusters_disk_lines() -> None:
    items = [*assets(), Asset(D1, "disk", "pvc-1", "vol-1", 4 * M)]
    rows = [row(D1, "node-a", "shop", "checkout", 104 * M, pv=4 * M)]
    done = run(rows, [line("i-0aaa", 100 * M), line("i-0bbb", 50 * M), line("vol-1", 2 * M)], items=items)
    assert done.rows[("shop", "checkout", None, "workload")] == 102 * M


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["node-a", "node-b", ""]), st.integers(0, 10**9), st.integers(0, 10**7)), max_size=8
    ),
    st.lists(
        st.tuples(
            st.sampled_from(["i-0aaa", "i-0bbb", "nat-1"]),
            st.integers(-(10**8), 10**10),
            st.sampled_from(["usage", "discount", "tax"]),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([DiscountRule.PROPORTIONAL, DiscountRule.SHARED]),
)
def test_a_billed_cluster_totals_its_bill_to_the_micro(nodes, bill, rule) -> None:  # type: ignore[no-untyped-def]
    rows = [row(D1, node, f"ns{i}", f"t{i % 3}", total + pv, pv=pv) for i, (node, total, pv) in enumerate(nodes)]
    tagged = {"eks:cluster-name": "demo"}
    charges = [line(rid, amount, category=cat, days=2, tags=tagged) for rid, amount, cat in bill]
    charges.append(line("i-0aaa", 1))  # D1 is billed
    done = run(rows, charges, days=(D1,), policy=Reconciliation(discounts=rule))
    expected = sum(Fraction(c.billed_micros, 2) for c in charges[:-1]) + 1
    assert done.total_micros == round(expected)
    assert all(isinstance(value, int) for value in done.rows.values())
    # The origins the FOCUS export splits are the same money, exactly: their shares give each row
    # (within the micro the rows are rounded to), and with the lines left whole the bill's total.
    assert sum((origin.amount for origin in done.origins), Fraction(0)) == expected
    for key, micros in done.rows.items():
        exact = sum((origin.shares.get(key, Fraction(0)) for origin in done.origins), Fraction(0))
        assert abs(exact - micros) < 1
    for origin in done.origins:
        assert sum(origin.shares.values(), Fraction(0)) == (origin.amount if origin.shares else 0)


@pytest.mark.parametrize("basis", [Basis.BILLED, Basis.AMORTISED])
def test_an_asset_less_node_has_no_idle_and_its_rows_take_the_bill(basis: Basis) -> None:
    rows = [row(D1, "node-c", "shop", "checkout", 30 * M), row(D1, "node-c", "web", "web", 10 * M)]
    items = [*assets(), Asset(D1, "node", "node-c", "i-0ccc", 0)]
    items = [item for item in items if item.name != "node-c"] + [Asset(D2, "node", "node-c", "i-0ccc", 1)]
    done = run(rows, [line("i-0ccc", 20 * M)], basis=basis, items=items, days=(D1,))
    assert done.rows[("shop", "checkout", None, "workload")] == 15 * M
    assert done.rows[("web", "web", None, "workload")] == 5 * M


CHECKOUT = ("shop", "checkout", None, "workload")
SEARCH = ("search", "search", None, "workload")


def test_rows_with_the_same_key_on_one_day_add_up() -> None:
    rows = [
        row(D1, "node-a", "shop", "checkout", 30 * M),
        row(D1, "node-a", "shop", "checkout", 30 * M),
        row(D1, "node-b", "shop", "checkout", 25 * M),
        row(D2, "node-a", "shop", "checkout", 10 * M),
        row(D2, "node-b", "shop", "checkout", 5 * M),
    ]
    charges = [line("i-0aaa", 50 * M), line("i-0bbb", 25 * M)]  # D1 at half the estimate; D2 estimated
    done = run(rows, charges, days=(D1, D2), items=assets(D1) + assets(D2))
    assert done.rows == {CHECKOUT: 30 * M + 12_500_000 + 15 * M, IDLE_KEY: 20 * M + 12_500_000}
    assert done.billed_days == (D1,) and done.estimated_days == (D2,)
    again = run(rows[::-1], charges[::-1], days=(D2, D1, D2), items=(assets(D1) + assets(D2))[::-1])
    assert again == done  # the order of rows, lines, assets and days plays no part


def test_a_resources_estimate_adds_its_assets_over_the_billed_days() -> None:
    items = [
        Asset(D1, "node", "node-a", NODE_A, 60 * M),  # two assets of one node on one day
        Asset(D1, "node", "node-a", NODE_A, 40 * M),
        Asset(D2, "node", "node-a", NODE_A, 100 * M),
    ]
    rows = [row(D1, "node-a", "shop", "checkout", 50 * M), row(D2, "node-a", "shop", "checkout", 50 * M)]
    done = run(rows, [line("i-0aaa", 20 * M, days=2)], days=(D1, D2), items=items)
    assert done.rows == {CHECKOUT: 10 * M, IDLE_KEY: 10 * M}  # E = 100 on each day, half allocated
    assert done.resources == (ResourceVariance("node", "node-a", NODE_A, 200 * M, Fraction(20 * M), True),)


def test_the_variance_lists_every_resource_with_its_provider_id() -> None:
    items = [*assets(), Asset(D2, "disk", "pvc-9", "vol-9", 5 * M)]  # the disk's asset: another day
    rows = [row(D1, "node-a", "shop", "checkout", 60 * M), row(D1, "node-x", "web", "web", 30 * M)]
    charges = [line("i-0aaa", 100 * M), line("i-0bbb", 50 * M), line("vol-9", M)]
    done = run(rows, charges, items=items)
    assert done.resources == (
        ResourceVariance("disk", "pvc-9", "vol-9", 0, Fraction(M), True),
        ResourceVariance("node", "node-a", NODE_A, 100 * M, Fraction(100 * M), True),
        ResourceVariance("node", "node-b", NODE_B, 50 * M, Fraction(50 * M), True),
        # no asset, no bill: its estimate is its rows' compute, and it is missing from the bill
        ResourceVariance("node", "node-x", "", 30 * M, Fraction(0), False),
    )
    assert [item.status for item in done.resources] == ["matched", "matched", "matched", "missing"]
    assert done.rows == {CHECKOUT: 60 * M, ("web", "web", None, "workload"): 0, IDLE_KEY: 40 * M + 50 * M + M}


def test_a_node_without_an_asset_has_its_rows_compute_as_estimate_on_each_billed_day() -> None:
    rows = [row(day, "node-x", "web", "web", 30 * M, other=M) for day in (D1, D2)]
    done = run(rows, [line("i-0aaa", 100 * M, days=2)], days=(D1, D2), items=assets(D1) + assets(D2))
    variance = {item.name: item for item in done.resources}
    assert variance["node-x"].estimate_micros == 58 * M and variance["node-x"].status == "missing"
    assert variance["node-b"].estimate_micros == 100 * M and variance["node-b"].status == "missing"
    assert done.rows == {("web", "web", None, "workload"): 0, IDLE_KEY: 100 * M}


def test_a_node_billed_without_asset_or_rows_puts_its_bill_on_idle() -> None:
    items = [*assets(D1), Asset(D2, "node", "node-c", "i-0ccc", M)]
    rows = [row(D1, "node-a", "shop", "checkout", 100 * M)]
    done = run(rows, [line("i-0aaa", 100 * M), line("i-0bbb", 50 * M), line("i-0ccc", 7 * M)], items=items)
    assert done.rows == {CHECKOUT: 100 * M, IDLE_KEY: 57 * M}
    node_c = next(item for item in done.resources if item.name == "node-c")
    assert (node_c.estimate_micros, node_c.billed_micros, node_c.status) == (0, Fraction(7 * M), "matched")


def test_an_idle_row_carrying_compute_on_a_billed_day_is_replaced_by_the_nodes_idle() -> None:
    rows = [row(D1, "node-a", "shop", "checkout", 60 * M), row(D1, "", "", None, 90 * M, kind="idle")]
    done = run(rows, [line("i-0aaa", 80 * M), line("i-0bbb", 50 * M)])
    assert done.rows == {CHECKOUT: 48 * M, IDLE_KEY: 32 * M + 50 * M}
    assert [item.name for item in done.resources] == ["node-a", "node-b"]
    # on a node without an asset, an idle row would otherwise count in the node's estimate
    items = [*assets(D2), Asset(D2, "node", "node-c", "i-0ccc", 1)]
    rows = [row(D1, "node-c", "shop", "checkout", 30 * M), row(D1, "node-c", "", None, 10 * M, kind="idle")]
    done = run(rows, [line("i-0ccc", 20 * M)], items=items)
    assert done.rows == {CHECKOUT: 20 * M, IDLE_KEY: 0}


def test_nodes_estimated_at_zero_put_their_bill_on_idle_and_the_others_still_scale() -> None:
    items = [
        Asset(D1, "node", "node-a", NODE_A, 0),
        Asset(D1, "node", "node-b", NODE_B, 0),
        Asset(D1, "node", "node-c", "i-0ccc", 10 * M),
    ]
    rows = [row(D1, "node-c", "shop", "checkout", 10 * M)]
    done = run(rows, [line("i-0aaa", 5 * M), line("i-0bbb", 7 * M), line("i-0ccc", 4 * M)], items=items)
    assert done.rows == {CHECKOUT: 4 * M, IDLE_KEY: 12 * M}


def test_a_node_estimated_at_one_micro_scales_its_rows() -> None:
    items = [Asset(D1, "node", "node-a", NODE_A, 1)]
    done = run([row(D1, "node-a", "shop", "checkout", 1)], [line("i-0aaa", 9 * M)], items=items)
    assert done.rows == {CHECKOUT: 9 * M, IDLE_KEY: 0}


def test_disk_lines_of_one_day_do_not_reach_another_billed_day() -> None:
    items = [
        *assets(D1),
        *assets(D2),
        Asset(D1, "disk", "pvc-1", "vol-1", 4 * M),
        Asset(D2, "disk", "pvc-1", "vol-1", 4 * M),
    ]
    rows = [row(day, "node-a", "shop", "checkout", 104 * M, pv=4 * M) for day in (D1, D2)]
    charges = [line("i-0aaa", 100 * M, days=2), line("i-0bbb", 100 * M, days=2), line("vol-1", 2 * M)]
    done = run(rows, charges, days=(D1, D2), items=items)
    assert done.billed_days == (D1, D2)
    assert done.rows == {CHECKOUT: 100 * M + 2 * M, IDLE_KEY: 100 * M}


def test_load_balancers_scale_like_disks_and_unweighted_lines_go_to_idle() -> None:
    items = [*assets(), Asset(D1, "disk", "pvc-1", "vol-1", 4 * M), Asset(D1, "load_balancer", "lb-1", "lb-1", M)]
    rows = [
        row(D1, "node-a", "shop", "checkout", 60 * M, lb=10 * M),
        row(D1, "node-a", "search", "search", 60 * M, lb=30 * M),
    ]
    charges = [line("i-0aaa", 100 * M), line("i-0bbb", 50 * M), line("vol-1", 3 * M), line("lb-1", 8 * M)]
    done = run(rows, charges, items=items)
    assert done.rows == {CHECKOUT: 50 * M + 2 * M, SEARCH: 30 * M + 6 * M, IDLE_KEY: 20 * M + 50 * M + 3 * M}
    kinds = {(item.kind, item.name): item.billed_micros for item in done.resources}
    assert kinds[("load_balancer", "lb-1")] == 8 * M and kinds[("disk", "pvc-1")] == 3 * M


def test_a_discount_on_days_without_cost_goes_to_the_shared_pool() -> None:
    rows = [row(D2, "node-a", "shop", "checkout", 30 * M), row(D2, "node-a", "search", "search", 10 * M)]
    tagged = {"eks:cluster-name": "demo"}
    charges = [
        line("i-0aaa", 40 * M, day=D2),
        line("i-0bbb", 0, day=D2),
        line(None, -9 * M, day=D1, days=3, category="discount", tags=tagged),  # a third on each day
    ]
    done = run(rows, charges, days=(D1, D2, D3), items=assets(D2))
    # D2 reconciled: checkout 12, search 4, idle 24 (of 40); its -3 in proportion; D1, D3 have no cost
    assert done.rows == {CHECKOUT: 11_100_000, SEARCH: 3_700_000, IDLE_KEY: 22_200_000}
    assert done.shared_micros == -6 * M and done.total_micros == 31 * M
    assert done.estimated_days == (D1, D3)


def test_a_discount_reaches_lines_of_a_micro_or_less_in_proportion() -> None:
    rows = [row(D1, "", "shop", "checkout", 1), row(D1, "", "search", "search", 3)]  # an estimated day
    tagged = {"eks:cluster-name": "demo"}
    done = run(rows, [line(None, -2, category="discount", tags=tagged)])
    assert done.rows == {SEARCH: 2, CHECKOUT: 0}  # exactly 3/2 and 1/2: the first in order rounds up
    assert done.shared_micros == 0 and done.total_micros == 2


def test_the_amortised_basis_holds_for_shared_and_unreconciled_lines() -> None:
    tagged = {"eks:cluster-name": "demo"}
    charges = [
        line("i-0aaa", 100 * M),
        line("i-0bbb", 50 * M),
        line(None, 10 * M, category="support", effective=7 * M, tags=tagged),
        line("nat-1", 5 * M, effective=4 * M, tags=tagged),
    ]
    done = run([], charges, basis=Basis.AMORTISED)
    assert (done.shared_micros, done.unreconciled_micros) == (7 * M, 4 * M)
    assert (done.cluster, done.basis) == ("demo", Basis.AMORTISED)


def test_an_allowed_account_keeps_a_tagged_line_in_its_cluster() -> None:
    policy = Reconciliation(accounts={"demo": ("111",)})
    tagged = line("nat-9", M, tags={"eks:cluster-name": "demo"})  # account 111
    mine, direct = assign([tagged], ResourceIndex({"demo": assets()}), policy, frozenset({"demo"}))
    assert mine == {"demo": [(tagged, None)]} and direct == []


def _estimated(owner: str | None, cc: str | None, kind: str = "workload", *, day: date = D1) -> EstimateRow:
    return row(day, "", "ns", owner, 1, kind=kind, cc=cc)


def test_rows_come_in_a_fixed_order_and_rounding_ties_follow_it() -> None:
    rows = [
        _estimated("d", "A"),
        _estimated("d", None, day=D2),
        _estimated("c", "z", "idle"),
        _estimated("c", "y"),
        _estimated("b", "y", day=D2),
        _estimated("a", "z"),
        _estimated("A", None),
        _estimated(None, None, day=D2),
        row(D1, "", "", None, 5, kind="idle"),
    ]
    done = run(rows, [], days=(D1, D2))
    expected = [
        ("", None, None, "idle"),
        ("ns", None, None, "workload"),
        ("ns", "A", None, "workload"),
        ("ns", "a", "z", "workload"),
        ("ns", "b", "y", "workload"),
        ("ns", "c", "y", "workload"),
        ("ns", "c", "z", "idle"),
        ("ns", "d", None, "workload"),
        ("ns", "d", "A", "workload"),
    ]
    assert list(done.rows) == expected
    assert list(done.rows.values()) == [5, 1, 1, 1, 1, 1, 1, 1, 1]
    # half a micro each for two rows: the first in that order gets the micro
    items = [Asset(D1, "node", "node-a", NODE_A, 4)]
    tie = [row(D1, "node-a", "ns", "A", 1), row(D1, "node-a", "ns", None, 1)]
    done = run(tie, [line("i-0aaa", 2)], items=items)
    assert done.rows == {IDLE_KEY: 1, ("ns", None, None, "workload"): 1, ("ns", "A", None, "workload"): 0}
