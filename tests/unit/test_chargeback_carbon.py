"""We test these aspects of the chargeback's carbon column (``finops.chargeback_carbon``), by hand:

- a line's own grams stay on it; idle grams follow the ``idle`` option exactly as the money does
  (distribute: in proportion to allocated cost; separate: on the idle line);
- a shared namespace's grams follow ``shared.split`` (proportional or even), and go to
  ``__shared__`` when the cluster has no receiver;
- each cluster is settled on its own, the sum rounded once by largest remainder, ties to the
  earlier line, so the column adds up to the stored grams exactly;
- a line with no measured cluster has no grams (``None``), never 0; a line with grams and no
  money is added with zero money;
- a negative or fractional gram figure is refused, naming the field.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from finops.chargeback import CostRow, IdleRow, LineKey, LineKind, Period, allocate
from finops.chargeback_carbon import GramsRow, line_grams, with_grams
from finops.errors import InvalidInput
from finops.policy import parse_policy

NOVEMBER = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
OWNER, UNALLOCATED, SHARED, IDLE = LineKind.OWNER, LineKind.UNALLOCATED, LineKind.SHARED, LineKind.IDLE
# Money: checkout 3.00 (shop), discovery 1.00 (search), kube-system 1.00 (shared), idle 2.00.
MONEY = [
    CostRow("a", "shop", "checkout", None, 3_000_000),
    CostRow("a", "search", "discovery", None, 1_000_000),
    CostRow("a", "kube-system", None, None, 1_000_000),
]
IDLE_MONEY = [IdleRow("a", 2_000_000)]
# Grams: shop 30, search 10, kube-system 7, idle 11: 58 g.
GRAMS = [
    GramsRow("a", "shop", "checkout", None, 30),
    GramsRow("a", "search", "discovery", None, 10),
    GramsRow("a", "kube-system", None, None, 7),
    GramsRow("a", "", None, None, 11, is_idle=True),
]


def policy(**overrides: object):  # type: ignore[no-untyped-def]
    return parse_policy({"currency": "EUR", "shared": {"namespaces": ["kube-system"]}, **overrides})


def test_distributed_idle_and_shared_grams_go_by_allocated_cost_and_add_up() -> None:
    """checkout 3/4 and discovery 1/4 of allocated cost: idle 11 g is 8.25 / 2.75, the shared
    7 g 5.25 / 1.75: checkout 30 + 8.25 + 5.25 = 43.5, discovery 10 + 2.75 + 1.75 = 14.5; the
    tie of halves goes to the earlier line (checkout): 44 and 14, 58 g."""
    grams = line_grams(MONEY, IDLE_MONEY, GRAMS, policy(idle="distribute"), by=LineKey.TEAM, measured={"a"})
    assert grams == {(OWNER, "checkout"): 44, (OWNER, "discovery"): 14}
    assert sum(g for g in grams.values() if g is not None) == 58


def test_separate_idle_keeps_its_grams_on_the_idle_line_and_even_splits_the_shared_pool() -> None:
    """Shared 7 g even: 3.5 each; idle 11 g on the idle line (owned by platform)."""
    chosen = policy(idle="separate", idle_owner="platform", shared={"namespaces": ["kube-system"], "split": "even"})
    grams = line_grams(MONEY, IDLE_MONEY, GRAMS, chosen, by=LineKey.TEAM, measured={"a"})
    assert grams == {(OWNER, "checkout"): 34, (OWNER, "discovery"): 13, (IDLE, "platform"): 11}
    report = with_grams(allocate(MONEY, IDLE_MONEY, chosen, period=NOVEMBER), grams, {"total_grams": 58})
    assert [(line.owner, line.grams) for line in report.lines] == [
        ("checkout", 34),
        ("discovery", 13),
        ("platform", 11),
    ]
    assert report.lines[0].as_document()["kg_co2e"] == "0.034"


def test_no_receiver_keeps_shared_and_idle_grams_on_their_lines() -> None:
    money = [CostRow("a", "kube-system", None, None, 1_000_000)]
    grams = line_grams(money, IDLE_MONEY, GRAMS[2:], policy(idle="distribute"), by=LineKey.TEAM, measured={"a"})
    assert grams == {(SHARED, "__shared__"): 7, (IDLE, "platform"): 11}


def test_each_cluster_is_settled_on_its_own_then_rounded_once() -> None:
    """Cluster b's idle (5 g) goes to its only receiver, lonely (unallocated), never to cluster a's
    teams; cluster c has money but no emissions: its line has none, not 0 g."""
    money = [*MONEY, CostRow("b", "legacy", None, None, 500_000), CostRow("c", "web", "web", None, 100)]
    grams = [*GRAMS, GramsRow("b", "", None, None, 5, is_idle=True)]
    found = line_grams(money, IDLE_MONEY, grams, policy(idle="distribute"), by=LineKey.TEAM, measured={"a", "b"})
    assert found == {(OWNER, "checkout"): 44, (OWNER, "discovery"): 14, (UNALLOCATED, "__unallocated__"): 5}
    report = with_grams(allocate(money, IDLE_MONEY, policy(idle="distribute"), period=NOVEMBER), found, {})
    assert {line.owner: line.grams for line in report.lines}["web"] is None


def test_by_namespace_and_a_line_with_grams_and_no_money() -> None:
    grams = [*GRAMS, GramsRow("a", "batch", "data", None, 3)]  # its cost nets to zero in the period
    found = line_grams(MONEY, IDLE_MONEY, grams, policy(idle="separate"), by=LineKey.NAMESPACE, measured={"a"})
    assert found == {(OWNER, "batch"): 3, (OWNER, "search"): 12, (OWNER, "shop"): 35, (IDLE, "platform"): 11}
    money = allocate(MONEY, IDLE_MONEY, policy(idle="separate"), period=NOVEMBER, by="namespace")
    report = with_grams(money, found, {})
    batch = next(line for line in report.lines if line.owner == "batch")
    assert (str(batch.total), batch.grams) == ("0.00", 3)
    assert sum(line.grams or 0 for line in report.lines) == 61


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_grams_must_be_whole_and_not_negative(bad: object) -> None:
    with pytest.raises(InvalidInput, match=r"^grams: "):
        GramsRow("a", "shop", None, None, bad)  # type: ignore[arg-type]
