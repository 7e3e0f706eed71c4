"""We test where metered usage stops being final, from the hour ledger, and that usage rows
without a rate are counted rather than silently charged as zero (``collect_charges``' pricing
against a real PostgreSQL):

- a missing hour before final ones (a gap) stops finality at the gap, even when later hours are
  final; a lost hour counts as settled; the pinned hour is never final;
- rows collected without a PriceBook, or priced with OpenCost's own prices (a version without
  rates), are not charged and are counted on the charge rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from finops.hours import HOUR, Hour
from infra.postgres import Database
from tests.integration import charges
from tests.integration.charges import AGG
from usecases.collect_charges.pricing import plan_subscription, price_plans
from usecases.collect_charges.usage_rows import UsageBoundary

PINNED = Hour(datetime(2026, 11, 20, 10, tzinfo=UTC))
ACTIVATED = PINNED.start - 6 * HOUR
SUB: dict[str, Any] = {
    "metadata": {"namespace": "shop", "name": "s", "uid": "u-1"},
    "spec": {"offeringRef": {"name": "o"}, "usageSources": [{"resourceType": "Deployment", "name": "web"}]},
    "status": {"activatedAt": ACTIVATED.isoformat()},
}
OFFERING = {"spec": {"pricing": {"resourcePricing": [{"name": "cpuHour"}]}}}


def ledger(db: Database, states: dict[datetime, str], *, priced: bool = True, source: str = "pricebook") -> None:
    """Ledger hours in the given states, each with one row of web using 2 cores (rate 0.5/h; with
    ``source`` opencost, a version that states the rate but is not a PriceBook's)."""
    with db.connection() as conn:
        book = conn.execute(
            "INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode, source,"
            " cpu_hour, spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour, network_gib)"
            " VALUES ('c', 'finops', 'b', 'u', 'f', 'USD', 'currency', %s, 0.5, 0, 0, 0, 0, 0, 0) RETURNING id",
            (source,),
        ).fetchone()
        assert book is not None
        conn.execute("SELECT finops_ensure_allocation_partition(%s)", (PINNED.start,))
        for hour, state in states.items():
            conn.execute(
                "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count)"
                " VALUES ('c', %s, %s, %s, 1)",
                (AGG, hour, state),
            )
            conn.execute(
                "INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind,"
                " controller_kind, controller, pod, cpu_core_usage_avg, minutes, pricebook_id, is_finalized)"
                " VALUES ('c', 'shop', %s, %s, %s, 'workload', 'deployment', 'web', 'web-1', 2, 60, %s, %s)",
                (f"web-{hour:%H}", AGG, hour, book["id"] if priced else None, state == "final"),
            )


def price(db: Database) -> Any:
    item, rows = charges.price(db, SUB, OFFERING, PINNED)
    return item, {hour: row for (hour, _), row in rows.items()}


def h(n: int) -> datetime:
    return PINNED.start - n * HOUR


def test_a_gap_stops_finality_even_before_final_hours(db: Database) -> None:
    ledger(db, {h(6): "final", h(5): "final", h(3): "final", h(2): "lost", h(1): "final"})  # h(4) missing
    _, rows = price(db)
    final = {hour for hour, row in rows.items() if row["is_finalized"]}
    assert final == {h(6), h(5)}
    assert rows[h(5)]["amount_micros"] == 1_000_000  # 2 cores x 1 h x 0.5 = 1.00
    assert rows[h(4)]["amount_micros"] == 0 and not rows[h(4)]["is_finalized"]  # the gap: open, never a final zero


def test_lost_hours_are_settled_and_the_pinned_hour_stays_open(db: Database) -> None:
    ledger(
        db,
        {
            h(6): "final",
            h(5): "lost",
            h(4): "final",
            h(3): "final",
            h(2): "final",
            h(1): "final",
            PINNED.start: "final",
        },
    )
    _, rows = price(db)
    assert {hour for hour, row in rows.items() if row["is_finalized"]} == {h(n) for n in range(1, 7)}
    assert not rows[PINNED.start]["is_finalized"]


@pytest.mark.parametrize("stamp", [{"priced": False}, {"source": "opencost"}], ids=["unpriced", "opencost-prices"])
def test_usage_rows_without_a_rate_are_counted_not_silently_charged(db: Database, stamp: dict[str, Any]) -> None:
    ledger(db, {h(n): "final" for n in range(1, 7)}, **stamp)
    item, rows = price(db)
    assert item.unpriced_rows == 6
    assert {row["amount_micros"] for row in rows.values()} == {0}
    assert rows[h(3)]["unpriced_rows"] == 1  # counted on the charge row (status.costs shows it)


def test_the_boundary_reads_further_back_on_demand(db: Database) -> None:
    # One boundary serves every source of a run: a later call for an older start reads the hours
    # before what it read already, and gets the same answer as a fresh boundary would.
    ledger(db, {h(6): "final", h(5): "final", h(4): "final", h(2): "final", h(1): "final"})  # h(3) missing
    boundary = UsageBoundary(db, "c", AGG, PINNED)
    assert boundary(h(2)) == PINNED.start
    assert boundary(h(6)) == h(3)
    assert boundary(h(5)) == h(3)
    assert boundary(h(2)) == PINNED.start


def test_settled_hours_are_read_before_their_usage_rows(db: Database, monkeypatch: Any) -> None:
    """Rows read before the ledger could be from before a concurrent run settled the hour: a charge
    finalized from them would be wrong for good. So the ledger is read first, in both paths."""
    ledger(db, {h(n): "final" for n in range(1, 7)})
    order: list[str] = []
    fetch_all = Database.fetch_all

    def recorded(self: Database, query: str, /, conn: Any = None, **params: Any) -> Any:
        order.append(query)
        return fetch_all(self, query, conn, **params)

    monkeypatch.setattr(Database, "fetch_all", recorded)
    charges.versions(db)
    boundary = UsageBoundary(db, "c", AGG, PINNED)
    plan = plan_subscription(SUB, OFFERING, (1, 1), PINNED, {})
    plan.settle(boundary)
    price_plans(db, "c", AGG, [plan], now=PINNED.start, chunk_hours=2, batch_rows=1)
    assert order.index("settled_hours") < order.index("usage_rows")
    assert order.count("usage_rows") == 4  # h(6) to the pinned hour, a batch of two hours at a time
