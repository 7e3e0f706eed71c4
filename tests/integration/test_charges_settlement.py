"""We test these aspects of settling a deleted Subscription (collect_charges' finalizer release):

- the finalizer stays while the fee's last tick, snapped to the next boundary after deactivation,
  is not charged yet, even when every hour up to the deactivation is final;
- it is released once the hour that ends on the snapped boundary is final.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from finops.fees import FeeSchedule, parse_fee
from finops.subscriptions import FINALIZER
from functions.collect_charges.service import Priced, _release_finalizer
from infra.postgres import Database

ACTIVATED = datetime(2026, 1, 10, tzinfo=UTC)
DEACTIVATED = datetime(2026, 3, 5, 10, 30, tzinfo=UTC)
SCHEDULE = FeeSchedule(parse_fee({"priceMicros": 100_000_000, "period": "1", "tickAlignment": "MonthBoundary"}),
                       ACTIVATED, DEACTIVATED)  # fmt: skip


class Store:
    """Our Kubernetes port, for one Subscription (the functions use ``infra.kube`` over HTTP)."""

    def __init__(self) -> None:
        self.sub: dict[str, Any] = {
            "metadata": {"namespace": "shop", "name": "s", "uid": "u-1", "resourceVersion": "7",
                         "deletionTimestamp": "2026-03-05T10:30:00Z", "finalizers": [FINALIZER]},
            "status": {"activatedAt": "2026-01-10T00:00:00Z", "deactivatedAt": "2026-03-05T10:30:00Z"},
        }  # fmt: skip

    def get_object(self, *_: Any) -> dict[str, Any]:
        return self.sub

    def patch_object(self, *_: Any, **__: Any) -> dict[str, Any]:
        patch = _[5]
        self.sub["metadata"]["finalizers"] = patch["metadata"]["finalizers"]
        return self.sub


def finalize_fee_through(db: Database, last: datetime) -> None:
    with db.connection() as conn:
        conn.execute("INSERT INTO offering_versions (id, cluster, uid, namespace, name, generation, fingerprint, spec)"
                     " VALUES (1, 'c', 'o', 'n', 'o', 1, 'f', '{}') ON CONFLICT DO NOTHING")  # fmt: skip
        conn.execute("INSERT INTO subscription_versions (id, cluster, uid, namespace, name, generation, fingerprint,"
                     " spec) VALUES (1, 'c', 'u-1', 'shop', 's', 1, 'f', '{}') ON CONFLICT DO NOTHING")  # fmt: skip
        conn.execute(
            "INSERT INTO subscription_charges (cluster, subscription_uid, hour, source, namespace, name,"
            " offering_version_id, subscription_version_id, quantity, amount_micros, is_finalized)"
            " VALUES ('c', 'u-1', %s, 'fee', 'shop', 's', 1, 1, 0, 0, true)"
            " ON CONFLICT (cluster, subscription_uid, hour, source) DO NOTHING",
            (last,),
        )


def test_the_finalizer_waits_for_the_snapped_last_tick(db: Database) -> None:
    store = Store()
    item = Priced(rows=[], schedule=SCHEDULE, meters=[])
    assert SCHEDULE.snapped_end == datetime(2026, 4, 1, tzinfo=UTC)
    finalize_fee_through(db, datetime(2026, 3, 5, 11, tzinfo=UTC))  # past the deactivation hour
    now = datetime(2026, 3, 5, 12, 5, tzinfo=UTC)
    assert not _release_finalizer(db, store, "c", store.sub, item, now, error=None)  # type: ignore[arg-type]
    assert store.sub["metadata"]["finalizers"] == [FINALIZER]
    finalize_fee_through(db, datetime(2026, 3, 31, 23, tzinfo=UTC))  # the hour ending on April 1st
    assert _release_finalizer(db, store, "c", store.sub, item, now + timedelta(days=27), error=None)  # type: ignore[arg-type]
    assert store.sub["metadata"]["finalizers"] == []
