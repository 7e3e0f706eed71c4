"""We test these aspects of the FOCUS rows of a month's chargeback (``finops.focus``):

- the rows itemise the report: grouped by ``x_LineKind`` and ``x_Owner`` they give the report's
  lines to the cent in every column, and ``BilledCost`` adds up to the report's total;
- on each row ``x_AllocatedCost + x_IdleCost + x_SharedCost = BilledCost = EffectiveCost = ListCost``;
- allocated cost comes as a row per day, namespace and owner; a shared namespace has no rows;
  overhead received is a row per cluster and line for the month; option B's idle a row per day;
  a pool without receivers a ``__shared__`` row; cloud spend a row per owner and service;
- the columns, timestamps (UTC, half-open days), tags and quantities as documented;
- FOCUS 1.2 conformance (``tests/focus_conformance.py``): every Mandatory column, allowed values,
  formats and cost rules, on every export built here; the issuer names the provider;
- on generated data (hypothesis): the same sums hold, and the rows conform, for any rows,
  policies and cloud spend.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tests.unit.test_chargeback_properties as base
from finops.chargeback import DirectCost, Period, Report
from finops.focus import DailyCost, FocusExport, build_focus
from finops.focus_rows import FocusVersion
from finops.policy import Policy, parse_policy
from tests.focus_conformance import check_rows

V1_2 = FocusVersion.V1_2  # the tests of the row layout: 1.2's (1.3's split rows are in test_focus_split.py)

M = 1_000_000
NOVEMBER = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
DAYS = [date(2026, 11, 1) + timedelta(days=n) for n in range(30)]


def spread(cluster: str, namespace: str, owner: str | None, monthly: int, cc: str | None = None) -> list[DailyCost]:
    """``monthly`` micros over November's 30 days, a tenth of a core a day."""
    return [DailyCost(day, cluster, namespace, owner, cc, monthly // 30, Decimal("2.4")) for day in DAYS]


def idle_days(cluster: str, monthly: int) -> list[DailyCost]:
    return [DailyCost(day, cluster, "", None, None, monthly // 30, Decimal("12"), is_idle=True) for day in DAYS]


# The method's example: nodes 8,000 (payments 4,000, catalog 2,000, analytics 1,000, idle 1,000),
# shared 2,000 (kube-system's 1,200 and a 800 control-plane fee).
EXAMPLE = [
    *spread("prod", "payments", "payments", 4000 * M, "cc-1"),
    *spread("prod", "catalog", "catalog", 2000 * M, "cc-2"),
    *spread("prod", "analytics", "analytics", 1000 * M, "cc-2"),
    *spread("prod", "kube-system", "platform", 1200 * M),
    *idle_days("prod", 1000 * M),
]


def policy(**overrides: object) -> Policy:
    shared = {"namespaces": ["kube-system"], "fixed": [{"name": "control plane", "amount": "800.00"}]}
    return parse_policy({"currency": "EUR", "shared": shared, **overrides})


def lines_of(export: FocusExport) -> dict[tuple[str, str], list[Decimal]]:
    sums: dict[tuple[str, str], list[Decimal]] = defaultdict(lambda: [Decimal(0)] * 4)
    for row in export.rows():
        key = (row["x_LineKind"], row["x_Owner"])
        parts = [Decimal(row[c]) for c in ("x_AllocatedCost", "x_IdleCost", "x_SharedCost", "BilledCost")]
        sums[key] = [a + b for a, b in zip(sums[key], parts, strict=True)]
    return dict(sums)


def assert_itemises(export: FocusExport, report: Report) -> None:
    assert sum((Decimal(r["BilledCost"]) for r in export.rows()), Decimal(0)) == report.total
    grouped = lines_of(export)
    for line in report.lines:
        expected = [line.allocated, line.idle, line.shared]
        found = grouped.pop((line.kind.value, line.owner), [Decimal(0)] * 4)[:3]
        if export.note is None:
            assert found == expected, line
        else:  # 1.3 when the origins' rounding cannot reach the report's figures: within a cent, said
            assert export.version is FocusVersion.V1_3
            assert all(abs(a - b) <= Decimal("0.01") for a, b in zip(found, expected, strict=True)), line
    assert not {line: sums for line, sums in grouped.items() if any(sums)}  # a line the report lacks nets to 0
    for row in export.rows():
        assert list(row) == list(export.columns)
        parts = sum(Decimal(row[c]) for c in ("x_AllocatedCost", "x_IdleCost", "x_SharedCost"))
        assert parts == Decimal(row["BilledCost"]) == Decimal(row["EffectiveCost"]) == Decimal(row["ListCost"])
        assert Decimal(row["BilledCost"]).as_tuple().exponent == -2
        assert row["ContractedCost"] == row["BilledCost"]
    assert check_rows(export.columns, export.rows(), export.version) == []


@pytest.mark.parametrize("idle", ["separate", "distribute"])
def test_the_methods_example_itemised(idle: str) -> None:
    export = build_focus(EXAMPLE, policy(idle=idle), period=NOVEMBER, version=V1_2)
    assert export.report.total == Decimal("10000.00")
    assert_itemises(export, export.report)
    allocated = [r for r in export.rows() if r["x_AllocatedCost"] != "0.00"]
    assert len(allocated) == 3 * 30  # a row per day and namespace; none for kube-system
    assert not [r for r in export.rows() if "kube-system" in r["ResourceId"]]
    overhead = [r for r in export.rows() if r["ResourceId"] == "prod/__overhead__"]
    assert [(r["x_Owner"], r["ChargePeriodStart"], r["ChargePeriodEnd"]) for r in overhead] == [
        (owner, "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z") for owner in ("analytics", "catalog", "payments")
    ]
    idle_rows = [r for r in export.rows() if r["x_LineKind"] == "idle"]
    assert len(idle_rows) == (30 if idle == "separate" else 0)
    if idle == "distribute":
        assert [r["BilledCost"] for r in overhead] == ["428.57", "857.14", "1714.29"]


ROW = {  # the non-null fields of payments' first day, in FOCUS 1.2
    "BilledCost": "133.34",
    "BillingAccountId": "prod",
    "BillingAccountName": "prod",
    "BillingAccountType": "Kubernetes Cluster",
    "BillingCurrency": "EUR",
    "BillingPeriodEnd": "2026-12-01T00:00:00Z",
    "BillingPeriodStart": "2026-11-01T00:00:00Z",
    "ChargeCategory": "Usage",
    "ChargeDescription": "Namespace payments in cluster prod: billed max(request, usage)",
    "ChargeFrequency": "Usage-Based",
    "ChargePeriodEnd": "2026-11-02T00:00:00Z",
    "ChargePeriodStart": "2026-11-01T00:00:00Z",
    "ConsumedQuantity": "2.4",
    "ConsumedUnit": "Core-Hours",
    "ContractedCost": "133.34",
    "EffectiveCost": "133.34",
    "InvoiceIssuerName": "Kubernetes",
    "ListCost": "133.34",
    "PricingCategory": "Standard",
    "PricingQuantity": "2.4",
    "PricingUnit": "Core-Hours",
    "ProviderName": "Kubernetes",
    "PublisherName": "Kubernetes",
    "ResourceId": "prod/payments",
    "ResourceName": "payments",
    "ResourceType": "Kubernetes Namespace",
    "ServiceCategory": "Compute",
    "ServiceName": "Kubernetes",
    "ServiceSubcategory": "Containers",
    "SubAccountId": "prod",
    "SubAccountName": "prod",
    "SubAccountType": "Kubernetes Cluster",
    "Tags": '{"cost-center":"cc-1","namespace":"payments","team":"payments"}',
    "x_Cluster": "prod",
    "x_Owner": "payments",
    "x_LineKind": "owner",
    "x_AllocatedCost": "133.34",
    "x_IdleCost": "0.00",
    "x_SharedCost": "0.00",
    "x_CoreHours": "2.4",
}


def test_a_row_as_written() -> None:
    export = build_focus(EXAMPLE, policy(), period=NOVEMBER, version=V1_2)
    assert [r["x_Owner"] for r in list(export.rows())[:3]] == ["analytics", "catalog", "payments"]  # by day, then owner
    first = list(export.rows())[2]
    assert list(first) == list(export.columns)
    assert {k: v for k, v in first.items() if v} == ROW
    payments = [r for r in export.rows() if r["x_Owner"] == "payments" and r["x_AllocatedCost"] != "0.00"]
    # 133.333333 a day (30 x 133,333,333 micros), 4,000.00 on the report's line: the ten spare cents
    # go by largest remainder, ties to the earlier rows.
    assert [r["BilledCost"] for r in payments] == ["133.34"] * 10 + ["133.33"] * 20
    assert sum(Decimal(r["BilledCost"]) for r in payments) == Decimal("4000.00")
    idle_row = next(r for r in export.rows() if r["x_LineKind"] == "idle")
    assert (idle_row["ResourceId"], idle_row["x_Owner"], idle_row["Tags"]) == (
        "prod/__idle__",
        "platform",
        '{"team":"platform"}',
    )
    overhead = next(r for r in export.rows() if r["ResourceId"] == "prod/__overhead__" and r["x_Owner"] == "catalog")
    assert json.loads(overhead["Tags"]) == {"team": "catalog", "cost-center": "cc-2"}
    assert (overhead["x_CoreHours"], overhead["ChargeCategory"], overhead["ChargeFrequency"]) == (
        "",
        "Adjustment",
        "Recurring",
    )
    assert (idle_row["ChargeCategory"], idle_row["x_CoreHours"], idle_row["ResourceType"]) == (
        "Usage",
        "12",
        "Kubernetes Idle Capacity",
    )
    assert (overhead["PricingQuantity"], idle_row["PricingQuantity"], idle_row["PricingUnit"]) == (
        "",
        "12",
        "Core-Hours",
    )


def test_unlabelled_namespaces_a_pool_without_receivers_and_cloud_spend() -> None:
    daily = [
        *spread("prod", "scratch", None, 300 * M),
        *spread("dev", "kube-system", "platform", 90 * M),  # dev: only shared cost, no receiver
    ]
    halloween, december = datetime(2026, 10, 31, 12, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    direct = [
        DirectCost("payments", "cc-1", 310 * M, "Amazon RDS"),
        DirectCost("payments", "cc-1", 24 * M, "Amazon S3", halloween, halloween + timedelta(days=1)),
        DirectCost(None, None, 40 * M, "AWS Data Transfer"),
        DirectCost("search", None, 5 * M, "Amazon S3", december, december + timedelta(days=1)),  # outside
    ]
    export = build_focus(daily, policy(), period=NOVEMBER, direct=direct, version=V1_2)
    assert_itemises(export, export.report)
    grouped = lines_of(export)
    assert grouped[("unallocated", "__unallocated__")][0] == Decimal("340.00")  # scratch and untagged egress
    assert grouped[("shared", "__shared__")] == [Decimal(0), Decimal(0), Decimal("890.00"), Decimal("890.00")]
    cloud = [r for r in export.rows() if r["ServiceCategory"] == "Other"]
    assert [(r["x_Owner"], r["ServiceName"], r["BilledCost"], r["x_Cluster"]) for r in cloud] == [
        ("payments", "Amazon RDS", "310.00", ""),
        ("payments", "Amazon S3", "12.00", ""),  # half of the charge is in November
        ("__unallocated__", "AWS Data Transfer", "40.00", ""),
    ]
    assert json.loads(cloud[0]["Tags"]) == {"team": "payments", "cost-center": "cc-1"}
    assert {
        (r["ChargeCategory"], r["BillingAccountId"], r["ProviderName"], r["InvoiceIssuerName"], r["PricingQuantity"])
        for r in cloud
    } == {("Adjustment", "__cloud__", "Cloud", "Kubernetes", "")}
    shared_row = next(r for r in export.rows() if r["x_LineKind"] == "shared" and r["x_Cluster"] == "dev")
    assert shared_row["ResourceId"] == "dev/__shared__"


def test_one_cluster() -> None:
    daily = [*EXAMPLE, *spread("dev", "web", "payments", 30 * M)]
    export = build_focus(
        [d for d in daily if d.cluster == "dev"], policy(), period=NOVEMBER, clusters=["dev"], version=V1_2
    )
    assert_itemises(export, export.report)
    assert {r["x_Cluster"] for r in export.rows()} == {"dev"}
    assert export.report.total == Decimal("830.00")  # the control-plane fee is charged in every cluster


def test_no_data() -> None:
    export = build_focus([], parse_policy({"currency": "EUR"}), period=NOVEMBER)
    assert (list(export.rows()), export.report.total) == ([], Decimal("0.00"))


@st.composite
def daily_costs(draw: st.DrawFn) -> DailyCost:
    if draw(st.integers(0, 4)) == 0:
        return DailyCost(
            draw(st.sampled_from(DAYS[:3])),
            draw(st.sampled_from(base.CLUSTERS)),
            "",
            None,
            None,
            draw(st.integers(-(10**9), 10**11)),
            is_idle=True,
        )
    row = draw(base.cost_rows)
    return DailyCost(
        draw(st.sampled_from(DAYS[:3])),
        row.cluster,
        row.namespace,
        row.owner,
        row.cost_center,
        row.allocated_micros,
        Decimal(draw(st.integers(0, 1000))) / 7,
    )


def direct_costs(*labels: str) -> st.SearchStrategy[list[DirectCost]]:
    """Up to four cloud costs of a team, untagged or cloud-only; shared ones (tax, support) are
    spread over the lines with allocated cost."""
    cost = st.builds(
        DirectCost,
        owner=st.sampled_from([None, "payments", "cloud-only"]),
        cost_center=st.none(),
        amount_micros=base.amounts,
        label=st.sampled_from(labels),
        shared=st.booleans(),
    )
    return st.lists(cost, max_size=4)


@given(
    daily=st.lists(daily_costs(), max_size=30),
    policy=base.policies,
    direct=direct_costs("rds", "s3"),
    version=st.sampled_from(FocusVersion),
)
def test_every_export_itemises_its_report(
    daily: list[DailyCost], policy: Policy, direct: list[DirectCost], version: FocusVersion
) -> None:
    export = build_focus(daily, policy, period=NOVEMBER, direct=direct, version=version)
    assert_itemises(export, export.report)
    # The same rows in another order (another engine, another collation): the same file, cent for cent.
    again = build_focus(daily[::-1], policy, period=NOVEMBER, direct=direct, version=version)
    assert list(again.rows()) == list(export.rows())


def test_the_issuer_names_the_provider_and_invoice_issuer() -> None:
    daily = [*EXAMPLE]
    direct = [DirectCost("payments", "cc-1", 310 * M, "Amazon RDS")]
    export = build_focus(daily, policy(), period=NOVEMBER, direct=direct, issuer="Platform Team")
    assert_itemises(export, export.report)
    assert {(r["ProviderName"], r["PublisherName"], r["InvoiceIssuerName"]) for r in export.rows()} == {
        ("Platform Team", "Kubernetes", "Platform Team"),
        ("Cloud", "Cloud", "Platform Team"),
    }
    assert {(r["ServiceProviderName"], r["HostProviderName"]) for r in export.rows()} == {
        ("Platform Team", "Platform Team"),
        ("Cloud", "Cloud"),
    }
