"""We test these aspects of every period query, on the hours either side of October 2026's bounds
(``tests/boundary.py``: written through the collector's own per-hour path), against a real
PostgreSQL; the month must hold exactly its own hours, neither September's last nor November's
first:

- the daily rollup gives each hour to its own UTC day, with every cost column and quantity;
- the chargeback, the team report (and its namespaces), the daily view and the FOCUS export of
  October hold 12 units, on October 1st and 31st only;
- a budget's month-to-date is October's 12 units, not more;
- the reconciliation's estimate per node and day (a settled day stored, an open one read from the
  hours) holds each day's own hours, every column, and no stored day either side of the month;
  its assets per node and day likewise, naming the provider ID of the month's own last day;
- the bill lines of October are those whose charge period overlaps it, a zero-length charge at
  its first moment included and one at November's first moment not;
- cost_api's namespace costs over [October 1st, November 1st) hold 12 units over two days, and
  its month-to-date metric holds the current month's first hour, not the previous month's last;
- a Subscription's ``status.costs`` totals (hour, day, month) hold their bucket's own charges,
  each bucket's first hour included and the hour before it and after the pinned hour not.

Expected figures are counted from the table of ``tests/boundary.py``, never by the code under test.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import pytest

from finops.hours import Hour
from finops.policy import parse_policy
from infra.postgres import Database
from tests.boundary import (
    AGGREGATION,
    CLUSTER,
    IDLE_UNIT,
    OCTOBER,
    OCTOBER_UNITS,
    PARTS,
    ROLLUP_COLUMNS,
    UNIT,
    UNITS,
    Writer,
    allocation,
    dollars,
    idle,
    write_boundaries,
)
from tests.integration.charges import charge_row
from usecases.collect_charges.status import read_totals
from usecases.reports.budgets import budgets_report
from usecases.reports.exports import focus_export
from usecases.reports.reconciled import node_rows
from usecases.reports.service import ReportQuery, chargeback, daily_view, month_period, team_report

POLICY = parse_policy({"currency": "USD", "budgets": [{"owner": "alpha", "amount": "100.00"}]})
OCT_1, OCT_31 = date(2026, 10, 1), date(2026, 10, 31)
SEP_30, NOV_1 = date(2026, 9, 30), date(2026, 11, 1)
OCT_1_START, NOV_1_START = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)


def cents(micros: int) -> Decimal:
    return dollars(micros).quantize(Decimal("0.01"), ROUND_HALF_EVEN)


@pytest.fixture
def edges(db: Database) -> Writer:
    return write_boundaries(db)


def query() -> ReportQuery:
    return ReportQuery(month_period(OCTOBER), CLUSTER, AGGREGATION)


def test_each_hour_rolls_up_into_its_own_utc_day(db: Database, edges: Writer) -> None:
    rows = db.fetch_all(
        "verify_rollups",
        cluster=CLUSTER,
        aggregation=AGGREGATION,
        first_day=date(2026, 9, 30),
        end_day=date(2026, 11, 2),
    )
    assert rows == []  # the folded rollup equals its rebuild; now its values, by hand
    with db.connection() as conn:
        daily = conn.execute(
            "SELECT day, entry_kind, team, cost_center, currency, hours, cpu_cost_micros, ram_cost_micros,"
            " gpu_cost_micros, pv_cost_micros, network_cost_micros, lb_cost_micros, total_cost_micros,"
            " billed_core_hours, requested_core_hours, used_core_hours, billed_gib_hours, requested_gib_hours,"
            " used_gib_hours FROM allocation_daily WHERE cluster = %s ORDER BY day, entry_kind",
            (CLUSTER,),
        ).fetchall()
    expected = []
    for hour, units in UNITS.items():
        expected.append(
            {
                "day": hour.date(),
                "entry_kind": "idle",
                "team": "",
                "cost_center": "",
                "currency": "USD",
                "hours": 1,
                **dict.fromkeys(ROLLUP_COLUMNS, 0),
                "cpu_cost_micros": IDLE_UNIT * units,
                "total_cost_micros": IDLE_UNIT * units,
            }
        )
        expected.append(
            {
                "day": hour.date(),
                "entry_kind": "workload",
                "team": "alpha",
                "cost_center": "cc-1",
                "currency": "USD",
                "hours": 1,
                "cpu_cost_micros": PARTS["cpuCost"] * units,
                "ram_cost_micros": PARTS["ramCost"] * units,
                "gpu_cost_micros": PARTS["gpuCost"] * units,
                "pv_cost_micros": PARTS["pvCost"] * units,
                "network_cost_micros": PARTS["networkCost"] * units,
                "lb_cost_micros": PARTS["loadBalancerCost"] * units,
                "total_cost_micros": UNIT * units,
                "billed_core_hours": 3,
                "requested_core_hours": 2,
                "used_core_hours": 1,
                "billed_gib_hours": 3,
                "requested_gib_hours": 2,
                "used_gib_hours": 1,
            }
        )
    assert [{k: (v.strip() if isinstance(v, str) else v) for k, v in r.items()} for r in daily] == expected


def test_the_chargeback_holds_the_months_own_hours(db: Database, edges: Writer) -> None:
    report = chargeback(db, POLICY, query())
    lines = {line.owner: (line.allocated, line.idle, line.total) for line in report.lines}
    assert lines == {
        "alpha": (cents(OCTOBER_UNITS * UNIT), Decimal("0.00"), cents(OCTOBER_UNITS * UNIT)),
        "platform": (Decimal("0.00"), cents(OCTOBER_UNITS * IDLE_UNIT), cents(OCTOBER_UNITS * IDLE_UNIT)),
    }
    assert report.total == cents(OCTOBER_UNITS * UNIT) + cents(OCTOBER_UNITS * IDLE_UNIT)


def test_the_team_report_and_its_namespaces_hold_the_months_own_hours(db: Database, edges: Writer) -> None:
    body = team_report(db, POLICY, query(), "alpha").body
    october = str(cents(OCTOBER_UNITS * UNIT))
    assert (body["total"], body["previous_total"]) == (october, str(cents(3 * UNIT)))  # September: its last hour
    assert body["top_namespaces"] == [{"cluster": CLUSTER, "namespace": "shop", "cost": october}]
    # Requests against usage: 2 hours of 3 billed, 2 requested, 1 used cores (and GiB).
    usage = body["requests_vs_usage"]
    assert usage["cpu"] == {
        "billed_core_hours": "6.00",
        "requested_core_hours": "4.00",
        "used_core_hours": "2.00",
        "used_of_billed": "0.33",
    }
    assert usage["memory"] == {
        "billed_gib_hours": "6.00",
        "requested_gib_hours": "4.00",
        "used_gib_hours": "2.00",
        "used_of_billed": "0.33",
    }


def test_the_daily_view_has_the_first_and_last_day_of_the_month_only(db: Database, edges: Writer) -> None:
    days = daily_view(db, query()).body["days"]
    assert days == [
        {"day": "2026-10-01", "owners": {"(idle)": str(cents(5 * IDLE_UNIT)), "alpha": str(cents(5 * UNIT))}},
        {"day": "2026-10-31", "owners": {"(idle)": str(cents(7 * IDLE_UNIT)), "alpha": str(cents(7 * UNIT))}},
    ]


def test_the_focus_export_holds_the_months_own_days(db: Database, edges: Writer) -> None:
    export = focus_export(db, POLICY, OCTOBER, cluster=CLUSTER)
    rows = [(r["ChargePeriodStart"][:10], Decimal(r["BilledCost"])) for r in export.rows()]
    spent = sum(cost for _, cost in rows)
    assert {day for day, _ in rows} == {"2026-10-01", "2026-10-31"}
    assert spent == cents(OCTOBER_UNITS * UNIT) + cents(OCTOBER_UNITS * IDLE_UNIT)
    assert export.report.total == spent


def test_a_budgets_month_to_date_is_the_months_own_hours(db: Database, edges: Writer) -> None:
    body = budgets_report(db, POLICY, OCTOBER, now=datetime(2026, 11, 15, tzinfo=UTC), cluster=CLUSTER).body
    assert [b["month_to_date"] for b in body["budgets"]] == [str(cents(OCTOBER_UNITS * UNIT))]


def test_the_reconciliation_estimate_holds_each_days_own_hours(db: Database, edges: Writer) -> None:
    # October 31st is settled (its last hour final, the others lost): stored; October 1st read live.
    rows = node_rows(db, CLUSTER, AGGREGATION, [OCT_1 + timedelta(days=i) for i in range(31)])
    found = sorted((r["day"], r["entry_kind"], r["node"], r["total"], r["pv"], r["lb"], r["other"]) for r in rows)
    other = PARTS["networkCost"] + PARTS["sharedCost"] + PARTS["externalCost"]
    assert found == [
        (day, kind, "node-a", total * units, pv * units, lb * units, o * units)
        for day, units in ((OCT_1, 5), (OCT_31, 7))
        for kind, total, pv, lb, o in (
            ("idle", IDLE_UNIT, 0, 0, 0),
            ("workload", UNIT, PARTS["pvCost"], PARTS["loadBalancerCost"], other),
        )
    ]
    with db.connection() as conn:
        stored = conn.execute("SELECT day FROM allocation_node_days WHERE cluster = %s", (CLUSTER,)).fetchall()
    assert stored == [{"day": OCT_31}]


def test_the_stored_days_either_side_of_the_month_stay_out_of_its_estimate(db: Database, edges: Writer) -> None:
    # September 30th and November 1st settled (their other hours lost) and stored by a report of
    # each; October's estimate still holds its own two days only.
    edges.give_up(datetime(2026, 9, 30, tzinfo=UTC), OCT_1_START)
    edges.give_up(NOV_1_START, NOV_1_START + timedelta(days=1))
    for day in (SEP_30, NOV_1):
        node_rows(db, CLUSTER, AGGREGATION, [day])
    rows = node_rows(db, CLUSTER, AGGREGATION, [OCT_1 + timedelta(days=i) for i in range(31)])
    assert sorted((r["day"], r["entry_kind"], r["total"]) for r in rows) == [
        (day, kind, total * units)
        for day, units in ((OCT_1, 5), (OCT_31, 7))
        for kind, total in (("idle", IDLE_UNIT), ("workload", UNIT))
    ]
    with db.connection() as conn:
        stored = conn.execute("SELECT day FROM allocation_node_days ORDER BY day").fetchall()
    assert [r["day"] for r in stored] == [SEP_30, OCT_31, NOV_1]


# A volume mounted nowhere (no node, a disk cost only) and a container with no cost at all.
UNMOUNTED = {"name": "__unmounted__", "properties": {}, "minutes": 60, "pvCost": 1, "totalCost": 1}
COSTLESS = {
    "name": "quiet/Deployment/app/pod-0/c0",
    "properties": {"namespace": "quiet", "controllerKind": "Deployment", "controller": "app", "node": "node-a"},
    "minutes": 60,
}
OTHER = PARTS["networkCost"] + PARTS["sharedCost"] + PARTS["externalCost"]


def estimates(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (r["day"], r["entry_kind"], r["node"], r["namespace"], r["total"], r["pv"], r["lb"], r["other"]) for r in rows
    )


def test_an_open_last_day_is_read_from_its_own_hours(db: Database) -> None:
    writer = Writer(db)  # nothing given up: October 31st is not settled, so read from the hours
    for hour, units in UNITS.items():
        writer.write(hour, [allocation(units), idle(units)])
    writer.write(datetime(2026, 10, 31, 12, tzinfo=UTC), [UNMOUNTED, COSTLESS], final=False)
    rows = node_rows(db, CLUSTER, AGGREGATION, [OCT_31])
    assert estimates(rows) == [
        (OCT_31, "idle", "node-a", "", 7 * IDLE_UNIT, 0, 0, 0),
        (OCT_31, "unmounted", "", "", 1_000_000, 1_000_000, 0, 0),
        (OCT_31, "workload", "node-a", "quiet", 0, 0, 0, 0),
        (OCT_31, "workload", "node-a", "shop", 7 * UNIT, 7 * PARTS["pvCost"], 7 * PARTS["loadBalancerCost"], 7 * OTHER),
    ]


def test_a_settled_day_stores_rows_without_a_node_or_a_cost_as_zero(db: Database) -> None:
    writer = Writer(db)
    writer.write(datetime(2026, 10, 31, 12, tzinfo=UTC), [UNMOUNTED, COSTLESS])
    writer.give_up(datetime(2026, 10, 31, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
    rows = node_rows(db, CLUSTER, AGGREGATION, [OCT_31])
    assert estimates(rows) == [
        (OCT_31, "unmounted", "", "", 1_000_000, 1_000_000, 0, 0),
        (OCT_31, "workload", "node-a", "quiet", 0, 0, 0, 0),
    ]


def bill_line(number: int, start: datetime, end: datetime) -> tuple[Any, ...]:
    return ("bill.csv", number, "focus", start, end, 1_000_000 * number, "USD")


def test_the_bill_lines_of_a_month_are_those_overlapping_it(db: Database) -> None:
    sep_30, oct_1, oct_2 = (datetime(2026, m, d, tzinfo=UTC) for m, d in ((9, 30), (10, 1), (10, 2)))
    oct_31, nov_1, nov_2 = (datetime(2026, m, d, tzinfo=UTC) for m, d in ((10, 31), (11, 1), (11, 2)))
    lines = [
        bill_line(1, sep_30, oct_1),  # ends as October starts: September's
        bill_line(2, oct_1, oct_2),
        bill_line(3, oct_31, nov_1),
        bill_line(4, nov_1, nov_2),  # starts as October ends: November's
        bill_line(5, oct_1, oct_1),  # a one-off charge at October's first moment
        bill_line(6, nov_1, nov_1),  # ... and at November's
        bill_line(7, sep_30, nov_2),  # spans the month
    ]
    columns = ["source", "row_number", "format", "charge_start", "charge_end", "billed_cost_micros", "currency"]
    with db.connection() as conn:
        db.copy_rows(conn, "cloud_costs", columns, lines)
    found = db.fetch_all("bill_lines", start=oct_1, end=nov_1)
    assert [r["row_number"] for r in found] == [2, 3, 5, 7]


def test_cost_api_namespace_costs_hold_the_windows_own_days(db: Database, edges: Writer) -> None:
    rows = db.fetch_all(
        "namespace_costs", cluster=CLUSTER, aggregation=AGGREGATION, namespace=None, start=OCT_1, end=date(2026, 11, 1)
    )
    assert [(r["namespace"], r["owner"], r["cost_center"], r["micros"], r["days"]) for r in rows] == [
        ("shop", "alpha", "cc-1", OCTOBER_UNITS * UNIT, 2)
    ]


def test_the_month_to_date_metric_holds_the_current_months_own_hours(db: Database) -> None:
    now = datetime.now(UTC)
    first = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    writer = Writer(db, now=now)
    writer.write(first - timedelta(hours=1), [allocation(3), idle(3)])  # the previous month's last hour
    writer.write(first, [allocation(5), idle(5)])
    rows = db.fetch_all("metrics_owner_month_to_date", cluster=CLUSTER, aggregation=AGGREGATION)
    assert rows == [{"owner": "alpha", "cost_center": "cc-1", "currency": "USD", "cost_micros": 5 * UNIT}]


def test_charge_totals_hold_their_buckets_own_hours(db: Database) -> None:
    pinned = Hour(datetime(2026, 10, 31, 23, tzinfo=UTC))  # the month's last hour
    charged = {
        datetime(2026, 9, 30, 23, tzinfo=UTC): (1, 1),  # before the month
        datetime(2026, 10, 1, 0, tzinfo=UTC): (10, 2),  # the month's first hour
        datetime(2026, 10, 30, 23, tzinfo=UTC): (100, 4),  # the hour before the pinned day
        datetime(2026, 10, 31, 0, tzinfo=UTC): (1_000, 8),  # the pinned day's first hour
        datetime(2026, 10, 31, 22, tzinfo=UTC): (10_000, 16),  # the hour before the pinned hour
        datetime(2026, 10, 31, 23, tzinfo=UTC): (100_000, 32),  # the pinned hour
        datetime(2026, 11, 1, 0, tzinfo=UTC): (1_000_000, 64),  # after it
    }
    for hour, (micros, unpriced) in charged.items():
        charge_row(db, hour, "cpuHour", micros, unpriced)
    charge_row(db, datetime(2026, 10, 1, 0, tzinfo=UTC), "ramGbHour", 5)  # nothing in its hour or day
    totals = read_totals(db, "c", ["u-1"], pinned)
    assert totals == {
        "u-1": {
            "cpuHour": {
                "hour": (100_000, 32),
                "day": (111_000, 56),
                "month": (111_110, 62),
            },
            "ramGbHour": {"hour": (0, 0), "day": (0, 0), "month": (5, 0)},
        }
    }


def test_the_assets_of_a_month_are_its_own_days_and_name_their_last_provider_id(db: Database) -> None:
    # node-a is reborn under a new instance ID in November's first hour: October's reconciliation
    # neither counts that hour nor shows its ID.
    assets = [
        (datetime(2026, 9, 30, 23, tzinfo=UTC), "i-sep", 3),
        (OCT_1_START, "i-oct", 5),
        (datetime(2026, 10, 31, 23, tzinfo=UTC), "i-oct", 7),
        (NOV_1_START, "i-nov", 11),
    ]
    with db.connection() as conn:
        for hour, provider_id, units in assets:
            conn.execute(
                "INSERT INTO cluster_assets (cluster, aggregation, hour, kind, name, provider_id, cpu_cost_micros, "
                "ram_cost_micros, gpu_cost_micros, adjustment_micros, total_cost_micros) "
                "VALUES (%s, %s, %s, 'node', 'node-a', %s, %s, %s, %s, %s, %s)",
                (
                    CLUSTER,
                    AGGREGATION,
                    hour,
                    provider_id,
                    *(units * PARTS[p] for p in ("cpuCost", "ramCost", "gpuCost")),
                    -units,
                    1,
                ),
            )
    found = db.fetch_all(
        "reconcile_assets", cluster=CLUSTER, aggregation=AGGREGATION, start=OCT_1_START, end=NOV_1_START
    )
    per_unit = PARTS["cpuCost"] + PARTS["ramCost"] + PARTS["gpuCost"] - 1
    assert [(r["day"], r["name"], r["provider_id"], r["estimate"]) for r in found] == [
        (OCT_1, "node-a", "i-oct", 5 * per_unit),
        (OCT_31, "node-a", "i-oct", 7 * per_unit),
    ]
