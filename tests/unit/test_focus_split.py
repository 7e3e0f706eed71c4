"""We test these aspects of FOCUS 1.3's split cost allocation (``finops.focus_split``):

- a namespace's row of a cluster-day, as written: the origin's dimensions (the cluster, the day),
  the method, the recipient and its tags, and its ratio of the day's cost, computed here by hand;
- the method's example split: each cluster-day's rows add up to the day's cost, the fixed fee's
  rows to the fee exactly; idle kept apart is the unallocated portion (no recipient), idle
  distributed goes to the lines with ``idle-proportional``; a shared cloud charge goes to every
  line with allocated cost, cloud-only teams included;
- on generated data (hypothesis): for any month, policy and cloud spend, the rows of every origin
  charge add up to it (exactly when it is whole cents, within a cent of its exact micros
  otherwise), keep its dimensions, and their ratios add up to exactly 1; grouped by line the rows
  still give the chargeback report's lines to the cent (``assert_itemises``);
- when the report's cents cannot be reached without breaking a whole-cent origin (one-cent fees
  split evenly), the origins stay exact, each line is within a cent, and the export says so.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import date
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tests.unit.test_chargeback_properties as base
from finops.chargeback import DirectCost
from finops.focus import DailyCost, FocusExport, build_focus
from finops.focus_split import LINES_NOTE, RATIO_PLACES
from finops.policy import Policy, parse_policy
from tests.unit.test_focus import EXAMPLE, NOVEMBER, M, assert_itemises, daily_costs, direct_costs, policy

NOVEMBER_FIRST = date(2026, 11, 1)
DETAILS = ("ResourceId", "ChargePeriodStart", "ChargePeriodEnd", "ChargeDescription", "x_Cluster")
KEPT = ("ResourceName", "ResourceType", "ChargeCategory", "ChargeFrequency", "ServiceName", "BillingAccountId")


def origins(export: FocusExport) -> dict[tuple[str, ...], list[dict[str, str]]]:
    """The split rows, by origin charge."""
    grouped: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for row in export.rows():
        if row["AllocatedMethodId"]:
            grouped[tuple(row[c] for c in DETAILS)].append(row)
    return dict(grouped)


def ratio(row: dict[str, str]) -> Decimal:
    (element,) = json.loads(row["AllocatedMethodDetails"], parse_float=Decimal)["Elements"]
    return Decimal(element["AllocatedRatio"])


def details_of(ratio: Decimal) -> str:
    element = f'"AllocatedRatio":{ratio},"UsageUnit":"Core-Hours","UsageQuantity":2.4'
    return '{"Elements":[{' + element + "}]}"


def test_a_split_row_as_written() -> None:
    export = build_focus(EXAMPLE, policy(), period=NOVEMBER)
    payments = next(r for r in export.rows() if r["AllocatedResourceId"] == "prod/payments")
    # The day: payments 133.333333, catalog 66.666666, analytics 33.333333, kube-system 40.000000
    # and idle 33.333333 (micros of monthly // 30): 306.666665 in all.
    day = Fraction(133_333_333, 133_333_333 + 66_666_666 + 33_333_333 + 40_000_000 + 33_333_333)
    assert {k: v for k, v in payments.items() if v and k.startswith(("Allocated", "Resource", "Charge"))} == {
        "AllocatedMethodId": "max-request-usage",
        "AllocatedMethodDetails": details_of(Decimal(round(day * 10**12)).scaleb(-12)),
        "AllocatedResourceId": "prod/payments",
        "AllocatedResourceName": "payments",
        "AllocatedTags": '{"cost-center":"cc-1","namespace":"payments","team":"payments"}',
        "ChargeCategory": "Usage",
        "ChargeDescription": "Cluster prod for the day: nodes, volumes and load balancers",
        "ChargeFrequency": "Usage-Based",
        "ChargePeriodEnd": "2026-11-02T00:00:00Z",
        "ChargePeriodStart": "2026-11-01T00:00:00Z",
        "ResourceId": "prod",
        "ResourceName": "prod",
        "ResourceType": "Kubernetes Cluster",
    }
    assert (payments["BilledCost"], payments["x_CoreHours"], payments["Tags"]) == ("133.34", "2.4", "{}")


@pytest.mark.parametrize("idle", ["separate", "distribute"])
def test_the_methods_example_split(idle: str) -> None:
    direct = [DirectCost("cloud-only", None, 90 * M, "Amazon S3"), DirectCost(None, None, 21 * M, "Tax", shared=True)]
    export = build_focus(EXAMPLE, policy(idle=idle), period=NOVEMBER, direct=direct)
    assert_itemises(export, export.report)
    split = origins(export)
    days = [rows for key, rows in split.items() if key[0] == "prod"]
    assert len(days) == 30
    for rows in days:  # 306.666665 a day: 306.66 or 306.67
        assert sum(Decimal(r["BilledCost"]) for r in rows) in (Decimal("306.66"), Decimal("306.67"))
        assert sum(ratio(r) for r in rows) == 1
    month = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    fee = split[("prod/control plane", *month, "Fixed shared cost control plane of cluster prod", "prod")]
    assert sorted((r["AllocatedResourceId"], r["BilledCost"]) for r in fee) == [
        ("prod/__overhead__/analytics", "114.29"),  # 800 x 1,000 / 7,000
        ("prod/__overhead__/catalog", "228.57"),
        ("prod/__overhead__/payments", "457.14"),
    ]
    idle_rows = [r for rows in days for r in rows if r["AllocatedMethodId"].startswith("idle-")]
    if idle == "separate":
        assert {(r["AllocatedMethodId"], r["AllocatedResourceId"], r["x_LineKind"]) for r in idle_rows} == {
            ("idle-separate", "", "idle")
        }
    else:
        assert {r["AllocatedMethodId"] for r in idle_rows} == {"idle-proportional"}
        assert {r["AllocatedResourceName"] for r in idle_rows} == {"payments", "catalog", "analytics"}
    (tax,) = [rows for key, rows in split.items() if key[3].endswith("Tax")]
    assert sum(Decimal(r["BilledCost"]) for r in tax) == Decimal("21.00")
    assert "cloud-only" in {r["AllocatedResourceName"] for r in tax}  # a team with only cloud spend gets its share
    owned = [r for r in export.rows() if r["ServiceName"] == "Amazon S3"]
    assert [(r["BilledCost"], r["AllocatedMethodId"]) for r in owned] == [("90.00", "")]  # owned whole, not split


def expected_origins(daily: list[DailyCost], policy: Policy, direct: list[DirectCost], clusters: set[str]) -> dict:
    """Each origin charge's exact cost in cents, from the inputs."""
    exact: dict[tuple[str, ...], Fraction] = defaultdict(Fraction)
    for d in daily:
        day = d.day.isoformat()
        key = (d.cluster, f"{day}T00:00:00Z")
        exact[key] += Fraction(d.micros, 10_000)
    for fixed in policy.shared.fixed:
        for cluster in clusters:
            if fixed.applies_to(cluster):
                exact[(f"{cluster}/{fixed.name}", "2026-11-01T00:00:00Z")] += Fraction(fixed.amount_micros, 10_000)
    for cost in direct:
        if cost.shared:
            exact[("", "Cloud charge shared by every line: " + cost.label)] += cost.within(NOVEMBER) / 10_000
    return exact


@given(
    daily=st.lists(daily_costs(), max_size=30),
    policy=base.policies,
    direct=direct_costs("rds", "tax"),
)
def test_every_origin_charge_is_split_exactly(daily: list[DailyCost], policy: Policy, direct: list[DirectCost]) -> None:
    export = build_focus(daily, policy, period=NOVEMBER, direct=direct)
    assert_itemises(export, export.report)
    expected = expected_origins(daily, policy, direct, set(export.report.clusters))
    found: dict[tuple[str, ...], Decimal] = defaultdict(Decimal)
    for (resource, start, _end, description, cluster), rows in origins(export).items():
        assert sum(ratio(r) for r in rows) == 1
        assert all(ratio(r).as_tuple().exponent >= -RATIO_PLACES for r in rows)
        for column in KEPT:
            assert len({r[column] for r in rows}) == 1, column  # the origin's dimensions, kept
        key = (resource, description) if not cluster else (resource if "/" in resource else cluster, start)
        found[key] += sum((Decimal(r["BilledCost"]) for r in rows), Decimal(0))
    for key, cents in found.items():
        exact = expected.pop(key)
        assert abs(Fraction(cents) * 100 - exact) < 1, (key, cents, exact)
        if exact.denominator == 1:
            assert Fraction(cents) * 100 == exact, key  # a whole-cent origin is kept to the cent
    assert not [key for key, exact in expected.items() if exact], expected  # every charge with money has rows


def test_origins_stay_exact_when_the_reports_cents_are_out_of_reach() -> None:
    # Two clusters, two teams each, a one-cent fee in each split evenly: half a cent per team. The
    # report gives the spare cents to its first lines (alpha and beta), but each fee is one whole
    # cent and cannot pay both: the fees stay exact, and the export says its lines are a cent off.
    daily = [
        *(DailyCost(NOVEMBER_FIRST, "c1", ns, ns, None, M, Decimal(1)) for ns in ("alpha", "beta")),
        *(DailyCost(NOVEMBER_FIRST, "c2", ns, ns, None, M, Decimal(1)) for ns in ("gamma", "delta")),
    ]
    shared = {"fixed": [{"name": "fee", "amount": "0.01"}], "split": "even"}
    export = build_focus(daily, parse_policy({"currency": "EUR", "shared": shared}), period=NOVEMBER)
    assert export.note == LINES_NOTE
    assert_itemises(export, export.report)  # the total to the cent, each line within a cent
    fees = [rows for key, rows in origins(export).items() if key[0].endswith("/fee")]
    assert [sum(Decimal(r["BilledCost"]) for r in rows) for rows in fees] == [Decimal("0.01")] * 2
    assert build_focus(daily[:2], parse_policy({"currency": "EUR", "shared": shared}), period=NOVEMBER).note is None
