"""Which resource a bill line bills, and on which days (finops.reconciliation): ids compared
without scheme, leading slashes and case, the index of every cluster's resources, and a line
prorated exactly by time over the report's days."""

from __future__ import annotations

import time as clock
from datetime import UTC, date, datetime, timedelta, timezone
from fractions import Fraction

import pytest

from finops.bill_lines import ResourceIndex, ids_match, normalise_id
from finops.reconciliation import Asset, BillCharge

D1, D2, D3 = date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)
M = 1_000_000


def at(day: date, hour: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour)


def test_provider_ids_match_the_billed_ids() -> None:
    assert ids_match("aws:///eu-west-1a/i-0aaa", "i-0aaa")
    assert ids_match(
        "azure:///subscriptions/S/resourceGroups/R/providers/x/virtualMachines/vm1",
        "/subscriptions/s/resourcegroups/r/providers/x/virtualMachines/vm1",
    )
    assert not ids_match("aws:///eu-west-1a/i-0aaa", "i-0aa")
    assert not ids_match("aws:///eu-west-1a/i-0aaa", "")


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("AWS:///EU-West-1a/I-0AAA", "eu-west-1a/i-0aaa"),  # a scheme in any case, then case
        ("gce://Proj/zone/vm-1", "proj/zone/vm-1"),
        ("///subscriptions/S/vm1", "subscriptions/s/vm1"),  # leading slashes only
        ("vol-1/", "vol-1/"),
        ("  i-0aaa \n", "i-0aaa"),
        ("Xen-1", "xen-1"),
        ("i-0aaa", "i-0aaa"),
        ("aws://", ""),
        ("", ""),
    ],
)
def test_an_id_is_compared_without_scheme_leading_slashes_and_case(raw: str, normal: str) -> None:
    assert normalise_id(raw) == normal


def test_ids_match_either_way_round_and_never_when_empty() -> None:
    assert ids_match("i-0aaa", "aws:///eu-west-1a/i-0aaa")  # the billed id is the longer one
    assert ids_match("AWS://I-0AAA", "i-0aaa")
    assert not ids_match("i-0aaa", "aws:///eu-west-1a/xi-0aaa")  # a tail, not a suffix
    assert not ids_match("", "")
    assert not ids_match("aws://", "/")
    assert not ids_match("vol-1/", "aws://") and not ids_match("", "vol-1/")  # one side empty


def test_the_index_finds_a_resource_by_any_spelling_of_its_id() -> None:
    vm = "azure:///subscriptions/S/resourceGroups/R/providers/x/virtualMachines/vm1"
    items = [Asset(D1, "node", "vm1", vm, M), Asset(D2, "node", "vm1", vm, M), Asset(D1, "disk", "pvc-0", "", M)]
    index = ResourceIndex({"demo": items, "other": [Asset(D1, "node", "n9", "i-0999", M)]})
    assert index.find("/subscriptions/s/resourcegroups/r/providers/x/virtualMachines/vm1") == ("demo", "node", "vm1")
    assert index.find("VM1") == ("demo", "node", "vm1")
    assert index.find("aws:///eu-west-1a/i-0999") == ("other", "node", "n9")
    assert index.find("/subscriptions/s/resourcegroups/r/providers/x/virtualMachines/vm2") is None
    assert index.find("") is None and index.find(None) is None and index.find("aws://") is None


def test_a_line_is_prorated_over_the_days_given_only() -> None:
    charge = BillCharge("c", at(D1, 12), at(D3), 3 * M, None, "usage")  # 36 hours
    assert charge.per_day(3 * M, [D1, D2, D3, date(2026, 10, 31)]) == {D1: Fraction(M), D2: Fraction(2 * M)}
    assert charge.per_day(3 * M, [D2]) == {D2: Fraction(2 * M)}
    assert charge.per_day(3 * M, [D3]) == {}
    odd = BillCharge("c", at(D1, 14), at(D2, 8), 7, None, "usage")  # 10 hours, then 8
    assert odd.per_day(7, [D1, D2]) == {D1: Fraction(35, 9), D2: Fraction(28, 9)}


def test_a_line_at_a_moment_counts_whole_on_its_utc_day(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "XMT-14")  # the machine's zone plays no part
    clock.tzset()
    try:
        moment = datetime(2026, 11, 1, 23, 30, tzinfo=timezone(timedelta(hours=-2)))  # Nov 2, 01:30 UTC
        charge = BillCharge("c", moment, moment, 5 * M, None, "usage")
        assert charge.per_day(5 * M, [D1, D2, D3]) == {D2: Fraction(5 * M)}
        assert charge.per_day(5 * M, [D1, D3]) == {}
        noon = BillCharge("c", at(D1, 12), at(D1, 12), 5 * M, None, "usage")
        assert noon.per_day(5 * M, [D1]) == {D1: Fraction(5 * M)}
    finally:
        monkeypatch.undo()
        clock.tzset()
