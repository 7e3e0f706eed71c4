"""We test which charge rows one Subscription gets in a run (``collect_charges``' ``price_subscription``,
in-process against a real PostgreSQL, with allocation rows and earlier charges written by hand):

- the fee: one row an hour with the fee's unit price and no quantity, final before the pinned hour;
- each source (the fee, each meter) continues after its own watermark; a meter newer than its
  siblings' watermarks is priced from activation, from rows the run's prefetch did not hold;
- deactivation: usage rows stop after the hour holding the deactivation (that hour clamped to the
  active part), but run on to the fee's snapped end when the Offering has a fee; a Subscription
  settled through its last hour gets no rows;
- ``resourcePricing``'s ``subscription`` entry is no meter, and a Subscription without usage sources
  has none; invalid timestamps and margins name their field.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from finops.errors import InvalidInput
from finops.hours import HOUR, Hour
from infra.postgres import Database
from tests.integration import charges
from tests.integration.charges import AGG, charge_row
from usecases.collect_charges.pricing import Plan

PINNED = Hour(datetime(2026, 11, 20, 10, tzinfo=UTC))
CPU = 1_000_000  # an hour of web's usage: 2 cores x 1 h x 0.5 a core-hour
FEE = {"priceMicros": 1_000_000, "period": "1h", "tickAlignment": "ActivatedAt"}


def h(n: int) -> datetime:
    return PINNED.start - n * HOUR


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def usage(db: Database) -> Database:
    """Hours h(6)..h(1) final and the pinned hour open in the ledger, each with one row of shop's
    web using 2 cores, stamped with a PriceBook of 0.5 a core-hour."""
    with db.connection() as conn:
        book = conn.execute(
            "INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode, cpu_hour,"
            " spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour, network_gib)"
            " VALUES ('c', 'finops', 'b', 'u', 'f', 'USD', 'currency', 0.5, 0, 0, 0, 0, 0, 0) RETURNING id"
        ).fetchone()
        assert book is not None
        conn.execute("SELECT finops_ensure_allocation_partition(%s)", (PINNED.start,))
        for n in range(7):
            conn.execute(
                "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count)"
                " VALUES ('c', %s, %s, %s, 1)",
                (AGG, h(n), "open" if n == 0 else "final"),
            )
            conn.execute(
                "INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind,"
                " controller_kind, controller, pod, cpu_core_usage_avg, minutes, pricebook_id, is_finalized)"
                " VALUES ('c', 'shop', %s, %s, %s, 'workload', 'deployment', 'web', 'web-1', 2, 60, %s, %s)",
                (f"web-{n}", AGG, h(n), book["id"], n > 0),
            )
    return db


def charged_through(db: Database, source: str, last: datetime) -> None:
    """A final charge row at ``last``: the source's watermark."""
    charge_row(db, last, source)


def subscription(activated: str = iso(h(6)), deactivated: str | None = None, *, sources: bool = True) -> dict[str, Any]:
    status = {"activatedAt": activated} | ({"deactivatedAt": deactivated} if deactivated else {})
    spec: dict[str, Any] = {"offeringRef": {"name": "o"}}
    if sources:
        spec["usageSources"] = [{"resourceType": "Deployment", "name": "web"}]
    return {"metadata": {"namespace": "shop", "name": "s", "uid": "u-1"}, "spec": spec, "status": status}


def offering(*meters: str, fee: dict[str, Any] | None = None) -> dict[str, Any]:
    pricing: dict[str, Any] = {"resourcePricing": [{"name": m} for m in meters]}
    if fee is not None:
        pricing["subscriptionFee"] = fee
    return {"spec": {"pricing": pricing}}


def price(db: Database, sub: dict[str, Any], offer: dict[str, Any]) -> tuple[Plan, dict[tuple[datetime, str], Any]]:
    """The run pinned at PINNED: (its Plan, its rows by (hour, source) as column -> value)."""
    return charges.price(db, sub, offer, PINNED)


def test_a_fee_hour_is_the_fees_price_final_before_the_pinned_hour(usage: Database) -> None:
    # No usage sources: the Offering's meters price nothing, only the fee is charged.
    item, rows = price(usage, subscription(iso(h(3)), sources=False), offering("cpuHour", fee=FEE))
    assert item.meters == []
    assert {
        key: (row["unit_price_micros"], row["quantity"], row["amount_micros"], row["is_finalized"])
        for key, row in rows.items()
    } == {
        (h(3), "fee"): (1_000_000, 0, 1_000_000, True),  # ticks at h(2), h(1), h(0), pinned end
        (h(2), "fee"): (1_000_000, 0, 1_000_000, True),
        (h(1), "fee"): (1_000_000, 0, 1_000_000, True),
        (h(0), "fee"): (1_000_000, 0, 1_000_000, False),  # the pinned hour is rewritten by every run
    }


def test_each_source_continues_after_its_own_watermark(usage: Database) -> None:
    # The fee is charged through h(2), ramGbHour through h(4); cpuHour was added to the Offering
    # since: it is priced from activation, from rows older than its siblings' watermarks.
    charged_through(usage, "fee", h(2))
    charged_through(usage, "ramGbHour", h(4))
    item, rows = price(usage, subscription(), offering("subscription", "cpuHour", "ramGbHour", fee=FEE))
    assert item.meters == ["cpuHour", "ramGbHour"]  # `subscription` is the fee, no meter
    assert sorted(hour for hour, source in rows if source == "fee") == [h(1), h(0)]
    assert sorted(hour for hour, source in rows if source == "ramGbHour") == [h(3), h(2), h(1), h(0)]
    cpu = {hour: row for (hour, source), row in rows.items() if source == "cpuHour"}
    assert {hour: row["amount_micros"] for hour, row in cpu.items()} == {h(n): CPU for n in range(7)}
    assert cpu[h(6)]["unit_price_micros"] == 500_000
    assert {hour for hour, row in cpu.items() if row["is_finalized"]} == {h(n) for n in range(1, 7)}


@pytest.mark.parametrize(("chunk_hours", "batch_rows"), [(1, 1), (2, 3), (3, 100), (168, 1)])
def test_chunks_and_batches_write_what_one_pass_would(usage: Database, chunk_hours: int, batch_rows: int) -> None:
    # The same Subscription priced an hour (or two, three) at a time, a batch per chunk or two:
    # the rows are those of pricing it whole (amounts, finality, unpriced counts).
    charged_through(usage, "ramGbHour", h(5))
    offer = offering("cpuHour", "ramGbHour", fee=FEE)
    _, whole = price(usage, subscription(), offer)
    with usage.connection() as conn:
        conn.execute("DELETE FROM subscription_charges WHERE source <> 'ramGbHour' OR hour <> %s", (h(5),))
        conn.execute("DELETE FROM subscription_charge_watermarks")
        conn.execute("INSERT INTO subscription_charge_watermarks VALUES ('c', 'u-1', 'ramGbHour', %s)", (h(5),))
    plan, chunked = charges.price(usage, subscription(), offer, PINNED, chunk_hours=chunk_hours, batch_rows=batch_rows)
    assert plan.done
    fields = ("amount_micros", "unit_price_micros", "quantity", "is_finalized", "unpriced_rows")
    assert {k: [r[f] for f in fields] for k, r in chunked.items()} == {
        k: [r[f] for f in fields] for k, r in whole.items()
    }
    assert len(whole) == 7 + 7 + 5  # fee and cpuHour from activation, ramGbHour after its watermark


def test_usage_stops_with_the_hour_holding_the_deactivation(usage: Database) -> None:
    # Deactivated at h(3) + 30 min: h(3) is charged for its active half, nothing after it.
    _, rows = price(usage, subscription(deactivated=iso(h(3) + timedelta(minutes=30))), offering("cpuHour"))
    assert {hour: row["amount_micros"] for (hour, _), row in rows.items()} == {
        h(6): CPU,
        h(5): CPU,
        h(4): CPU,
        h(3): CPU // 2,
    }
    # Deactivated on the hour: that hour is not active at all and gets no row.
    with usage.connection() as conn:
        conn.execute("TRUNCATE subscription_charges, subscription_charge_watermarks")
    _, rows = price(usage, subscription(deactivated=iso(h(3))), offering("cpuHour"))
    assert sorted(hour for hour, _ in rows) == [h(6), h(5), h(4)]


def test_with_a_fee_rows_run_on_to_its_snapped_end(usage: Database) -> None:
    # A monthly fee snaps the deactivation (h(3) + 30 min, November 20th) to December 1st: the fee's
    # last tick is charged there, so both sources are written on (usage at zero) to the pinned hour.
    fee = {"priceMicros": 30_000_000, "period": "1", "tickAlignment": "MonthBoundary"}
    _, rows = price(usage, subscription(deactivated=iso(h(3) + timedelta(minutes=30))), offering("cpuHour", fee=fee))
    assert sorted(hour for hour, source in rows if source == "fee") == [h(n) for n in range(6, -1, -1)]
    cpu = {hour: row["amount_micros"] for (hour, source), row in rows.items() if source == "cpuHour"}
    assert cpu == {h(6): CPU, h(5): CPU, h(4): CPU, h(3): CPU // 2, h(2): 0, h(1): 0, h(0): 0}


def test_a_subscription_settled_through_its_last_hour_gets_no_rows(usage: Database) -> None:
    charged_through(usage, "cpuHour", h(3))
    item, rows = price(usage, subscription(deactivated=iso(h(3) + timedelta(minutes=30))), offering("cpuHour"))
    assert rows == {} and item.meters == ["cpuHour"]


def test_the_last_hour_left_is_the_pinned_one(usage: Database) -> None:
    charged_through(usage, "cpuHour", h(1))
    _, rows = price(usage, subscription(), offering("cpuHour"))
    assert [(hour, row["amount_micros"], row["is_finalized"]) for (hour, _), row in rows.items()] == [
        (h(0), CPU, False)
    ]


@pytest.mark.parametrize(
    ("sub", "offer", "field"),
    [
        (subscription("yesterday"), offering("cpuHour"), "status.activatedAt"),
        (subscription(deactivated="soon"), offering("cpuHour"), "status.deactivatedAt"),
        (
            subscription(),
            {
                "spec": {
                    "pricing": {
                        "resourcePricing": [{"name": "cpuHour"}, {"name": "ramGbHour", "margins": {"factor": 2}}]
                    }
                }
            },
            "resourcePricing[1].margins",
        ),
    ],
    ids=["activatedAt", "deactivatedAt", "margins"],
)
def test_invalid_input_names_its_field(usage: Database, sub: dict[str, Any], offer: dict[str, Any], field: str) -> None:
    # The message is what the run reports for the Subscription it could not price.
    with pytest.raises(InvalidInput) as raised:
        price(usage, sub, offer)
    assert raised.value.message.startswith(f"{field}: ")
