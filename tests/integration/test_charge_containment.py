"""We test how ``collect_charges``' pricing contains and batches its work (``price_plans`` against a
real PostgreSQL, with allocation rows, pricebooks and earlier charges written by hand):

- an allocation row that cannot be priced (it ends before it starts) fails its Subscription only:
  no row of it is written, the others are priced in full;
- a time budget not reached prices every hour, a batch at a time;
- sources continuing from different watermarks, priced an hour at a time, get what one pass gives;
- RAM, PV and network are priced from the row's stored usage and its stamped rates;
- a ``status.costs`` patch refused with a conflict is not counted as written.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from finops.errors import Conflict
from finops.hours import HOUR, Hour
from infra.postgres import Database
from tests.integration import charges
from tests.integration.charges import AGG, charge_row, plan_of
from usecases.collect_charges.pricing import plan_subscription, price_plans
from usecases.collect_charges.status import write_costs
from usecases.collect_charges.usage_rows import UsageBoundary

PINNED = Hour(datetime(2026, 11, 20, 10, tzinfo=UTC))
GIB = 2**30
FEE = {"priceMicros": 1_000_000, "period": "1h", "tickAlignment": "ActivatedAt"}


def h(n: int) -> datetime:
    return PINNED.start - n * HOUR


def subscription(namespace: str = "shop", uid: str = "u-1") -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": "s", "uid": uid},
        "spec": {"offeringRef": {"name": "o"}, "usageSources": [{"resourceType": "Deployment", "name": "web"}]},
        "status": {"activatedAt": h(6).strftime("%Y-%m-%dT%H:%M:%SZ")},
    }


def offering(*meters: str, fee: bool = False) -> dict[str, Any]:
    pricing: dict[str, Any] = {"resourcePricing": [{"name": m} for m in meters]}
    if fee:
        pricing["subscriptionFee"] = FEE
    return {"spec": {"pricing": pricing}}


def allocations(db: Database, rows: list[dict[str, Any]], **rates: float) -> None:
    """Hours h(6)..h(1) final in the ledger, the pinned hour open, and ``rows`` (column -> value,
    merged over web's row using 2 cores in shop at h(1)) stamped with a PriceBook of ``rates``."""
    rates = {"cpu_hour": 0.5, "ram_gb_hour": 0, "pv_gb_hour": 0, "network_gib": 0} | rates
    with db.connection() as conn:
        book = conn.execute(
            "INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode, cpu_hour,"
            " spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour, network_gib)"
            " VALUES ('c', 'finops', 'b', 'u', 'f', 'USD', 'currency', %(cpu_hour)s, 0, %(ram_gb_hour)s, 0,"
            " %(pv_gb_hour)s, 0, %(network_gib)s) RETURNING id",
            rates,
        ).fetchone()
        assert book is not None
        conn.execute("SELECT finops_ensure_allocation_partition(%s)", (PINNED.start,))
        for n in range(7):
            conn.execute(
                "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count)"
                " VALUES ('c', %s, %s, %s, 1)",
                (AGG, h(n), "open" if n == 0 else "final"),
            )
        for i, row in enumerate(rows):
            values = {
                "namespace": "shop",
                "hour": h(1),
                "cpu_core_usage_avg": 2,
                "data_start": None,
                "data_end": None,
                "ram_byte_usage_avg": None,
                "pv_byte_hours": None,
                "network_transfer_bytes": None,
                "network_receive_bytes": None,
            } | row
            conn.execute(
                "INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind,"
                " controller_kind, controller, pod, cpu_core_usage_avg, ram_byte_usage_avg, pv_byte_hours,"
                " network_transfer_bytes, network_receive_bytes, data_start, data_end, minutes, pricebook_id,"
                " is_finalized)"
                " VALUES ('c', %(namespace)s, %(name)s, %(agg)s, %(hour)s, 'workload', 'deployment', 'web', 'web-1',"
                " %(cpu_core_usage_avg)s, %(ram_byte_usage_avg)s, %(pv_byte_hours)s, %(network_transfer_bytes)s,"
                " %(network_receive_bytes)s, %(data_start)s, %(data_end)s, 60, %(book)s, true)",
                values | {"name": f"web-{i}", "agg": AGG, "book": book["id"]},
            )


def every_hour(namespace: str) -> list[dict[str, Any]]:
    return [{"namespace": namespace, "hour": h(n)} for n in range(7)]


def written(db: Database) -> dict[tuple[str, datetime, str], dict[str, Any]]:
    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM subscription_charges").fetchall()
    return {(row["subscription_uid"], row["hour"], row["source"]): row for row in rows}


def planned(db: Database, sub: dict[str, Any], offer: dict[str, Any], marks: dict[str, datetime] | None = None) -> Any:
    plan = plan_subscription(sub, offer, (1, 1), PINNED, marks or {})
    plan.settle(UsageBoundary(db, "c", AGG, PINNED))
    return plan


def test_a_row_that_cannot_be_priced_fails_its_subscription_only(db: Database) -> None:
    # a/s has a row at h(3) that ends before it starts; b/s (listed after it) has only good rows.
    backwards = {"namespace": "a", "hour": h(3), "data_start": h(3) + timedelta(minutes=40)}
    backwards["data_end"] = h(3) + timedelta(minutes=10)
    allocations(db, [*every_hour("a")[:3], *every_hour("a")[4:], backwards, *every_hour("b")])
    charges.versions(db)
    a = planned(db, subscription("a", "u-a"), offering("cpuHour"))
    b = planned(db, subscription("b", "u-b"), offering("cpuHour"))
    run = price_plans(db, "c", AGG, [a, b], now=PINNED.start, chunk_hours=1, batch_rows=1000)
    assert a.key == "a/s" and b.key == "b/s"
    assert a.error == "ValueError: UsageRow 'a/web-1' ends before it starts"
    assert b.error is None and b.done
    rows = written(db)
    assert {uid for uid, _, _ in rows} == {"u-b"}  # none of a/s, not even its hours before h(3)
    assert {hour: row["amount_micros"] for (_, hour, _), row in rows.items()} == {h(n): 1_000_000 for n in range(7)}
    assert run.rows == 7


def test_a_budget_not_reached_prices_every_hour_a_batch_at_a_time(db: Database) -> None:
    allocations(db, every_hour("shop"))
    charges.versions(db)
    plan = planned(db, subscription(), offering("cpuHour", fee=True))
    run = price_plans(db, "c", AGG, [plan], now=PINNED.start, chunk_hours=1, batch_rows=1, budget_seconds=3600)
    assert run.remaining == [] and plan.done
    assert (run.rows, run.batches) == (2 * 7, 7)  # a batch per hour: its fee and cpuHour rows
    assert sorted(written(db)) == sorted(("u-1", h(n), s) for n in range(7) for s in ("fee", "cpuHour"))


def test_sources_from_different_watermarks_priced_an_hour_at_a_time_get_one_pass(db: Database) -> None:
    # The fee and cpuHour are charged through h(5); ramGbHour (added since) from activation, h(6).
    allocations(db, [r | {"ram_byte_usage_avg": GIB} for r in every_hour("shop")], ram_gb_hour=0.25)
    offer = offering("cpuHour", "ramGbHour", fee=True)

    def priced(**limits: Any) -> dict[tuple[datetime, str], list[Any]]:
        with db.connection() as conn:
            conn.execute("TRUNCATE subscription_charges, subscription_charge_watermarks")
        charge_row(db, h(5), "fee")
        charge_row(db, h(5), "cpuHour")
        plan, rows = charges.price(db, subscription(), offer, PINNED, **limits)
        assert plan.done
        fields = ("amount_micros", "unit_price_micros", "quantity", "is_finalized", "unpriced_rows")
        return {key: [row[f] for f in fields] for key, row in rows.items()}

    whole = priced()
    assert sorted(whole) == sorted(
        [(h(n), s) for n in range(5) for s in ("fee", "cpuHour")] + [(h(n), "ramGbHour") for n in range(7)]
    )
    assert whole[(h(6), "ramGbHour")][0] == 250_000 and whole[(h(4), "cpuHour")][0] == 1_000_000
    assert priced(chunk_hours=1, batch_rows=1) == whole
    assert priced(chunk_hours=1, batch_rows=1000) == whole


def test_ram_pv_and_network_are_priced_from_the_stored_row(db: Database) -> None:
    # One row at h(1): 2 GiB of RAM on average, 1 GiB-hour of volume, 1 GiB sent and 1 GiB received.
    # Distinct rates, so a meter priced with another meter's rate shows.
    row = {
        "ram_byte_usage_avg": 2 * GIB,
        "pv_byte_hours": GIB,
        "network_transfer_bytes": GIB,
        "network_receive_bytes": GIB,
    }
    allocations(db, [row], ram_gb_hour=0.5, pv_gb_hour=0.25, network_gib=0.125)
    _, rows = charges.price(db, subscription(), offering("ramGbHour", "pvGbHour", "networkGb"), PINNED)
    # quantity x exact unit price, half-even per row:
    #   ramGbHour  2 GiB x 1 h            = 2 GiB-h x 500,000 = 1,000,000
    #   pvGbHour   1 GiB-h x whole row    = 1 GiB-h x 250,000 =   250,000
    #   networkGb  (1 + 1) GiB, no hours  = 2 GiB   x 125,000 =   250,000
    assert {
        source: (row["quantity"], row["unit_price_micros"], row["amount_micros"])
        for (hour, source), row in rows.items()
        if hour == h(1)
    } == {
        "ramGbHour": (Decimal(2), Decimal(500_000), 1_000_000),
        "pvGbHour": (Decimal(1), Decimal(250_000), 250_000),
        "networkGb": (Decimal(2), Decimal(125_000), 250_000),
    }
    assert {row["amount_micros"] for (hour, _), row in rows.items() if hour != h(1)} == {0}


class RefusingKube:
    """A Kubernetes API that refuses every status patch: the Subscription changed meanwhile."""

    def __init__(self) -> None:
        self.calls = 0

    def patch_status(self, *args: Any) -> dict[str, Any]:
        self.calls += 1
        raise Conflict("the object has been modified")


def test_a_conflicting_status_patch_is_not_counted_as_written() -> None:
    sub = {
        "metadata": {"namespace": "shop", "name": "s", "uid": "u-1", "resourceVersion": "7"},
        "status": {"activatedAt": "2026-11-20T04:00:00Z"},
    }
    kube = RefusingKube()
    plan = plan_of(h(6), meters=("cpuHour",))
    assert write_costs(kube, sub, plan, {}, PINNED, PINNED.start) is False  # type: ignore[arg-type]
    assert kube.calls == 1
