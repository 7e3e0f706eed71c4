"""We test these aspects of emissions beside cost (``finops.carbon``):

- on generated nodes (hypothesis), a node's grams split over its rows and its idle add up to the
  node's grams exactly, every part is a whole, non-negative number of grams within one gram of its
  exact share, and negative weights (credits, allocations above the node's cost) get nothing;
- a node without any cost puts all its grams on idle; zero grams give zero parts;
- a worked example matches the figures computed by hand (docs/how-to/carbon.md);
- OpenCost's tonnes become grams half-even; a negative or non-finite figure is refused naming it;
- the operator's emission table: the first matching factor applies (instance type or label),
  grams per hour x minutes / 60 half-even, the region from the table or the node's label, and
  every malformed entry refused with one line naming its field.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.carbon import apportion, node_shares, parse_table, tonnes_to_grams
from finops.errors import InvalidInput

GRAMS = st.integers(min_value=0, max_value=10**12)
COSTS = st.lists(st.integers(min_value=-(10**9), max_value=10**9), max_size=30)


@given(GRAMS, st.integers(min_value=-(10**9), max_value=10**10), COSTS)
def test_a_nodes_shares_add_up_to_its_grams_exactly(grams: int, node_cost: int, rows: list[int]) -> None:
    parts, idle = node_shares(grams, node_cost, rows)
    assert len(parts) == len(rows)
    assert sum(parts) + idle == grams
    assert all(p >= 0 for p in parts) and idle >= 0
    weights = [max(r, 0) for r in rows]
    rest = max(node_cost - sum(rows), 0)
    whole = sum(weights) + rest
    if whole == 0:
        assert parts == [0] * len(rows) and idle == grams
        return
    for part, weight in zip([*parts, idle], [*weights, rest], strict=True):
        assert abs(part - Fraction(grams * weight, whole)) < 1
        if weight == 0:
            assert part == 0


@given(GRAMS, st.lists(st.integers(min_value=0, max_value=10**9), max_size=30), st.integers(0, 10**9))
def test_apportioning_is_exact_for_any_weights(grams: int, weights: list[int], rest: int) -> None:
    parts, idle = apportion(grams, weights, rest)
    assert sum(parts) + idle == grams
    assert min([*parts, idle]) >= 0


def test_worked_example() -> None:
    # node-a emitted 120 g in the hour; its node cost 0.200000 (200,000 micros): web 90,000,
    # cart 30,000 (after a credit: the same weight as its cost), a credited row -5,000 (nothing)
    parts, idle = node_shares(120, 200_000, [90_000, 30_000, -5_000])
    # idle weighs 200,000 - 115,000 = 85,000; weights 90,000 + 30,000 + 0 + 85,000 = 205,000
    # exact: 52.68 / 17.56 / 0 / 49.76 -> floors 52, 17, 0, 49 (118), two grams to 52.68 and 49.76
    assert (parts, idle) == ([53, 17, 0], 50)


def test_a_node_without_cost_puts_everything_on_idle() -> None:
    assert node_shares(7, 0, []) == ([], 7)
    assert node_shares(7, 0, [0, -3]) == ([0, 0], 7)
    assert node_shares(0, 100, [40, 60]) == ([0, 0], 0)
    with pytest.raises(InvalidInput, match="grams"):
        apportion(-1, [1], 0)


def test_tonnes_become_grams_half_even() -> None:
    assert tonnes_to_grams(Decimal("4.84769853777516e-06"), "co2e") == 5
    assert tonnes_to_grams(Decimal("0.0000025"), "co2e") == 2  # 2.5 g: half to even
    assert tonnes_to_grams(Decimal("0.0000035"), "co2e") == 4
    assert tonnes_to_grams(Decimal("0.012"), "co2e") == 12_000
    for bad in (Decimal("-0.1"), Decimal("NaN"), Decimal("Infinity")):
        with pytest.raises(InvalidInput, match=r"^node-a\.co2e: "):
            tonnes_to_grams(bad, "node-a.co2e")


TABLE = {
    "source": "Cloud Carbon Footprint, AWS eu-west-1 (2024)",
    "nodes": [
        {"label": "pool=gpu", "gramsPerHour": 150},
        {"instanceType": "m5.large", "gramsPerHour": "21.5"},
    ],
}


def test_the_first_matching_factor_applies() -> None:
    table = parse_table(TABLE)
    m5 = {"node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/region": "eu-west-1"}
    match = table.node_hour(m5)
    assert match is not None and (match.grams, match.source, match.region) == (22, TABLE["source"], "eu-west-1")
    gpu = table.node_hour({**m5, "pool": "gpu"}, minutes=Decimal(30))
    assert gpu is not None and gpu.grams == 75
    assert table.node_hour({"beta.kubernetes.io/instance-type": "m5.large"}, minutes=Decimal(20)) is not None
    assert table.node_hour({"node.kubernetes.io/instance-type": "m6i.large"}) is None
    regional = parse_table({**TABLE, "region": "eu-west-1"}).node_hour({"pool": "gpu"})
    assert regional is not None and regional.region == "eu-west-1"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "emission table: must be a mapping"),
        ({"nodes": TABLE["nodes"]}, "emission table: source: required"),
        ({**TABLE, "colour": "green"}, "emission table: unknown key 'colour'"),
        ({**TABLE, "region": ""}, "emission table: region: must be"),
        ({"source": "x", "nodes": []}, "emission table: nodes: required"),
        ({"source": "x", "nodes": ["m5"]}, r"emission table: nodes\[0\]: must be a mapping"),
        ({"source": "x", "nodes": [{"gramsPerHour": 1}]}, r"nodes\[0\]: exactly one of instanceType or label"),
        ({"source": "x", "nodes": [{"instanceType": "a", "label": "b=c", "gramsPerHour": 1}]}, "exactly one"),
        ({"source": "x", "nodes": [{"instanceType": "", "gramsPerHour": 1}]}, r"nodes\[0\]\.instanceType: "),
        ({"source": "x", "nodes": [{"label": "pool", "gramsPerHour": 1}]}, r"nodes\[0\]\.label: 'pool' is not"),
        ({"source": "x", "nodes": [{"label": "a=b"}]}, r"nodes\[0\]\.gramsPerHour: required"),
        ({"source": "x", "nodes": [{"label": "a=b", "gramsPerHour": 1.5}]}, r"gramsPerHour: 1\.5 is a float"),
        ({"source": "x", "nodes": [{"label": "a=b", "gramsPerHour": "-1"}]}, r"gramsPerHour: '-1' is not a finite"),
        ({"source": "x", "nodes": [{"label": "a=b", "gramsPerHour": "lots"}]}, r"gramsPerHour: 'lots' is not a n"),
        ({"source": "x", "nodes": [{"label": "a=b", "gramsPerHour": 1, "watts": 3}]}, "unknown key 'watts'"),
    ],
)
def test_a_malformed_table_is_refused_naming_the_field(document: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_table(document)
