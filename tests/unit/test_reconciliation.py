"""Reconciling a cluster's estimate to its bill (finops.reconciliation): each rule on a small
cluster computed by hand, and the totals against the bill for generated ones."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finops.reconcile_policy import Basis, DiscountRule, Reconciliation
from finops.reconciliation import (
    IDLE_KEY,
    Asset,
    BillCharge,
    EstimateRow,
    ResourceIndex,
    assign,
    ids_match,
    reconcile,
)

D1, D2 = date(2026, 11, 1), date(2026, 11, 2)
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
    other: int = 0,
    kind: str = "workload",
) -> EstimateRow:
    return EstimateRow(day, node, namespace, owner, None, kind, total, pv, 0, other)


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


def run(rows, charges, *, basis=Basis.BILLED, days=(D1,), policy=DEFAULT, items=None):  # type: ignore[no-untyped-def]
    items = assets() if items is None else items
    index = ResourceIndex({"demo": items})
    mine, direct = assign(charges, index, policy, frozenset({"demo"}))
    assert not direct, "every line of these tests is the cluster's"
    return reconcile("demo", days, rows, items, mine.get("demo", []), policy, basis)


def test_provider_ids_match_the_billed_ids() -> None:
    assert ids_match("aws:///eu-west-1a/i-0aaa", "i-0aaa")
    assert ids_match(
        "azure:///subscriptions/S/resourceGroups/R/providers/x/virtualMachines/vm1",
        "/subscriptions/s/resourcegroups/r/providers/x/virtualMachines/vm1",
    )
    assert not ids_match("aws:///eu-west-1a/i-0aaa", "i-0aa")
    assert not ids_match("aws:///eu-west-1a/i-0aaa", "")


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
    assert statuses["node-b"] == ("missing", 50 * M, 0)
    assert statuses["node-a"] == ("matched", 100 * M, 100 * M)
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


@pytest.mark.parametrize("basis", [Basis.BILLED, Basis.AMORTISED])
def test_an_asset_less_node_has_no_idle_and_its_rows_take_the_bill(basis: Basis) -> None:
    rows = [row(D1, "node-c", "shop", "checkout", 30 * M), row(D1, "node-c", "web", "web", 10 * M)]
    items = [*assets(), Asset(D1, "node", "node-c", "i-0ccc", 0)]
    items = [item for item in items if item.name != "node-c"] + [Asset(D2, "node", "node-c", "i-0ccc", 1)]
    done = run(rows, [line("i-0ccc", 20 * M)], basis=basis, items=items, days=(D1,))
    assert done.rows[("shop", "checkout", None, "workload")] == 15 * M
    assert done.rows[("web", "web", None, "workload")] == 5 * M
