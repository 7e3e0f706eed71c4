"""Charge rows for the billing tests: one Subscription ``u-1`` (shop/s) of cluster ``c``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from finops.hours import Hour
from infra.postgres import Database
from usecases.collect_charges.pricing import Plan, plan_subscription, price_plans
from usecases.collect_charges.usage_rows import UsageBoundary

AGG = "namespace,controllerKind,controller,pod,container"


def versions(db: Database) -> None:
    """The Offering and Subscription versions (id 1 each) charge rows refer to."""
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO offering_versions (id, cluster, uid, namespace, name, generation, fingerprint, spec)"
            " VALUES (1, 'c', 'o', 'n', 'o', 1, 'f', '{}') ON CONFLICT DO NOTHING"
        )
        conn.execute(
            "INSERT INTO subscription_versions (id, cluster, uid, namespace, name, generation, fingerprint,"
            " spec) VALUES (1, 'c', 'u-1', 'shop', 's', 1, 'f', '{}') ON CONFLICT DO NOTHING"
        )


def charge_row(db: Database, hour: datetime, source: str, micros: int = 0, unpriced: int = 0) -> None:
    """A final charge row (its Offering and Subscription versions created once); a row already
    there for the hour and source is kept."""
    versions(db)
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO subscription_charges (cluster, subscription_uid, hour, source, namespace, name,"
            " offering_version_id, subscription_version_id, quantity, amount_micros, is_finalized, unpriced_rows)"
            " VALUES ('c', 'u-1', %s, %s, 'shop', 's', 1, 1, 0, %s, true, %s)"
            " ON CONFLICT (cluster, subscription_uid, hour, source) DO NOTHING",
            (hour, source, micros, unpriced),
        )


def price(
    db: Database, sub: Mapping[str, Any], offering: Mapping[str, Any], pinned: Hour, **limits: Any
) -> tuple[Plan, dict[tuple[datetime, str], dict[str, Any]]]:
    """One run pinned at ``pinned`` pricing ``sub`` (through ``collect_charges``' planning and
    batches, into PostgreSQL): (its Plan, the rows it wrote by (hour, source))."""
    versions(db)
    found = db.fetch_all("charge_watermarks", cluster="c", uids=[sub["metadata"]["uid"]])
    marks = {row["source"]: row["hour"] for row in found}
    plan = plan_subscription(sub, offering, (1, 1), pinned, marks)
    plan.settle(UsageBoundary(db, "c", AGG, pinned))
    stamp = pinned.start + timedelta(minutes=7)  # computed_at of this run's rows
    price_plans(
        db,
        "c",
        AGG,
        [plan],
        now=stamp,
        chunk_hours=limits.get("chunk_hours", 168),
        batch_rows=limits.get("batch_rows", 20_000),
    )
    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM subscription_charges WHERE computed_at = %s", (stamp,)).fetchall()
    return plan, {(row["hour"], row["source"]): row for row in rows}


def plan_of(
    activated: datetime, deactivated: datetime | None = None, *, schedule: Any = None, meters: tuple[str, ...] = ()
) -> Plan:
    """A Plan of u-1 (shop/s) with nothing left to price: what ``status.costs`` and the finalizer
    release read of it."""
    from finops.usage import NO_MARGIN, ActiveInterval, Meter

    pinned = Hour(activated)
    margins = {Meter(m): NO_MARGIN for m in meters}
    return Plan(
        key="shop/s",
        uid="u-1",
        namespace="shop",
        name="s",
        versions=(1, 1),
        schedule=schedule,
        margins=margins,
        sources=[],
        active=ActiveInterval(activated, deactivated),
        pinned=pinned,
        end=pinned.start,
        cursor={},
    )
