"""We test these aspects of the test bill generator (``tests/bills.py``):

- every line, of every category and CUR line item type, written as FOCUS 1.2 or CUR 2.0 parses
  back through ``finops.cloudspend`` to the same billed cost, effective (amortised) cost and
  category, and the same period, service, resource, account, currency and owner tags;
- a FOCUS bill of lines the spec allows conforms to FOCUS 1.2 (``tests/focus_conformance.py``);
- CUR 2.0 tags: system tags (``aws:``, ``eks:``) keep their names, user tags become ``user_<key>``;
- ``node_hours`` cuts at UTC days or hours and prorates exactly: the lines add up to the period's
  cost rounded once;
- a line the generator cannot write faithfully is refused when it is made.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from finops.cloudspend import CloudCost, CloudFormat, parse_cloud_costs
from finops.money import to_micros
from tests.bills import BillLine, cur2_csv, cur_tags, focus_csv, node_hours
from tests.focus_conformance import check_rows

T0 = datetime(2026, 10, 1, tzinfo=UTC)
TAGS = {"team": "payments", "cost-center": "cc-100", "eks:cluster-name": "demo-eu", "aws:createdBy": "x"}


def line(**fields: object) -> BillLine:
    values: dict[str, object] = {"start": T0, "end": T0 + timedelta(hours=1), "billed": Decimal("1.25")}
    return BillLine(**(values | fields))  # type: ignore[arg-type]


# Every kind of line, with effective costs that differ from billed where the format allows it.
LINES = {
    "usage": line(effective=Decimal("1.10"), resource_id="i-0a1b2c3d4e5f60001", tags=TAGS),
    "usage-no-effective": line(billed=Decimal("0.0000025")),  # half-even to 2 micros, both ways
    "discounted-usage": line(kind="DiscountedUsage", effective=Decimal("0.70")),
    "savings-plan-covered": line(kind="SavingsPlanCoveredUsage", effective=Decimal("0.8123456")),
    "savings-plan-negation": line(
        category="discount", kind="SavingsPlanNegation", billed=Decimal("-1.25"), effective=Decimal(0)
    ),
    "credit": line(category="discount", billed=Decimal("-5"), end=T0),
    "edp-discount": line(category="discount", kind="EdpDiscount", billed=Decimal("-0.12")),
    "refund": line(category="discount", kind="Refund", billed=Decimal("-3")),
    "adjustment": line(category="discount", kind="Adjustment", billed=Decimal("-0.5")),
    "fee": line(category="purchase", billed=Decimal("30"), end=T0, service="AWSMarketplace"),
    "reservation-upfront-fee": line(category="purchase", billed=Decimal("300"), effective=Decimal(0), end=T0),
    "ri-fee": line(category="purchase", kind="RIFee", billed=Decimal("20"), effective=Decimal("4.5")),
    "savings-plan-recurring-fee": line(
        category="purchase", kind="SavingsPlanRecurringFee", billed=Decimal("10"), effective=Decimal("2.5")
    ),
    "savings-plan-upfront-fee": line(
        category="purchase", kind="SavingsPlanUpfrontFee", billed=Decimal("1000"), effective=Decimal(0), end=T0
    ),
    "tax": line(category="tax", billed=Decimal("4.20"), end=T0, currency="USD"),
    "support": line(category="support", billed=Decimal("100")),
    "support-usage": line(category="support", kind="Usage", service="AWSDeveloperSupport", billed=Decimal("29")),
}


def parse(text: str) -> tuple[CloudFormat, list[CloudCost]]:
    reader = csv.DictReader(io.StringIO(text))
    assert reader.fieldnames is not None
    return parse_cloud_costs(reader.fieldnames, reader)


@pytest.mark.parametrize(("fmt", "write"), [("focus", focus_csv), ("cur2", cur2_csv)], ids=["focus", "cur2"])
def test_every_line_reads_back_as_written(fmt: str, write: Callable[[list[BillLine]], str]) -> None:
    lines = list(LINES.values())
    found, costs = parse(write(lines))
    assert found.value == fmt
    for name, (written, read) in zip(LINES, zip(lines, costs, strict=True), strict=True):
        assert (read.billed_micros, read.effective_micros, read.category.value) == (
            to_micros(written.billed),
            to_micros(written.amortised),
            written.category,
        ), name
        assert (read.start, read.end, read.currency, read.account) == (
            written.start,
            written.end,
            written.currency,
            written.account,
        ), name
        assert (read.service, read.resource_id) == (written.service_in(fmt), written.resource_id), name
    usage = costs[0]
    assert (usage.team, usage.cost_center, usage.tags["eks:cluster-name"]) == ("payments", "cc-100", "demo-eu")


def test_a_support_line_gets_a_support_service() -> None:
    support = LINES["support"]
    assert (support.service_in("focus"), support.service_in("cur2")) == ("AWS Support (Business)", "AWSSupportBusiness")
    assert LINES["support-usage"].service_in("cur2") == "AWSDeveloperSupport"


def test_a_focus_bill_of_allowed_lines_conforms_to_focus_1_2() -> None:
    # FOCUS: a Credit or Adjustment has EffectiveCost = BilledCost (a Savings Plan negation is not one)
    allowed = [x for x in LINES.values() if x.category != "discount" or x.amortised == x.billed]
    reader = csv.DictReader(io.StringIO(focus_csv(allowed)))
    assert reader.fieldnames is not None
    assert check_rows(reader.fieldnames, reader, "1.2") == []


def test_cur_2_tags() -> None:
    assert cur_tags({"team": "a", "cost-center": "b", "user:owner": "c", "eks:cluster-name": "d", "aws:x": "e"}) == {
        "user_team": "a",
        "user_cost_center": "b",
        "user_owner": "c",
        "eks:cluster-name": "d",
        "aws:x": "e",
    }
    (cost,) = parse(cur2_csv([line(tags={"team": "payments", "cost-center": "cc-1"})]))[1]
    assert (cost.team, cost.cost_center) == ("payments", "cc-1")


def test_node_hours_one_line_per_utc_day() -> None:
    start = datetime(2026, 10, 1, 22, tzinfo=UTC)
    lines = node_hours("i-1", start, start + timedelta(hours=50), Decimal("0.1"), tags={"team": "a"})
    assert [(x.start, x.end, x.billed) for x in lines] == [
        (start, datetime(2026, 10, 2, tzinfo=UTC), Decimal("0.2")),
        (datetime(2026, 10, 2, tzinfo=UTC), datetime(2026, 10, 3, tzinfo=UTC), Decimal("2.4")),
        (datetime(2026, 10, 3, tzinfo=UTC), datetime(2026, 10, 4, tzinfo=UTC), Decimal("2.4")),
    ]
    assert {(x.resource_id, x.category, x.tags["team"]) for x in lines} == {("i-1", "usage", "a")}


def test_node_hours_per_hour_prorates_exactly() -> None:
    start = datetime(2026, 10, 1, 0, 20, tzinfo=timezone(timedelta(hours=2)))  # 2026-09-30T22:20Z
    end = start + timedelta(hours=3, minutes=1)
    lines = node_hours("i-1", start, end, Decimal("0.07"), per="hour", effective=Decimal("0.05"))
    assert [x.start.hour for x in lines] == [22, 23, 0, 1]
    assert lines[0].start == datetime(2026, 9, 30, 22, 20, tzinfo=UTC)
    whole = Decimal("0.07") * 181 / 60  # 0.2111666..., rounded once to micros: 0.211167
    assert sum(x.billed for x in lines) == round(whole, 6) == Decimal("0.211167")
    assert sum(x.amortised for x in lines) == Decimal("0.150833")
    assert lines[1].billed == Decimal("0.07") and lines[0].billed == Decimal("0.046667")


def test_node_hours_round_the_running_total_not_each_line() -> None:
    start = datetime(2026, 10, 1, 0, 40, tzinfo=UTC)
    lines = node_hours("i-1", start, start + timedelta(minutes=100), Decimal("0.01"), per="hour")
    # 20 + 60 + 20 minutes: rounding each third of a cent alone would lose a micro
    assert [x.billed for x in lines] == [Decimal("0.003333"), Decimal("0.01"), Decimal("0.003334")]


def test_node_hours_of_an_empty_period() -> None:
    assert node_hours("i-1", T0, T0, Decimal(1)) == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"start": datetime(2026, 10, 1)}, "timezone-aware"),
        ({"start": T0.replace(microsecond=5)}, "whole seconds"),
        ({"end": T0 - timedelta(seconds=1)}, "before start"),
        ({"category": "fee"}, "BillLine.category"),
        ({"category": "usage", "kind": "Tax"}, "not a usage line"),
        ({"category": "discount", "kind": "SavingsPlanNegation"}, "amortised to 0"),
        ({"service": "AWSSupportBusiness"}, "is support"),
    ],
    ids=["naive", "fraction", "reversed", "category", "kind", "negation", "support-service"],
)
def test_a_line_that_cannot_be_written_faithfully_is_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        line(**fields)
