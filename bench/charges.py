"""Pricing 5,000 Subscriptions over 24 hours: ours against a floor.

- ours: ``collect_charges``' pricing and write path for every Subscription (watermarks, the fee
  schedule and metered CPU usage per hour, staging ``COPY`` and the merge that never rewrites
  finalized rows), in-process against PostgreSQL;
- floor, same run: one ``INSERT ... SELECT`` writing the same number of rows into the same table.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import database
from finops.hours import Hour
from functions.collect_charges.service import COLUMNS, UsageBoundary, prefetch, price_subscription

SUBSCRIPTIONS = 5_000
HOURS = 24
PINNED = Hour(datetime(2026, 10, 2, tzinfo=UTC))
OFFERING = {
    "metadata": {"namespace": "finops", "name": "gold"},
    "spec": {"pricing": {
        "subscriptionFee": {"priceMicros": 1_000_000, "period": "1", "tickAlignment": "HourBoundary"},
        "resourcePricing": [{"name": "cpuHour", "margins": {"factorMilli": 1200}}],
    }},
}  # fmt: skip


def _subscription(n: int) -> dict[str, Any]:
    return {
        "metadata": {"namespace": f"tenant-{n % 100}", "name": f"sub-{n}", "uid": str(uuid.UUID(int=n))},
        "spec": {"usageSources": [{"resourceType": "Deployment", "name": f"app-{n}"}]},
        "status": {
            "activatedAt": (PINNED.start - timedelta(hours=HOURS - 1, minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
        },
    }


def main() -> None:
    with database() as db:
        offering_version = db.fetch_one("upsert_offering_version", cluster="bench", uid="o", namespace="finops",
                                        name="gold", generation=1, fingerprint="f", spec=OFFERING["spec"])  # fmt: skip
        sub_version = db.fetch_one(
            "upsert_subscription_version", cluster="bench", uid="s", namespace="x", name="x", generation=1,
            fingerprint="f", spec={}, activated_at=None, deactivated_at=None,
        )  # fmt: skip
        assert offering_version and sub_version
        versions = (int(offering_version["id"]), int(sub_version["id"]))
        subs = [_subscription(n) for n in range(SUBSCRIPTIONS)]
        now = PINNED.start + timedelta(minutes=5)

        start = time.perf_counter()
        rows: list[tuple[Any, ...]] = []
        data = prefetch(db, "bench", "agg", subs, PINNED)
        boundary = UsageBoundary(db, "bench", "agg", PINNED)
        for sub in subs:
            item = price_subscription(db, "bench", "agg", sub, OFFERING, versions, PINNED, boundary, now, data)
            rows.extend(item.rows)
        with db.connection() as conn:
            db.execute("create_charge_staging", conn)
            db.copy_rows(conn, "charge_staging", COLUMNS, rows)
            db.execute("merge_charge_staging", conn)
        ours = time.perf_counter() - start

        start = time.perf_counter()
        with db.connection() as conn:
            conn.execute(
                "INSERT INTO subscription_charges SELECT 'floor', 'u' || s, h, src, 'ns', 'n', %s, %s, 1, 1, 1, 'USD',"
                " true, now() FROM generate_series(1, %s) s,"
                " generate_series(%s::timestamptz, %s::timestamptz, interval '1 hour') h,"
                " unnest(array['fee', 'cpuHour']) src",
                (versions[0], versions[1], SUBSCRIPTIONS, PINNED.start - timedelta(hours=HOURS - 1), PINNED.start),
            )
        floor = time.perf_counter() - start

    print(f"charges: {SUBSCRIPTIONS:,} Subscriptions, {HOURS} hours + the activation hour, fee + cpuHour: "
          f"{len(rows):,} rows")  # fmt: skip
    print(f"  ours  price + stage + merge (one transaction)   {ours * 1000:8.0f} ms")
    print(f"  floor one INSERT ... SELECT of as many rows     {floor * 1000:8.0f} ms")
    print(f"  ratio ours/floor: {ours / floor:.2f}  (target <= 3)")
