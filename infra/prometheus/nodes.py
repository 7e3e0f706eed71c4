"""The hour's nodes as Prometheus saw them, for emissions from the operator's table
(``CARBON_EMISSION_TABLE``, ``usecases.collect_allocations.carbon``): each node's minutes in the
window, its labels and what its allocatable capacity costs.

Read from kube-state-metrics (``promql.node_queries``):

* the minutes: the window's steps at which ``kube_node_status_allocatable`` had a series of the
  node (a node created or deleted mid-hour counts its part);
* the labels: ``kube_node_labels``' ``label_<sanitised key>`` labels, without ``label_``; when they
  changed in the hour, the set seen longest (ties: the first in label order). kube-state-metrics
  exports a node label only when allowed (``--metric-labels-allowlist=nodes=[...]``);
* the capacity: core-, byte- and GPU-minutes of ``kube_node_status_allocatable``, priced by the
  source like the ``__idle__`` line's capacity (``PrometheusAllocations.node_hours``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from infra.prometheus.client import Sample
from infra.prometheus.kube_state import kube_labels, longest_labels
from infra.prometheus.promql import GPU_RESOURCE

# (core-, byte-, GPU-minutes) -> their cost; None when unpriced
Pricing = Callable[[Decimal, Decimal, Decimal], Decimal | None]


@dataclass(frozen=True)
class NodeHour:
    """One node in one window."""

    name: str
    minutes: Decimal  # of the window it existed
    labels: Mapping[str, str]  # sanitised keys: node_kubernetes_io_instance_type
    cost: Decimal | None  # CPU + RAM + GPU of its allocatable capacity, as the source prices; None: unpriced


def node_hours(answers: Mapping[str, list[Sample]], price: Pricing) -> list[NodeHour]:
    """The window's nodes by name (see the module docstring)."""
    capacity: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for s in answers["node_capacity"]:
        capacity[s.labels.get("node", "")][s.labels.get("resource", "")] = s.value
    seen = longest_labels(answers["node_labels"], "node", kube_labels)
    out = []
    for s in sorted(answers["node_minutes"], key=lambda s: s.labels.get("node", "")):
        name = s.labels.get("node", "")
        if not name or s.value <= 0:
            continue
        labels = seen.get(name, {})
        units = capacity.get(name, {})
        cost = price(units.get("cpu", Decimal(0)), units.get("memory", Decimal(0)), units.get(GPU_RESOURCE, Decimal(0)))
        out.append(NodeHour(name=name, minutes=s.value, labels=labels, cost=cost))
    return out
