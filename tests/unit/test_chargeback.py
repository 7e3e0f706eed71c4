"""We test these aspects of the chargeback allocation (``finops.chargeback``), example by example:

- the method's worked example, options A and B, with the shared 2,000 as a fixed cost and as a
  shared namespace's allocation;
- lines by team, cost centre and namespace; unlabelled namespaces on ``__unallocated__``, which
  receives its share of the overhead;
- each cluster is settled on its own: cluster A's shared and idle never reach a team of cluster B;
- edge cases: no allocated cost (``__shared__``), a single line, zero and negative idle, the idle
  owner who also owns namespaces, fixed costs of clusters without data;
- fixed costs prorated by the part of each calendar month the period covers;
- line order, shares and the report's document;
- the exact lines before rounding (``settle``, which the FOCUS export itemises), to the fraction of
  a micro.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction

import pytest

from finops.chargeback import (
    BillExtras,
    CostRow,
    IdleRow,
    LineKey,
    LineKind,
    Period,
    Report,
    allocate,
    parse_line_key,
    settle,
)
from finops.coverage import Coverage
from finops.directcosts import DirectCost
from finops.errors import InvalidInput
from finops.policy import Policy, parse_policy

M = 1_000_000  # micros per currency unit
NOVEMBER = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))


def row(
    team: str | None, amount: float, *, cluster: str = "prod", namespace: str | None = None, cc: str | None = None
) -> CostRow:
    """A namespace's cost in currency units (float only for writing examples; stored as micros)."""
    return CostRow(cluster, namespace or team or "unlabelled", team, cc, round(amount * M))


def policy(**overrides: object) -> Policy:
    return parse_policy({"currency": "EUR", **overrides})


def figures(report: Report) -> list[tuple[str, str, str, str, str]]:
    return [
        (line.owner, str(line.allocated), str(line.idle), str(line.shared), str(line.total)) for line in report.lines
    ]


TEAMS = [row("payments", 4000), row("catalog", 2000), row("analytics", 1000)]
IDLE = [IdleRow("prod", 1000 * M)]
FIXED_2000 = {"fixed": [{"name": "shared services", "amount": "2000.00"}]}
KUBE_SYSTEM_2000 = {"namespaces": ["kube-system"]}
WITH_KUBE_SYSTEM = [*TEAMS, row("platform", 2000, namespace="kube-system")]


@pytest.mark.parametrize(
    ("shared", "rows"), [(FIXED_2000, TEAMS), (KUBE_SYSTEM_2000, WITH_KUBE_SYSTEM)], ids=["fixed", "namespace"]
)
def test_the_methods_example_option_a(shared: dict[str, object], rows: list[CostRow]) -> None:
    report = allocate(rows, IDLE, policy(idle="distribute", shared=shared), period=NOVEMBER)
    assert [(line.owner, str(line.total)) for line in report.lines] == [
        ("payments", "5714.29"),
        ("catalog", "2857.14"),
        ("analytics", "1428.57"),
    ]
    assert report.total == Decimal("10000.00")
    assert (report.allocated, report.idle, report.shared) == (
        Decimal("7000.00"),
        Decimal("1000.00"),
        Decimal("2000.00"),
    )


@pytest.mark.parametrize(
    ("shared", "rows"), [(FIXED_2000, TEAMS), (KUBE_SYSTEM_2000, WITH_KUBE_SYSTEM)], ids=["fixed", "namespace"]
)
def test_the_methods_example_option_b(shared: dict[str, object], rows: list[CostRow]) -> None:
    report = allocate(rows, IDLE, policy(idle="separate", shared=shared), period=NOVEMBER)
    assert figures(report) == [
        ("payments", "4000.00", "0.00", "1142.86", "5142.86"),
        ("catalog", "2000.00", "0.00", "571.43", "2571.43"),
        ("analytics", "1000.00", "0.00", "285.71", "1285.71"),
        ("platform", "0.00", "1000.00", "0.00", "1000.00"),
    ]
    assert report.lines[-1].kind is LineKind.IDLE
    assert report.total == Decimal("10000.00")


@pytest.mark.parametrize("idle", ["distribute", "separate"])
def test_the_exact_lines_before_rounding(idle: str) -> None:
    settled = settle(TEAMS, IDLE, policy(idle=idle, shared=FIXED_2000), period=NOVEMBER)
    weights = {"payments": 4, "catalog": 2, "analytics": 1}
    expected = {
        (LineKind.OWNER, team): [
            Fraction(weight * 1000 * M),
            Fraction(weight * 1000 * M, 7) if idle == "distribute" else Fraction(0),
            Fraction(weight * 2000 * M, 7),
        ]
        for team, weight in weights.items()
    }
    if idle == "separate":
        expected[(LineKind.IDLE, "platform")] = [Fraction(0), Fraction(1000 * M), Fraction(0)]  # the default idle_owner
    assert settled == {"prod": expected}


def test_the_document_shape() -> None:
    report = allocate(TEAMS, IDLE, policy(shared=FIXED_2000), period=NOVEMBER)
    document = json.loads(json.dumps(report.to_document()))
    assert list(document) == [
        *("period", "currency", "policy", "by", "lines", "total", "coverage", "basis", "reconciliation", "carbon")
    ]  # the stable shape of docs/reference/http-api.md, in its order; new keys only at the end
    assert document["coverage"] is None  # a report built from rows alone; the reports that read data set it
    covered = dataclasses.replace(report, coverage=Coverage(NOVEMBER, datetime(2026, 12, 2, tzinfo=UTC), ()))
    assert covered.to_document()["coverage"] == Coverage(NOVEMBER, datetime(2026, 12, 2, tzinfo=UTC), ()).as_document()
    assert document["period"] == {"start": "2026-11-01T00:00:00Z", "end": "2026-12-01T00:00:00Z"}
    assert document["currency"] == "EUR"
    assert document["policy"] == policy(shared=FIXED_2000).as_document()
    assert document["by"] == "team"
    assert document["total"] == "10000.00"
    assert document["lines"][0] == {
        "owner": "payments",
        "allocated": "4000.00",
        "idle": "0.00",
        "shared": "1142.86",
        "total": "5142.86",
        "share": "0.5143",
        "grams_co2e": None,  # a report built from rows alone has no grams read: not measured, not 0
        "kg_co2e": None,
    }
    assert document["carbon"] is None
    assert [line["share"] for line in document["lines"]] == ["0.5143", "0.2571", "0.1286", "0.1000"]


def test_lines_by_cost_center_and_by_namespace() -> None:
    rows = [
        row("payments", 300, namespace="pay-api", cc="cc-1"),
        row("payments", 100, namespace="pay-db", cc="cc-1"),
        row("catalog", 100, namespace="catalog", cc=None),
    ]
    by_cc = allocate(rows, [], policy(), period=NOVEMBER, by="cost-center")
    assert [(line.owner, line.kind, str(line.total)) for line in by_cc.lines] == [
        ("cc-1", LineKind.OWNER, "400.00"),
        ("__unallocated__", LineKind.UNALLOCATED, "100.00"),
        ("platform", LineKind.IDLE, "0.00"),
    ]
    assert by_cc.to_document()["by"] == "cost-center"  # what the lines' "owner" names
    by_ns = allocate(rows, [], policy(idle="distribute"), period=NOVEMBER, by=LineKey.NAMESPACE)
    assert by_ns.to_document()["by"] == "namespace"
    assert [(line.owner, str(line.total)) for line in by_ns.lines] == [
        ("pay-api", "300.00"),
        ("catalog", "100.00"),
        ("pay-db", "100.00"),
    ]


def test_unlabelled_namespaces_form_one_unallocated_line_that_carries_its_share() -> None:
    rows = [row("payments", 300), row(None, 50, namespace="legacy"), row(None, 50, namespace="scratch")]
    report = allocate(rows, [IdleRow("prod", 40 * M)], policy(idle="distribute", shared=FIXED_2000), period=NOVEMBER)
    assert figures(report) == [
        ("payments", "300.00", "30.00", "1500.00", "1830.00"),
        ("__unallocated__", "100.00", "10.00", "500.00", "610.00"),
    ]


def test_a_cluster_pays_its_own_overhead() -> None:
    rows = [row("payments", 100, cluster="a"), row("catalog", 300, cluster="a"), row("search", 500, cluster="b")]
    fixed = {"fixed": [{"name": "control-plane", "amount": "73.00", "cluster": "a"}]}
    for idle in ("distribute", "separate"):
        for split in ("proportional", "even"):
            report = allocate(
                rows,
                [IdleRow("a", 40 * M)],
                policy(idle=idle, shared={**fixed, "split": split}),
                period=NOVEMBER,
            )
            search = next(line for line in report.lines if line.owner == "search")
            assert (search.idle, search.shared, search.total) == (Decimal("0.00"), Decimal("0.00"), Decimal("500.00"))
            assert report.total == Decimal("1013.00")


def test_a_team_in_two_clusters_gets_each_clusters_share_of_that_cluster() -> None:
    rows = [row("payments", 100, cluster="a"), row("catalog", 100, cluster="a"), row("payments", 100, cluster="b")]
    report = allocate(rows, [IdleRow("b", 30 * M)], policy(idle="distribute"), period=NOVEMBER)
    # b's idle is all payments': it is the only team there.
    assert figures(report) == [
        ("payments", "200.00", "30.00", "0.00", "230.00"),
        ("catalog", "100.00", "0.00", "0.00", "100.00"),
    ]


def test_even_split() -> None:
    rows = [row("payments", 900), row("catalog", 100)]
    report = allocate(rows, [], policy(idle="distribute", shared={**FIXED_2000, "split": "even"}), period=NOVEMBER)
    assert figures(report) == [
        ("payments", "900.00", "0.00", "1000.00", "1900.00"),
        ("catalog", "100.00", "0.00", "1000.00", "1100.00"),
    ]


def test_without_allocated_cost_the_pool_and_idle_stay_visible() -> None:
    report = allocate(
        [row("payments", 0)], [IdleRow("prod", 5 * M)], policy(idle="distribute", shared=FIXED_2000), period=NOVEMBER
    )
    assert figures(report) == [
        ("payments", "0.00", "0.00", "0.00", "0.00"),
        ("__shared__", "0.00", "0.00", "2000.00", "2000.00"),
        ("platform", "0.00", "5.00", "0.00", "5.00"),
    ]
    assert [line.kind for line in report.lines] == [LineKind.OWNER, LineKind.SHARED, LineKind.IDLE]


def test_a_credit_stays_on_its_line_which_receives_nothing() -> None:
    rows = [row("payments", 100), row("catalog", -10)]
    report = allocate(rows, [IdleRow("prod", 10 * M)], policy(idle="distribute", shared=FIXED_2000), period=NOVEMBER)
    assert figures(report) == [
        ("payments", "100.00", "10.00", "2000.00", "2110.00"),
        ("catalog", "-10.00", "0.00", "0.00", "-10.00"),
    ]


def test_a_bills_unmatched_usage_is_its_own_line_exactly() -> None:
    bills = {"prod": BillExtras(unreconciled_micros=1_234_567)}
    settled = settle(TEAMS, IDLE, policy(idle="distribute"), period=NOVEMBER, bills=bills)
    assert settled["prod"][(LineKind.UNRECONCILED, "__unreconciled__")] == [1_234_567, 0, 0]


@pytest.mark.parametrize(("split", "shares"), [("even", ("30.00", "30.00")), ("proportional", ("45.00", "15.00"))])
def test_shared_direct_costs_follow_the_policys_split(split: str, shares: tuple[str, str]) -> None:
    rows = [row("payments", 3000), row("catalog", 1000)]
    tax = DirectCost(None, None, 60 * M, "tax", shared=True)
    report = allocate(rows, [], policy(shared={"split": split}), period=NOVEMBER, direct=[tax])
    owners = [(line.owner, str(line.shared)) for line in report.lines if line.kind is LineKind.OWNER]
    assert owners == [("payments", shares[0]), ("catalog", shares[1])]


def test_settle_takes_the_line_key_by_name() -> None:
    rows = [row("payments", 4000, namespace="pay"), row("catalog", 2000, namespace="cat")]
    named = settle(rows, IDLE, policy(idle="distribute"), period=NOVEMBER, by="namespace")
    assert named == settle(rows, IDLE, policy(idle="distribute"), period=NOVEMBER, by=LineKey.NAMESPACE)
    assert set(named["prod"]) == {(LineKind.OWNER, "pay"), (LineKind.OWNER, "cat")}


def test_a_line_of_one_micro_receives_its_share() -> None:
    rows = [CostRow("prod", "tiny", "tiny", None, 1), CostRow("prod", "shop", "shop", None, 3)]
    shared = {"fixed": [{"name": "shared services", "amount": "0.000004"}]}
    settled = settle(rows, [IdleRow("prod", 8)], policy(idle="distribute", shared=shared), period=NOVEMBER)
    assert settled["prod"][(LineKind.OWNER, "tiny")] == [1, 2, 1]
    assert settled["prod"][(LineKind.OWNER, "shop")] == [3, 6, 3]


@pytest.mark.parametrize("idle", ["distribute", "separate"])
def test_negative_idle_is_carried_not_clamped(idle: str) -> None:
    report = allocate(TEAMS, [IdleRow("prod", -700 * M)], policy(idle=idle), period=NOVEMBER)
    assert report.total == Decimal("6300.00")
    assert report.idle == Decimal("-700.00")
    if idle == "distribute":
        assert [str(line.total) for line in report.lines] == ["3600.00", "1800.00", "900.00"]
    else:
        assert figures(report)[-1] == ("platform", "0.00", "-700.00", "0.00", "-700.00")


def test_zero_idle_and_a_single_line() -> None:
    separate = allocate([row("payments", 12.345678)], [IdleRow("prod", 0)], policy(shared=FIXED_2000), period=NOVEMBER)
    assert figures(separate) == [
        ("payments", "12.35", "0.00", "2000.00", "2012.35"),
        ("platform", "0.00", "0.00", "0.00", "0.00"),
    ]
    assert separate.lines[0].share == Decimal("1.0000")
    distribute = allocate([row("payments", 12.345678)], [], policy(idle="distribute"), period=NOVEMBER)
    assert figures(distribute) == [("payments", "12.35", "0.00", "0.00", "12.35")]


def test_the_idle_owner_keeps_its_own_line_beside_the_idle_line() -> None:
    rows = [*TEAMS, row("platform", 500, namespace="argocd")]
    report = allocate(rows, IDLE, policy(), period=NOVEMBER)
    platform = [(line.kind, str(line.allocated), str(line.idle)) for line in report.lines if line.owner == "platform"]
    assert platform == [(LineKind.OWNER, "500.00", "0.00"), (LineKind.IDLE, "0.00", "1000.00")]


def test_a_fixed_cost_of_a_cluster_without_data_is_still_billed() -> None:
    fixed = {"fixed": [{"name": "control-plane", "amount": "73.00", "cluster": "prod-us"}]}
    report = allocate(TEAMS, [], policy(idle="distribute", shared=fixed), period=NOVEMBER)
    assert figures(report)[-1] == ("__shared__", "0.00", "0.00", "73.00", "73.00")
    assert report.clusters == ("prod", "prod-us")
    # A report restricted to one cluster leaves the others' fixed costs out...
    only_prod = allocate(TEAMS, [], policy(idle="distribute", shared=fixed), period=NOVEMBER, clusters=["prod"])
    assert only_prod.total == Decimal("7000.00")
    # ...and refuses rows of other clusters.
    with pytest.raises(ValueError, match="outside the report's clusters"):
        allocate(TEAMS, [], policy(), period=NOVEMBER, clusters=["prod-us"])


def test_a_fixed_cost_without_cluster_is_charged_in_every_cluster() -> None:
    rows = [row("payments", 100, cluster="a"), row("search", 100, cluster="b")]
    fixed = {"fixed": [{"name": "control-plane", "amount": "73.00"}]}
    report = allocate(rows, [], policy(idle="distribute", shared=fixed), period=NOVEMBER)
    assert [str(line.shared) for line in report.lines] == ["73.00", "73.00"]


@pytest.mark.parametrize(
    ("start", "end", "months"),
    [
        (datetime(2026, 11, 1), datetime(2026, 12, 1), Fraction(1)),
        (datetime(2026, 11, 1), datetime(2026, 11, 16), Fraction(1, 2)),
        (datetime(2026, 11, 15), datetime(2026, 12, 15), Fraction(16, 30) + Fraction(14, 31)),
        (datetime(2026, 12, 1), datetime(2027, 3, 1), Fraction(3)),
        (datetime(2028, 2, 28), datetime(2028, 3, 1), Fraction(2, 29)),
        (datetime(2026, 11, 29, 23), datetime(2026, 11, 30), Fraction(1, 720)),
    ],
    ids=["whole-month", "half-november", "across-months", "across-a-year", "leap-february", "one-hour"],
)
def test_months_covered_by_a_period(start: datetime, end: datetime, months: Fraction) -> None:
    assert Period(start.replace(tzinfo=UTC), end.replace(tzinfo=UTC)).months() == months


def test_fixed_costs_are_prorated_exactly() -> None:
    half = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 16, tzinfo=UTC))
    fixed = {"fixed": [{"name": "control-plane", "amount": "73.00"}]}
    assert allocate(TEAMS[:1], [], policy(shared=fixed), period=half).total == Decimal("4036.50")
    one_hour = Period(datetime(2026, 11, 3, 10, tzinfo=UTC), datetime(2026, 11, 3, 11, tzinfo=UTC))
    report = allocate([row("payments", 0.005), row("catalog", 0.005)], [], policy(shared=fixed), period=one_hour)
    # 73 / 720 = 0.101388...; with the two half-cents the exact total is 0.111388... -> 0.11
    assert report.total == Decimal("0.11")
    assert sum(line.total for line in report.lines) == report.total


def test_the_period_is_aware_and_ordered_and_printed_in_utc() -> None:
    with pytest.raises(InvalidInput, match=r"period\.start"):
        Period(datetime(2026, 11, 1), datetime(2026, 12, 1, tzinfo=UTC))
    with pytest.raises(InvalidInput, match="not before"):
        Period(NOVEMBER.end, NOVEMBER.start)
    paris = timezone(timedelta(hours=1))
    period = Period(datetime(2026, 11, 1, 1, tzinfo=paris), datetime(2026, 12, 1, 1, tzinfo=paris))
    assert period.as_document() == NOVEMBER.as_document()
    assert period.months() == 1


def test_owners_by_total_then_name_with_the_exceptions_last() -> None:
    rows = [row("b", 100), row("a", 100), row("c", 300), row(None, 1000, namespace="x")]
    fixed = {"fixed": [{"name": "lb", "amount": "5", "cluster": "empty"}]}
    report = allocate(rows, [IdleRow("prod", 1)], policy(shared=fixed), period=NOVEMBER)
    assert [line.owner for line in report.lines] == ["c", "a", "b", "__unallocated__", "__shared__", "platform"]


def test_an_empty_report() -> None:
    report = allocate([], [], policy(), period=NOVEMBER)
    assert (report.lines, report.total) == ((), Decimal("0.00"))
    assert report.to_document()["total"] == "0.00"


def test_rows_take_sql_sums_and_refuse_floats() -> None:
    assert CostRow("prod", "shop", "payments", None, Decimal(1500)).allocated_micros == 1500  # type: ignore[arg-type]
    assert IdleRow("prod", Decimal(-3)).idle_micros == -3  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^allocated_micros must be whole micros, got 1\.5$"):
        CostRow("prod", "shop", "payments", None, 1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^idle_micros must be whole micros, got Decimal\('0.5'\)$"):
        IdleRow("prod", Decimal("0.5"))  # type: ignore[arg-type]


def test_a_tie_for_the_last_cent_goes_to_the_owner_line_before_the_idle_line() -> None:
    # Half a cent each, one cent in all: the largest remainders tie, and the lines' order decides.
    report = allocate([row("a", 0.005)], [IdleRow("prod", 5_000)], policy(idle="separate"), period=NOVEMBER)
    assert figures(report) == [("a", "0.01", "0.00", "0.00", "0.01"), ("platform", "0.00", "0.00", "0.00", "0.00")]
    assert report.total == Decimal("0.01")


def test_by_must_be_known() -> None:
    assert parse_line_key("cost-center") is LineKey.COST_CENTER
    with pytest.raises(InvalidInput, match=r"^by: 'owner' is not one of team, cost-center, namespace"):
        allocate(TEAMS, [], policy(), period=NOVEMBER, by="owner")
