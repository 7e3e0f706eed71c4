"""Emissions beside cost: each node's and disk's grams of CO2e in an hour, split over the allocations
that ran there by the same shares as their cost, in whole grams that add up exactly.

Why grams and integers: an emission report is read like a bill. A team's line, the idle line and
the cluster's total must agree to the last unit however the lines are grouped, which floats
cannot promise. So every figure is an integer number of grams, and the only rounding happens
twice, each time by a rule that keeps sums intact:

1. **A node's (or disk's) hour** becomes whole grams once, half-even, from its factor:
   OpenCost's estimate (``/assets/carbon``, metric tonnes over the window: ``tonnes_to_grams``), or
   the operator's emission table (grams per hour x the hour's minutes / 60: ``EmissionTable``).
2. **Its grams are apportioned** (``apportion``) over the allocation rows on it and its idle, in
   proportion to weights in micros, exactly as ``Fraction``s, then rounded by largest remainder
   (``finops.rounding``) so the parts add up to the node's grams.

The weights are the cost shares (``node_shares``): each workload row on the node weighs its
CPU + RAM + GPU cost, the node's idle weighs the node's cost minus its rows' (OpenCost's idle,
money rules). Two rules keep grams physical where money may not be:

* a negative weight (a row whose cost adjustment is a credit larger than its cost; rows above the
  node's cost, leaving a negative idle) counts as zero: a credit does not remove emissions;
* a node whose weights are all zero (no cost known) puts all its grams on idle: nothing is dropped.

Disks are not per row in the allocations, so the hour's disks' grams are apportioned over every
row's volume cost (``pv_cost_micros``) the same way, the rest (no volume cost) to idle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from finops.errors import InvalidInput
from finops.labels import sanitize_label_key
from finops.rounding import largest_remainder

GRAMS_PER_TONNE = 1_000_000
MAX_GRAMS = 2**63 - 1  # a bigint column
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
_LABEL = re.compile(r"^([^=\s]+)=([^=\s]*)$")


def tonnes_to_grams(value: Decimal, field: str) -> int:
    """OpenCost's ``co2e`` (metric tonnes) as whole grams, half-even; refuses a negative or
    non-finite figure naming ``field``."""
    if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
        raise InvalidInput(f"{field}: {value} is not a finite, non-negative number of tonnes CO2e")
    grams = int((value * GRAMS_PER_TONNE).to_integral_value(ROUND_HALF_EVEN))
    if grams > MAX_GRAMS:
        raise InvalidInput(f"{field}: {value} tonnes CO2e is beyond what can be stored")
    return grams


def kilograms(grams: int) -> str:
    """Grams as kilograms, exactly (three decimals): what reports print beside the grams."""
    return str((Decimal(grams) / 1000).quantize(Decimal("0.001")))


def apportion(grams: int, weights: Sequence[int], rest: int) -> tuple[list[int], int]:
    """``grams`` over ``weights`` and a remainder weighing ``rest`` (idle): whole grams, one part per
    weight and the rest's part, adding up to ``grams`` exactly. Negative weights count as zero;
    with every weight zero the rest takes all."""
    if grams < 0:
        raise InvalidInput(f"grams: {grams} is negative")
    clamped = [max(w, 0) for w in weights]
    rest = max(rest, 0)
    whole = sum(clamped) + rest
    if whole == 0:
        return [0] * len(clamped), grams
    exact = [Fraction(grams * w, whole) for w in (*clamped, rest)]
    parts = largest_remainder(exact, grams)
    return parts[:-1], parts[-1]


def node_shares(grams: int, node_cost_micros: int, row_costs: Sequence[int]) -> tuple[list[int], int]:
    """A node's hour of ``grams`` over its rows by their cost (``row_costs``, micros) and its idle,
    the node's cost less its rows' (module docstring)."""
    return apportion(grams, row_costs, node_cost_micros - sum(row_costs))


def node_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """A node's labels keyed as kube-state-metrics and OpenCost export them (``kube_node_labels``'
    ``label_node_kubernetes_io_instance_type`` without its ``label_``): a table's keys are written
    as on the Node (``node.kubernetes.io/instance-type``) and compared in this form, so either
    spelling of a node's labels matches."""
    return {sanitize_label_key(key): value for key, value in labels.items()}


@dataclass(frozen=True)
class Factor:
    """One line of an emission table: the nodes it applies to and their grams CO2e per hour."""

    grams_per_hour: Decimal
    instance_type: str | None = None  # matches the node's instance-type label
    label: tuple[str, str] | None = None  # (key, value): matches a node label

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether the node of ``labels`` (keyed as ``node_labels`` gives them) is this line's."""
        if self.instance_type is not None:
            return any(labels.get(sanitize_label_key(key)) == self.instance_type for key in INSTANCE_TYPE_LABELS)
        assert self.label is not None  # parse_table requires one of the two
        return labels.get(sanitize_label_key(self.label[0])) == self.label[1]


@dataclass(frozen=True)
class Match:
    """What the table says of one node in one hour."""

    grams: int
    source: str
    region: str | None


@dataclass(frozen=True)
class EmissionTable:
    """The operator's per-node emission factors (``CARBON_EMISSION_TABLE``), for a source without
    OpenCost's estimates: the first factor matching a node's labels applies; ``source`` names where
    the figures come from (shown beside every figure), ``region`` the grid they stand for."""

    source: str
    region: str | None
    factors: tuple[Factor, ...]

    def node_hour(self, labels: Mapping[str, str], minutes: Decimal = Decimal(60)) -> Match | None:
        """The node's grams for ``minutes`` of an hour (half-even), by the first factor (in the
        table's order) matching its labels, whichever their key spelling; None when none does."""
        keyed = node_labels(labels)
        for factor in self.factors:
            if factor.matches(keyed):
                grams = int((factor.grams_per_hour * minutes / 60).to_integral_value(ROUND_HALF_EVEN))
                region = self.region or next(
                    (keyed[k] for k in map(sanitize_label_key, REGION_LABELS) if keyed.get(k)), None
                )
                return Match(grams, self.source, region)
        return None


def parse_table(document: Any, origin: str = "emission table") -> EmissionTable:
    """An emission table from its parsed YAML or JSON (``docs/how-to/carbon.md``); every problem
    refuses it with one line naming the field."""
    if not isinstance(document, Mapping):
        raise InvalidInput(f"{origin}: must be a mapping with source and nodes")
    unknown = sorted(set(document) - {"source", "region", "nodes"})
    if unknown:
        raise InvalidInput(f"{origin}: unknown key {unknown[0]!r} (source, region, nodes)")
    source = document.get("source")
    if not isinstance(source, str) or not source.strip():
        raise InvalidInput(f"{origin}: source: required, the name of where the factors come from")
    region = document.get("region")
    if region is not None and (not isinstance(region, str) or not region.strip()):
        raise InvalidInput(f"{origin}: region: must be a non-empty string when given")
    nodes = document.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise InvalidInput(f"{origin}: nodes: required, a non-empty list of factors")
    factors = tuple(_factor(entry, f"{origin}: nodes[{i}]") for i, entry in enumerate(nodes))
    return EmissionTable(source.strip(), region.strip() if region else None, factors)


def _factor(entry: Any, where: str) -> Factor:
    if not isinstance(entry, Mapping):
        raise InvalidInput(f"{where}: must be a mapping with instanceType or label, and gramsPerHour")
    unknown = sorted(set(entry) - {"instanceType", "label", "gramsPerHour"})
    if unknown:
        raise InvalidInput(f"{where}: unknown key {unknown[0]!r} (instanceType, label, gramsPerHour)")
    if ("instanceType" in entry) == ("label" in entry):
        raise InvalidInput(f"{where}: exactly one of instanceType or label")
    grams = _grams_per_hour(entry.get("gramsPerHour"), f"{where}.gramsPerHour")
    if "instanceType" in entry:
        kind = entry["instanceType"]
        if not isinstance(kind, str) or not kind.strip():
            raise InvalidInput(f"{where}.instanceType: must be a non-empty string")
        return Factor(grams, instance_type=kind.strip())
    text = entry["label"]
    found = _LABEL.match(text) if isinstance(text, str) else None
    if found is None:
        raise InvalidInput(f"{where}.label: {text!r} is not key=value")
    return Factor(grams, label=(found.group(1), found.group(2)))


def _grams_per_hour(value: Any, where: str) -> Decimal:
    """An integer or a decimal string; a YAML float is refused, being already binary-rounded."""
    if isinstance(value, float):
        raise InvalidInput(f"{where}: {value!r} is a float; write it as a string ('{value!r}') or an integer")
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidInput(f"{where}: required, grams CO2e per hour (an integer or a decimal string)")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise InvalidInput(f"{where}: {value!r} is not a number") from None
    if not number.is_finite() or number < 0:
        raise InvalidInput(f"{where}: {value!r} is not a finite, non-negative number")
    if number > MAX_GRAMS:
        raise InvalidInput(f"{where}: {value!r} is beyond what can be stored")
    return number
