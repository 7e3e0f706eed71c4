"""We test these aspects of the operator's emission table for the Prometheus source (no I/O: a fake
query port answers the node queries by name):

- which line applies to a node: the first in the table's order that matches, an ``instanceType``
  line or a ``label`` line alike (so a label line above the instance types overrides them); keys
  written as on the Node match kube-state-metrics' sanitised ones;
- a node's grams are grams per hour x its minutes / 60, rounded once half-even; the region is the
  table's, else the node's region label, else unknown;
- the Prometheus source's node inventory: each node's minutes, its labels (the set seen longest
  when they changed), and its capacity priced like the ``__idle__`` line's (None unpriced);
- applying the table to an hour: the grams per node with the factor's source and region, and a
  node no line matches named with its instance type (or the missing label), never 0 g;
- ``CARBON_EMISSION_TABLE`` is read at cold start: a missing file, bad YAML or a bad entry refuses
  the settings naming the variable, the file and the entry's field; it is refused with the
  OpenCost source.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from finops.carbon import parse_table
from finops.hours import Hour
from infra.prometheus import Sample, promql
from infra.prometheus.source import PrometheusAllocations
from infra.settings import CollectAllocationsSettings, ConfigError, load
from usecases.collect_allocations.carbon import NodeGrams, fetch_table_emissions

START = datetime(2026, 11, 20, 10, tzinfo=UTC)
NAMES = {text: name for name, text in promql.node_queries(3600).items()}
SOURCE = "Example grid factors 2026"
TABLE: dict[str, Any] = {
    "source": SOURCE,
    "nodes": [
        {"label": "pool=batch", "gramsPerHour": "45.5"},
        {"instanceType": "m5.xlarge", "gramsPerHour": 120},
        {"label": "node.kubernetes.io/instance-type=m5.xlarge", "gramsPerHour": 999},
    ],
}
M5 = {"node_kubernetes_io_instance_type": "m5.xlarge", "topology_kubernetes_io_region": "eu-west-1"}


def test_the_first_line_in_the_tables_order_applies_whatever_its_kind() -> None:
    table = parse_table(TABLE)
    batch = table.node_hour({**M5, "pool": "batch"})  # the label line is above the instance type's
    assert batch is not None and batch.grams == 46  # 45.5 half-even
    plain = table.node_hour(M5)  # the instance type's line is above the label line that also matches
    assert plain is not None and plain.grams == 120
    reversed_table = parse_table({**TABLE, "nodes": TABLE["nodes"][::-1]})
    relabelled = reversed_table.node_hour({**M5, "pool": "batch"})
    assert relabelled is not None and relabelled.grams == 999


def test_keys_as_on_the_node_match_kube_state_metrics_sanitised_keys() -> None:
    table = parse_table(TABLE)
    for labels in (
        M5,
        {"node.kubernetes.io/instance-type": "m5.xlarge"},
        {"beta_kubernetes_io_instance_type": "m5.xlarge"},
    ):
        match = table.node_hour(labels)
        assert match is not None and match.grams == 120, labels
    assert table.node_hour({"node_kubernetes_io_instance_type": "m6i.large"}) is None
    assert table.node_hour({}) is None


def test_grams_are_per_hour_times_minutes_rounded_once_with_the_region() -> None:
    table = parse_table(TABLE)
    match = table.node_hour({**M5, "pool": "batch"}, Decimal(40))
    assert match is not None and (match.grams, match.source, match.region) == (30, TABLE["source"], "eu-west-1")
    half = table.node_hour({"pool": "batch"}, Decimal(20))  # 15.1666... g
    assert half is not None and (half.grams, half.region) == (15, None)
    fixed = parse_table({**TABLE, "region": "eu-central-1"}).node_hour(M5, Decimal(30))
    assert fixed is not None and (fixed.grams, fixed.region) == (60, "eu-central-1")


class FakePrometheus:
    def __init__(self, answers: dict[str, list[Sample]]) -> None:
        self.answers = answers

    def query(self, text: str, at: datetime, *, retry_until: float | None = None) -> list[Sample]:
        assert at == START + timedelta(hours=1) - timedelta(milliseconds=1)
        return self.answers.get(NAMES[text], [])


NODES = FakePrometheus(
    {
        "node_minutes": [Sample({"node": "node-a"}, Decimal(60)), Sample({"node": "node-b"}, Decimal(40))],
        "node_capacity": [
            Sample({"node": "node-a", "resource": "cpu"}, Decimal(4 * 60)),
            Sample({"node": "node-a", "resource": "memory"}, Decimal(8 * 60 * 2**30)),
            Sample({"node": "node-b", "resource": "cpu"}, Decimal(2 * 40)),
            Sample({"node": "node-b", "resource": "memory"}, Decimal(4 * 40 * 2**30)),
        ],
        "node_labels": [
            Sample({"node": "node-a", "label_node_kubernetes_io_instance_type": "m5.xlarge"}, Decimal(60)),
            # node-b was relabelled at minute 10 of its 40: the later set is seen longest
            Sample({"node": "node-b", "label_node_kubernetes_io_instance_type": "c5.large"}, Decimal(10)),
            Sample({"node": "node-b", "label_node_kubernetes_io_instance_type": "m6i.large"}, Decimal(30)),
        ],
    }
)
RATES = {"cpuHour": Decimal("0.05"), "ramGbHour": Decimal("0.0125")}


def test_the_source_lists_each_nodes_minutes_labels_and_capacity_cost() -> None:
    source = PrometheusAllocations(NODES, cluster="c", rates=RATES)
    a, b = source.node_hours(START, START + timedelta(hours=1))
    assert (a.name, a.minutes, dict(a.labels), a.cost) == (
        "node-a",
        Decimal(60),
        {"node_kubernetes_io_instance_type": "m5.xlarge"},
        Decimal("0.3"),
    )
    assert (b.name, b.minutes, b.labels["node_kubernetes_io_instance_type"], b.cost) == (
        "node-b",
        Decimal(40),
        "m6i.large",
        Decimal("0.1"),
    )
    unpriced = PrometheusAllocations(NODES, cluster="c").node_hours(START, START + timedelta(hours=1))
    assert [n.cost for n in unpriced] == [None, None]


def test_an_hour_by_the_table_names_every_node_no_line_matches() -> None:
    source = PrometheusAllocations(NODES, cluster="c", rates=RATES)
    hour = Hour(START)
    assert fetch_table_emissions(source, hour, None) is None  # no table: no emissions
    assert fetch_table_emissions(object(), hour, parse_table(TABLE)) is None  # a source without nodes
    emissions = fetch_table_emissions(source, hour, parse_table(TABLE))
    assert emissions is not None
    assert emissions.nodes == (NodeGrams("node-a", 120, SOURCE, None, 300_000),)
    assert emissions.unmatched == ("node-b (instance type m6i.large)",)
    catch_all = {
        **TABLE,
        "nodes": [*TABLE["nodes"], {"label": "node.kubernetes.io/instance-type=m6i.large", "gramsPerHour": 30}],
    }
    covered = fetch_table_emissions(source, hour, parse_table(catch_all))
    assert covered is not None and not covered.unmatched
    assert [(n.name, n.grams, n.cost_micros) for n in covered.nodes] == [
        ("node-a", 120, 300_000),
        ("node-b", 20, 100_000),
    ]
    bare = FakePrometheus({"node_minutes": [Sample({"node": "node-c"}, Decimal(60))]})
    unlabelled = fetch_table_emissions(PrometheusAllocations(bare, cluster="c"), hour, parse_table(TABLE))
    assert unlabelled is not None
    assert unlabelled.unmatched == ("node-c (no instance-type label exported by kube-state-metrics)",)


ENV = {
    "DATABASE_URL": "postgresql://u:hunter2@db/x",
    "PING_TOKEN": "t0k",
    "ALLOCATION_SOURCE": "prometheus",
    "PROMETHEUS_URL": "http://prometheus:9090",
}


def test_the_table_is_read_at_cold_start(tmp_path: Path) -> None:
    path = tmp_path / "table.yaml"
    path.write_text(
        "source: Example grid factors 2026\nregion: eu-west-1\n"
        "nodes:\n  - instanceType: m5.xlarge\n    gramsPerHour: '120.5'\n"
    )
    settings = load(CollectAllocationsSettings, {**ENV, "CARBON_EMISSION_TABLE": str(path)})
    table = settings.emission_table
    assert table is not None and (table.source, table.region, table.factors[0].grams_per_hour) == (
        "Example grid factors 2026",
        "eu-west-1",
        Decimal("120.5"),
    )
    assert load(CollectAllocationsSettings, ENV).emission_table is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, r"settings: CARBON_EMISSION_TABLE .*table\.yaml: No such file"),
        ("source: [x\n", r"CARBON_EMISSION_TABLE .*table\.yaml, line 2, column 1: not valid YAML"),
        ("nodes: []\n", r"CARBON_EMISSION_TABLE .*table\.yaml: source: required"),
        (
            "source: x\nnodes:\n  - instanceType: m5.xlarge\n    gramsPerHour: 1.5\n",
            r"CARBON_EMISSION_TABLE .*table\.yaml: nodes\[0\]\.gramsPerHour: 1\.5 is a float",
        ),
        ("source: x\nnodes:\n  - label: pool\n    gramsPerHour: 1\n", r"nodes\[0\]\.label: 'pool' is not key=value"),
    ],
)
def test_a_bad_table_refuses_the_settings_naming_the_variable_and_the_field(
    tmp_path: Path, text: str | None, message: str
) -> None:
    path = tmp_path / "table.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load(CollectAllocationsSettings, {**ENV, "CARBON_EMISSION_TABLE": str(path)})


def test_the_table_is_refused_with_the_opencost_source(tmp_path: Path) -> None:
    path = tmp_path / "table.yaml"
    path.write_text("source: x\nnodes:\n  - instanceType: m5.xlarge\n    gramsPerHour: 1\n")
    env = {**ENV, "ALLOCATION_SOURCE": "opencost", "OPENCOST_URL": "http://oc:9003", "CARBON_EMISSION_TABLE": str(path)}
    with pytest.raises(ConfigError, match="CARBON_EMISSION_TABLE is for ALLOCATION_SOURCE prometheus"):
        load(CollectAllocationsSettings, env)
