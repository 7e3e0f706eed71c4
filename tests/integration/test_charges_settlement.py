"""We test these aspects of settling a deleted Subscription (collect_charges' finalizer release):

- the finalizer stays while the fee's last tick, snapped to the next boundary after deactivation,
  is not charged yet, even when every hour up to the deactivation is final;
- it is released once the hour that ends on the snapped boundary is final;
- each condition on its own keeps it: an error this run, ``minPeriods`` not yet passed, usage not
  final through the deactivation hour (or never charged), the fee not final through its snapped
  end, a concurrent change (409 on the resourceVersion precondition), a Subscription not deleted,
  or deleted but not deactivated yet, or without our finalizer (released already); with all of
  them holding it is released;
- the release patches the Subscription as the API server has it now: only our finalizer is
  removed (another controller's stays), under its current resourceVersion.
"""

from __future__ import annotations

import copy
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from finops.errors import Conflict
from finops.fees import FeeSchedule, parse_fee
from finops.subscriptions import FINALIZER
from infra.postgres import Database
from tests.integration.charges import charge_row, plan_of
from usecases.collect_charges.status import release_finalizer
from usecases.reconcile.objects import GROUP, VERSION

ACTIVATED = datetime(2026, 1, 10, tzinfo=UTC)
DEACTIVATED = datetime(2026, 3, 5, 10, 30, tzinfo=UTC)
SCHEDULE = FeeSchedule(
    parse_fee({"priceMicros": 100_000_000, "period": "1", "tickAlignment": "MonthBoundary"}), ACTIVATED, DEACTIVATED
)


class Store:
    """Our Kubernetes port, for one Subscription (the functions use ``infra.kube`` over HTTP)."""

    def __init__(self) -> None:
        self.sub: dict[str, Any] = {
            "metadata": {
                "namespace": "shop",
                "name": "s",
                "uid": "u-1",
                "resourceVersion": "7",
                "deletionTimestamp": "2026-03-05T10:30:00Z",
                "finalizers": [FINALIZER],
            },
            "status": {"activatedAt": "2026-01-10T00:00:00Z", "deactivatedAt": "2026-03-05T10:30:00Z"},
        }

    def get_object(self, *_: Any) -> dict[str, Any]:
        return self.sub

    def patch_object(self, *_: Any, **__: Any) -> dict[str, Any]:
        patch = _[5]
        self.sub["metadata"]["finalizers"] = patch["metadata"]["finalizers"]
        return self.sub


def finalize_fee_through(db: Database, last: datetime) -> None:
    charge_row(db, last, "fee")


def test_the_finalizer_waits_for_the_snapped_last_tick(db: Database) -> None:
    store = Store()
    item = plan_of(ACTIVATED, DEACTIVATED, schedule=SCHEDULE)
    assert SCHEDULE.snapped_end == datetime(2026, 4, 1, tzinfo=UTC)
    finalize_fee_through(db, datetime(2026, 3, 5, 11, tzinfo=UTC))  # past the deactivation hour
    now = datetime(2026, 3, 5, 12, 5, tzinfo=UTC)
    assert not release_finalizer(db, store, "c", store.sub, item, now, error=None)  # type: ignore[arg-type]
    assert store.sub["metadata"]["finalizers"] == [FINALIZER]
    finalize_fee_through(db, datetime(2026, 3, 31, 23, tzinfo=UTC))  # the hour ending on April 1st
    assert release_finalizer(db, store, "c", store.sub, item, now + timedelta(days=27), error=None)  # type: ignore[arg-type]
    assert store.sub["metadata"]["finalizers"] == []


# -- each release condition on its own -----------------------------------------------------------
# An hourly fee (ActivatedAt, at whole hours since activation at midnight) and a cpuHour meter:
# deactivated at 10:30, the fee snaps to 11:00, so its last tick is in the hour 10:00-11:00, which
# is also the deactivation hour. Unless a case says otherwise, everything is settled: both sources
# final through 10:00, minPeriods (2) long passed, no error, no concurrent change.
HOURLY = FeeSchedule(
    parse_fee({"priceMicros": 1_000_000, "period": "1h", "tickAlignment": "ActivatedAt", "minPeriods": 2}),
    ACTIVATED,
    DEACTIVATED,
)
LAST_HOUR = datetime(2026, 3, 5, 10, tzinfo=UTC)
SETTLED_AT = datetime(2026, 3, 5, 12, 5, tzinfo=UTC)


class ConflictingStore(Store):
    """The Subscription changed between our read and our patch: the API server answers 409."""

    def patch_object(self, *_: Any, **__: Any) -> dict[str, Any]:
        raise Conflict("the object has been modified; please apply your changes to the latest version")


def finalize_through(db: Database, source: str, last: datetime) -> None:
    finalize_fee_through(db, datetime(2026, 1, 10, tzinfo=UTC))  # the versions the charge rows refer to
    charge_row(db, last, source)


def release(db: Database, store: Store, *, schedule: FeeSchedule = HOURLY, error: str | None = None) -> bool:
    item = plan_of(ACTIVATED, DEACTIVATED, schedule=schedule, meters=("cpuHour",))
    return release_finalizer(db, store, "c", store.sub, item, SETTLED_AT, error=error)  # type: ignore[arg-type]


def test_the_finalizer_is_released_when_every_condition_holds(db: Database, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="usecases.collect_charges.status")
    store = Store()
    finalize_through(db, "fee", LAST_HOUR)
    finalize_through(db, "cpuHour", LAST_HOUR)  # exactly the deactivation hour is enough
    assert release(db, store)
    assert store.sub["metadata"]["finalizers"] == []
    assert "Removed finalizer for deleted subscription" in caplog.messages


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("error", "Charges errored this run, keeping finalizer"),
        ("min-periods", "MinPeriods not yet satisfied, keeping finalizer"),
        ("usage-not-final", "Charges not finalized through deactivation hour, keeping finalizer"),
        ("usage-never-charged", "Charges not finalized through deactivation hour, keeping finalizer"),
        ("fee-not-final", "Charges not finalized through deactivation hour, keeping finalizer"),
        ("conflict", "Subscription changed meanwhile, keeping finalizer until the next run"),
        ("not-deleted", None),
        ("not-deactivated", None),
        ("finalizer-gone", None),
    ],
    ids=[
        "error",
        "min-periods",
        "usage-not-final",
        "usage-never-charged",
        "fee-not-final",
        "conflict",
        "not-deleted",
        "not-deactivated",
        "finalizer-gone",
    ],
)
def test_the_finalizer_is_kept_while_one_condition_fails(
    db: Database, caplog: pytest.LogCaptureFixture, case: str, reason: str | None
) -> None:
    caplog.set_level(logging.INFO, logger="usecases.collect_charges.status")
    store: Store = ConflictingStore() if case == "conflict" else Store()
    if case == "not-deleted":
        del store.sub["metadata"]["deletionTimestamp"]
    if case == "not-deactivated":
        del store.sub["status"]["deactivatedAt"]
    if case == "finalizer-gone":  # released by an earlier run: never patched again
        store.sub["metadata"]["finalizers"] = ["other.io/keep"]
    finalizers = list(store.sub["metadata"]["finalizers"])
    finalize_through(db, "fee", LAST_HOUR - timedelta(hours=1) if case == "fee-not-final" else LAST_HOUR)
    if case != "usage-never-charged":
        finalize_through(db, "cpuHour", LAST_HOUR - timedelta(hours=1) if case == "usage-not-final" else LAST_HOUR)
    schedule = HOURLY
    if case == "min-periods":  # far beyond the ~1,300 hourly ticks since January 10th
        fee = parse_fee({"priceMicros": 1_000_000, "period": "1h", "tickAlignment": "ActivatedAt", "minPeriods": 5000})
        schedule = FeeSchedule(fee, ACTIVATED, DEACTIVATED)
    assert not release(db, store, schedule=schedule, error="usage rows unreadable" if case == "error" else None)
    assert store.sub["metadata"]["finalizers"] == finalizers
    if reason is not None:
        assert reason in caplog.messages
    assert "Removed finalizer for deleted subscription" not in caplog.messages


class RecordingStore(Store):
    """The API server has moved on since the run read the Subscription: a newer resourceVersion
    (status writes) and another controller's finalizer. Records the calls it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.fresh = copy.deepcopy(self.sub)
        self.fresh["metadata"].update(resourceVersion="9", finalizers=["other.io/keep", FINALIZER])
        self.calls: list[tuple[Any, ...]] = []

    def get_object(self, *args: Any) -> dict[str, Any]:
        self.calls.append(("get", *args))
        return self.fresh

    def patch_object(self, *args: Any, **_: Any) -> dict[str, Any]:
        self.calls.append(("patch", *args))
        return self.fresh


def test_the_release_removes_only_our_finalizer_from_the_current_object(db: Database) -> None:
    store = RecordingStore()
    finalize_through(db, "fee", LAST_HOUR)
    finalize_through(db, "cpuHour", LAST_HOUR)
    assert release(db, store)
    assert store.calls == [
        ("get", GROUP, VERSION, "subscriptions", "shop", "s"),
        # The resourceVersion precondition: a change meanwhile is a 409, retried next run.
        (
            "patch",
            GROUP,
            VERSION,
            "subscriptions",
            "shop",
            "s",
            {"metadata": {"finalizers": ["other.io/keep"], "resourceVersion": "9"}},
        ),
    ]
