"""Charge rows for the billing tests: one Subscription ``u-1`` (shop/s) of cluster ``c``."""

from __future__ import annotations

from datetime import datetime

from infra.postgres import Database


def charge_row(db: Database, hour: datetime, source: str, micros: int = 0, unpriced: int = 0) -> None:
    """A final charge row (its Offering and Subscription versions created once); a row already
    there for the hour and source is kept."""
    with db.connection() as conn:
        conn.execute("INSERT INTO offering_versions (id, cluster, uid, namespace, name, generation, fingerprint, spec)"
                     " VALUES (1, 'c', 'o', 'n', 'o', 1, 'f', '{}') ON CONFLICT DO NOTHING")  # fmt: skip
        conn.execute("INSERT INTO subscription_versions (id, cluster, uid, namespace, name, generation, fingerprint,"
                     " spec) VALUES (1, 'c', 'u-1', 'shop', 's', 1, 'f', '{}') ON CONFLICT DO NOTHING")  # fmt: skip
        conn.execute(
            "INSERT INTO subscription_charges (cluster, subscription_uid, hour, source, namespace, name,"
            " offering_version_id, subscription_version_id, quantity, amount_micros, is_finalized, unpriced_rows)"
            " VALUES ('c', 'u-1', %s, %s, 'shop', 's', 1, 1, 0, %s, true, %s)"
            " ON CONFLICT (cluster, subscription_uid, hour, source) DO NOTHING",
            (hour, source, micros, unpriced),
        )
