"""We test these aspects of how the Prometheus source prices (no I/O: a fake query port answers
each of the method's queries by name):

- costs are ``unit-minutes x rate / 60`` rounded half-even to micros per row and resource, the
  total is the sum of the rounded parts, and idle is the capacity's rounded cost minus the rows';
- without a PriceBook every cost is None (unpriced, never 0) while quantities are kept;
- another aggregation, or no owner label on any namespace with cost, is refused with one line;
- ``lbHour`` is a PriceBook rate; a book that leaves it at 0 keeps the fingerprint (the stored
  version) it had before the rate existed, and one that sets it is a new version.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from finops.allocations import DEFAULT_AGGREGATION, IDLE
from finops.errors import SourceMisconfigured
from finops.pricebooks import parse_pricebook
from infra.prometheus import Sample, promql
from infra.prometheus.source import PrometheusAllocations

START = datetime(2026, 11, 20, 10, tzinfo=UTC)
END = START + timedelta(hours=1)
NAMES = {text: name for name, text in promql.queries(3600).items()}
APP = {"namespace": "shop", "pod": "web-1", "container": "app"}


class FakePrometheus:
    """Answers each of the method's queries by name; records the evaluation times."""

    def __init__(self, answers: dict[str, list[Sample]]) -> None:
        self.answers = answers
        self.times: set[datetime] = set()

    def query(self, text: str, at: datetime, *, retry_until: float | None = None) -> list[Sample]:
        self.times.add(at)
        return self.answers.get(NAMES[text], [])


def one_container(labels: dict[str, str] | None = None) -> FakePrometheus:
    """One container billed 0.5 core (request) and 1 GiB (usage) for 30 of the hour's minutes."""
    return FakePrometheus(
        {
            "cpu_billed": [Sample(APP, Decimal("15"))],
            "cpu_request": [Sample(APP, Decimal("15"))],
            "cpu_usage": [Sample(APP, Decimal("7.5"))],
            "ram_billed": [Sample(APP, Decimal(30 * 2**30))],
            "ram_usage": [Sample(APP, Decimal(30 * 2**30))],
            "minutes": [Sample(APP, Decimal(30))],
            "namespace_labels": [Sample({"namespace": "shop", **(labels or {"label_team": "checkout"})}, Decimal(1))],
            "capacity": [
                Sample({"resource": "cpu"}, Decimal(4 * 60)),
                Sample({"resource": "memory"}, Decimal(8 * 60 * 2**30)),
            ],
        }
    )


RATES = {"cpuHour": Decimal("0.031611"), "ramGbHour": Decimal("0.004237"), "gpuHour": Decimal("0.95")}


def test_costs_round_per_row_and_idle_is_capacity_minus_the_rows() -> None:
    source = PrometheusAllocations(one_container(), cluster="c").priced(RATES)
    (entries,) = source.allocation(START, END, aggregate=DEFAULT_AGGREGATION)
    app = entries["shop/__unallocated__/__unallocated__/web-1/app"]
    # 15 core-minutes x 0.031611 / 60 = 0.0079027500 -> 0.007903 (half-even); 30 GiB-minutes -> 0.0021185 -> 0.002118
    assert (app["cpuCost"], app["ramCost"], app["gpuCost"]) == (Decimal("0.007903"), Decimal("0.002118"), Decimal(0))
    assert app["totalCost"] == Decimal("0.010021") and app["cpuCoreHours"] == Decimal("0.25")
    assert app["properties"]["namespaceLabels"] == {"team": "checkout"}  # type: ignore[index]
    idle = entries[IDLE]
    assert idle["cpuCost"] == Decimal("0.126444") - Decimal("0.007903")  # 4 cores x 0.031611
    assert idle["ramCost"] == Decimal("0.033896") - Decimal("0.002118")  # 8 GiB x 0.004237
    assert idle["cpuCoreHours"] == Decimal("3.75")


def test_queries_are_evaluated_just_before_the_window_ends() -> None:
    fake = one_container()
    PrometheusAllocations(fake, cluster="c").allocation(START, END, aggregate=DEFAULT_AGGREGATION)
    assert fake.times == {END - timedelta(milliseconds=1)}


def test_without_a_pricebook_costs_are_unknown_not_zero() -> None:
    (entries,) = PrometheusAllocations(one_container(), cluster="c").allocation(
        START, END, aggregate=DEFAULT_AGGREGATION
    )
    app = entries["shop/__unallocated__/__unallocated__/web-1/app"]
    assert (app["cpuCost"], app["totalCost"], entries[IDLE]["cpuCost"]) == (None, None, None)
    assert app["cpuCoreHours"] == Decimal("0.25")


def test_no_data_is_an_empty_answer() -> None:
    assert (
        PrometheusAllocations(FakePrometheus({}), cluster="c").allocation(START, END, aggregate=DEFAULT_AGGREGATION)
        == []
    )


def test_refusals_are_one_line() -> None:
    source = PrometheusAllocations(one_container(), cluster="c")
    with pytest.raises(SourceMisconfigured, match="computes 'namespace,controllerKind,controller,pod,container' only"):
        source.allocation(START, END, aggregate="namespace")
    unlabelled = PrometheusAllocations(one_container({"label_owner": "x"}), cluster="c", cost_center_label="cc")
    with pytest.raises(SourceMisconfigured) as caught:
        unlabelled.allocation(START, END, aggregate=DEFAULT_AGGREGATION)
    assert "--metric-labels-allowlist=namespaces=[team,cc]" in caught.value.message and "\n" not in caught.value.message


def book(**rates: str) -> dict[str, object]:
    return {
        "metadata": {"namespace": "finops", "name": "b", "uid": "u"},
        "spec": {"currency": "USD", "valuationMode": "currency", "rates": {"cpuHour": "0.031611", **rates}},
    }


def test_lb_hour_is_a_rate_and_a_zero_one_keeps_the_stored_version() -> None:
    parsed = parse_pricebook(book(lbHour="0.025"))
    assert parsed.rates["lbHour"] == Decimal("0.025")
    # The digest as it was before lbHour existed: the seven older rates only.
    older = ("cpuHour", "spotCPUHour", "ramGbHour", "spotRAMGbHour", "pvGbHour", "gpuHour", "networkGiB")
    document = {"currency": "USD", "mode": "currency", **{f: "0.031611" if f == "cpuHour" else "0" for f in older}}
    before = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]
    assert parse_pricebook(book()).fingerprint == before == parse_pricebook(book(lbHour="0")).fingerprint
    assert parsed.fingerprint != before
