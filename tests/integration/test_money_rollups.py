"""We test these aspects of the money a period's daily rollups hold, written through the
collector's own per-hour path (``tests/boundary.py``) against a real PostgreSQL, with values
counted by hand:

- a cluster whose hours switch PriceBook currency inside the period (on another day, or inside
  one day) is refused by the chargeback, whichever currency comes first and whichever the policy
  names: its cost cannot be added up;
- a neighbouring month's hour in another currency (September's last, November's first) does not
  refuse October, and a day of October whose hours retention dropped still counts its rollup's
  currency;
- a group whose rows carry only some costs (an unmounted volume: a disk and nothing else) rolls
  up to zero, not NULL or another default, in every other column;
- a day whose first or last hour is priced in another currency than an hour written later is
  marked for a rebuild (its rollup cannot be folded); the next day's first hour does not mark it;
- a namespace relabelled mid-day bills each team its own hours: the day's rollup holds one row per
  team with that team's hours and cost, and the chargeback gives each its figure; an hour written
  again under the new label moves whole to the new team;
- an hour collected again is taken out of its day's rollup in every cost and quantity column
  before its new rows are added: the day holds its other hours plus the new figures, column by
  column.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal

import pytest

from finops.errors import InvalidInput
from finops.policy import parse_policy
from infra.postgres import Database
from tests.boundary import AGGREGATION, CLUSTER, PARTS, ROLLUP_COLUMNS, UNIT, Writer, allocation, dollars
from usecases.reports.service import ReportQuery, chargeback, month_period

OCTOBER = ReportQuery(month_period("2026-10"), CLUSTER, AGGREGATION)


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 10, day, hour, tzinfo=UTC)


def cents(micros: int) -> Decimal:
    return dollars(micros).quantize(Decimal("0.01"), ROUND_HALF_EVEN)


@pytest.mark.parametrize("policy_currency", ["USD", "EUR"])
@pytest.mark.parametrize("first,then", [("USD", "EUR"), ("EUR", "USD")])
@pytest.mark.parametrize("second_hour", [at(20, 5), at(10, 6)], ids=["another-day", "same-day"])
def test_a_period_mixing_currencies_in_one_cluster_is_refused(
    db: Database, first: str, then: str, policy_currency: str, second_hour: datetime
) -> None:
    writer = Writer(db)
    writer.write(at(10, 5), [allocation(2)], currency=first)
    writer.write(second_hour, [allocation(3)], currency=then)
    with pytest.raises(InvalidInput, match=r"USD.*EUR|EUR.*USD"):
        chargeback(db, parse_policy({"currency": policy_currency}), OCTOBER)


def test_one_currency_throughout_is_billed(db: Database) -> None:
    writer = Writer(db)
    writer.write(at(10, 5), [allocation(2)], currency="EUR")
    writer.write(at(20, 5), [allocation(3)], currency="EUR")
    report = chargeback(db, parse_policy({"currency": "EUR"}), OCTOBER)
    assert {line.owner: line.total for line in report.lines} == {"alpha": cents(5 * UNIT), "platform": Decimal("0.00")}


@pytest.mark.parametrize("neighbour", [datetime(2026, 9, 30, 23, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)])
def test_a_neighbouring_months_currency_does_not_refuse_the_month(db: Database, neighbour: datetime) -> None:
    writer = Writer(db)
    writer.write(at(1, 0), [allocation(2)], currency="USD")
    writer.write(at(31, 23), [allocation(3)], currency="USD")
    writer.write(neighbour, [allocation(7)], currency="EUR")
    report = chargeback(db, parse_policy({"currency": "USD"}), OCTOBER)
    assert {line.owner: line.total for line in report.lines} == {"alpha": cents(5 * UNIT), "platform": Decimal("0.00")}


@pytest.mark.parametrize("day", [1, 31])
def test_a_rollup_whose_hours_expired_still_counts_its_currency(db: Database, day: int) -> None:
    writer = Writer(db)
    writer.write(at(15, 5), [allocation(2)], currency="USD")
    writer.write(at(day, 5), [allocation(3)], currency="EUR")
    with db.connection() as conn:  # retention dropped the day's hours and ledger; its rollup stays
        conn.execute("DELETE FROM provider_allocations WHERE hour = %s", (at(day, 5),))
        conn.execute("DELETE FROM allocation_hours WHERE hour = %s", (at(day, 5),))
    with pytest.raises(InvalidInput, match=r"USD.*EUR|EUR.*USD"):
        chargeback(db, parse_policy({"currency": "USD"}), OCTOBER)


def marked_days(db: Database) -> list[object]:
    with db.connection() as conn:
        return [r["day"] for r in conn.execute("SELECT day FROM allocation_dirty_days ORDER BY day").fetchall()]


@pytest.mark.parametrize("edge", [at(10, 0), at(10, 23)], ids=["first-hour", "last-hour"])
def test_a_day_whose_edge_hour_is_in_another_currency_is_marked(db: Database, edge: datetime) -> None:
    writer = Writer(db)
    writer.write(edge, [allocation(2)], currency="EUR")
    writer.write(at(10, 5), [allocation(3)], currency="USD")
    assert marked_days(db) == [edge.date()]


def test_the_next_days_first_hour_does_not_mark_the_day(db: Database) -> None:
    writer = Writer(db)
    writer.write(at(11, 0), [allocation(2)], currency="EUR")
    writer.write(at(10, 5), [allocation(3)], currency="USD")
    assert marked_days(db) == []


def rollup(db: Database) -> list[tuple[str, int, int]]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT team, hours, total_cost_micros FROM allocation_daily WHERE cluster = %s AND namespace = 'shop'"
            " ORDER BY team",
            (CLUSTER,),
        ).fetchall()
    return [(r["team"], r["hours"], r["total_cost_micros"]) for r in rows]


def test_a_namespace_relabelled_mid_day_bills_each_team_its_own_hours(db: Database) -> None:
    writer = Writer(db)
    writer.write(at(15, 9), [allocation(2, team="alpha")], final=False)
    writer.write(at(15, 10), [allocation(3, team="alpha")], final=False)
    writer.write(at(15, 11), [allocation(5, team="beta")], final=False)  # relabelled between 10:00 and 11:00
    writer.write(at(15, 12), [allocation(7, team="beta")], final=False)
    assert rollup(db) == [("alpha", 2, 5 * UNIT), ("beta", 2, 12 * UNIT)]
    report = chargeback(db, parse_policy({"currency": "USD"}), OCTOBER)
    lines = {line.owner: line.total for line in report.lines if line.owner != "platform"}
    # 6.172880 and 14.814912: the report's total, 20.99, is rounded once and its last cent goes to
    # the larger remainder (beta's .4912 of a cent).
    assert lines == {"alpha": Decimal("6.17"), "beta": Decimal("14.82")}

    # The 10:00 hour collected again after the relabel: it moves whole to beta.
    writer.write(at(15, 10), [allocation(3, team="beta")])
    assert rollup(db) == [("alpha", 1, 2 * UNIT), ("beta", 3, 15 * UNIT)]
    report = chargeback(db, parse_policy({"currency": "USD"}), OCTOBER)
    lines = {line.owner: line.total for line in report.lines if line.owner != "platform"}
    assert lines == {"alpha": cents(2 * UNIT), "beta": cents(15 * UNIT)}


def test_a_group_with_only_some_costs_rolls_up_the_others_as_zero(db: Database) -> None:
    writer = Writer(db)
    unmounted = {
        "name": "__unmounted__",
        "properties": {},
        "minutes": Decimal(60),
        "pvCost": Decimal("0.25"),
        "totalCost": Decimal("0.25"),
    }
    # A container OpenCost gave minutes and no cost at all: every figure of its group is 0.
    costless = {
        "name": "quiet/Deployment/app/pod-0/c0",
        "properties": {"namespace": "quiet", "controllerKind": "Deployment", "controller": "app"},
        "minutes": Decimal(60),
    }
    writer.write(at(15, 5), [unmounted, costless], currency="USD")
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT entry_kind, hours, {', '.join(ROLLUP_COLUMNS)}"
            " FROM allocation_daily WHERE cluster = %s ORDER BY entry_kind",
            (CLUSTER,),
        ).fetchall()
    assert rows == [
        {
            "entry_kind": "unmounted",
            "hours": 1,
            **dict.fromkeys(ROLLUP_COLUMNS, 0),
            "pv_cost_micros": 250_000,
            "total_cost_micros": 250_000,
        },
        {"entry_kind": "workload", "hours": 1, **dict.fromkeys(ROLLUP_COLUMNS, 0)},
    ]


# The rollup's cost columns and the allocation field each one sums (sharedCost and externalCost
# have no column of their own: they are in the total only).
COST_COLUMNS = {
    "cpu_cost_micros": "cpuCost",
    "gpu_cost_micros": "gpuCost",
    "ram_cost_micros": "ramCost",
    "pv_cost_micros": "pvCost",
    "lb_cost_micros": "loadBalancerCost",
    "network_cost_micros": "networkCost",
}

# Each hour of ``allocation()``: 2 cores and 2 GiB requested, 1 used, 3 billed (whatever its units).
QUANTITIES = {"billed": 3, "requested": 2, "used": 1}


def test_an_hour_collected_again_is_replaced_in_every_column_of_its_day(db: Database) -> None:
    writer = Writer(db)
    writer.write(at(15, 9), [allocation(2)], final=False)
    writer.write(at(15, 10), [allocation(3)], final=False)
    writer.write(at(15, 10), [allocation(5)])  # 10:00 again: its 3 units out of the day, 5 in
    quantities = {
        f"{kind}_{unit}_hours": 2 * per_hour for kind, per_hour in QUANTITIES.items() for unit in ("core", "gib")
    }
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT hours, total_cost_micros, {', '.join(COST_COLUMNS)}, {', '.join(quantities)} FROM allocation_daily"
            " WHERE cluster = %s AND namespace = 'shop'",
            (CLUSTER,),
        ).fetchone()
    assert row == {
        "hours": 2,
        "total_cost_micros": (2 + 5) * UNIT,
        **{column: (2 + 5) * PARTS[field] for column, field in COST_COLUMNS.items()},
        **quantities,  # two hours in the day
    }
