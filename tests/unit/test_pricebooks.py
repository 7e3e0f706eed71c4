"""We test these aspects of PriceBook election and parsing:

- the marker counts as an annotation or a label (the operator's chart used a label it ignored);
- without a marker the incumbent stays; without one either, the newest bootstraps;
- ties go to namespace then name; parsing names the bad field;
- rates stay exact Decimals (never micros), and the version fingerprint is built from the exact
  rates, normalised ("0.10" is "0.1"), so a sub-micro change is a new version.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from finops.errors import InvalidInput
from finops.pricebooks import ACTIVE_MARKER, elect_active, parse_pricebook


def book(name: str, *, ns: str = "finops", created: str = "2026-01-01T00:00:00Z", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "creationTimestamp": created, "uid": f"uid-{name}"}
    meta.update(extra.pop("meta", {}))
    return {
        "metadata": meta,
        "spec": {"currency": "EUR", "valuationMode": "currency", "rates": {"cpuHour": "0.03", "ramGbHour": "0.004"}},
        **extra,
    }


def test_label_marker_wins_over_a_newer_book() -> None:
    marked = book("old", created="2025-01-01T00:00:00Z", meta={"labels": {ACTIVE_MARKER: "true"}})
    assert elect_active([book("new", created="2026-06-01T00:00:00Z"), marked]) is marked


def test_annotation_marker_wins_over_the_incumbent() -> None:
    incumbent = book("inc", status={"active": True})
    marked = book("marked", meta={"annotations": {ACTIVE_MARKER: "true"}})
    assert elect_active([incumbent, marked]) is marked


def test_incumbent_stays_without_markers() -> None:
    incumbent = book("inc", created="2025-01-01T00:00:00Z", status={"active": True})
    assert elect_active([book("newer", created="2026-06-01T00:00:00Z"), incumbent]) is incumbent


def test_newest_bootstraps_and_ties_go_to_namespace_then_name() -> None:
    assert elect_active([book("a"), book("b", created="2026-02-01T00:00:00Z")])["metadata"]["name"] == "b"  # type: ignore[index]
    tie = [book("b", ns="x"), book("a", ns="x"), book("z", ns="w")]
    assert elect_active(tie)["metadata"]["name"] == "z"  # type: ignore[index]
    assert elect_active([]) is None


def with_rates(**rates: str) -> dict[str, Any]:
    obj = book("p")
    obj["spec"]["rates"].update(rates)
    return obj


def test_parse_gives_exact_rates_and_a_stable_fingerprint() -> None:
    parsed = parse_pricebook(with_rates(pvGbHour="0.00005479452"))
    assert parsed.rates["cpuHour"] == Decimal("0.03") and parsed.rates["gpuHour"] == 0
    assert parsed.rates["pvGbHour"] == Decimal("0.00005479452")  # not 55 micros
    assert all(isinstance(rate, Decimal) for rate in parsed.rates.values())
    assert parsed.fingerprint == parse_pricebook(with_rates(pvGbHour="0.00005479452")).fingerprint
    assert parse_pricebook(with_rates(cpuHour="0.031")).fingerprint != parsed.fingerprint


def test_the_fingerprint_normalises_rates_but_sees_sub_micro_changes() -> None:
    plain = parse_pricebook(with_rates(cpuHour="0.1", gpuHour="2"))
    assert parse_pricebook(with_rates(cpuHour="0.10", gpuHour="2.000")).fingerprint == plain.fingerprint
    assert parse_pricebook(with_rates(cpuHour="0.1000001", gpuHour="2")).fingerprint != plain.fingerprint
    assert parse_pricebook(with_rates(spotCPUHour="0")).fingerprint == parse_pricebook(book("p")).fingerprint


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda b: b["spec"].update(currency="eur"), "spec.currency"),
        (lambda b: b["spec"].pop("rates"), "spec.rates"),
        (lambda b: b["spec"]["rates"].update(cpuHour="-1"), "spec.rates.cpuHour"),
        (lambda b: b["spec"]["rates"].update(pvGbHour="0.0000000000000001"), "spec.rates.pvGbHour"),
        (lambda b: b["spec"]["rates"].update(gpuHour=1.5), "spec.rates.gpuHour"),
        (lambda b: b["spec"]["rates"].update(cpuHours="1"), "spec.rates.cpuHours"),
        (lambda b: b["spec"].update(valuationMode="percent"), "spec.valuationMode"),
    ],
    ids=["currency", "no-rates", "negative-rate", "16-places", "yaml-number", "unknown-rate", "percent-mode"],
)
def test_parse_names_the_bad_field(mutate: Any, field: str) -> None:
    obj = book("bad")
    mutate(obj)
    with pytest.raises(InvalidInput, match=field.replace(".", r"\.")):
        parse_pricebook(obj)
