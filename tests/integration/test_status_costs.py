"""We test these aspects of ``status.costs`` (``collect_charges``' ``write_costs``, in-process against
a real PostgreSQL, with charge rows written by hand) and of a run's outcome:

- a deactivated Subscription's usage run-rate is projected over the time it was active, so a
  bucket it left is projected at what it was charged; a bucket it was not active in at all is
  projected at its charges (no division by zero);
- a usage-only Offering has no ``subscription`` entry; a meter with no charge rows in a bucket
  shows zero;
- usage rows that had no rate are shown on their meter's entry (``unpricedRows``), nowhere else;
- the patch goes to the Subscription as the API server has it now (its resourceVersion as the
  precondition, its other conditions kept) and marks ``CostsResolved``;
- a run with an unpriced Subscription or unpriced usage rows is ``partial`` and says why.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from finops.hours import HOUR, Hour
from infra.postgres import Database
from tests.integration.charges import charge_row, plan_of
from usecases.collect_charges.service import ChargesResult
from usecases.collect_charges.status import read_totals, write_costs
from usecases.reconcile.objects import GROUP, VERSION

ACTIVATED = datetime(2026, 10, 10, 8, tzinfo=UTC)
DEACTIVATED = datetime(2026, 10, 14, 18, tzinfo=UTC)
PINNED = Hour(datetime(2026, 10, 15, 11, tzinfo=UTC))  # the day after the deactivation
READY = {
    "type": "Ready",
    "status": "True",
    "reason": "Active",
    "message": "",
    "lastTransitionTime": "2026-10-10T08:00:00Z",
}


class Kube:
    """Our Kubernetes port, for one Subscription: records the calls it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def patch_status(self, *args: Any) -> dict[str, Any]:
        self.calls.append(("patch_status", *args))
        return {}


def charge(db: Database, hour: datetime, source: str, micros: int, unpriced: int = 0) -> None:
    charge_row(db, hour, source, micros, unpriced)


def test_a_deactivated_usage_only_subscription_is_projected_over_its_active_time(db: Database) -> None:
    # cpuHour charged 1,000 an hour for the last 8 active hours (10:00-18:00 on the 14th), one of
    # them with 2 usage rows that had no rate; ramGbHour never charged.
    for n in range(8):
        charge(db, DEACTIVATED - (8 - n) * HOUR, "cpuHour", 1_000, unpriced=2 if n == 3 else 0)
    sub: dict[str, Any] = {
        "metadata": {"namespace": "shop", "name": "s", "uid": "u-1", "resourceVersion": "7"},
        "status": {
            "activatedAt": "2026-10-10T08:00:00Z",
            "deactivatedAt": "2026-10-14T18:00:00Z",
            "conditions": [READY],
        },
    }
    kube = Kube()
    plan = plan_of(ACTIVATED, DEACTIVATED, meters=("cpuHour", "ramGbHour"))
    totals = read_totals(db, "c", ["u-1"], PINNED)["u-1"]
    assert write_costs(kube, sub, plan, totals, PINNED, PINNED.start)  # type: ignore[arg-type]
    ((*patched, patch),) = kube.calls
    assert patched == ["patch_status", GROUP, VERSION, "subscriptions", "shop", "s"]
    # Under the resourceVersion this run last saw (a conflict if reconcile wrote meanwhile: never
    # overwritten), its conditions kept, CostsResolved added.
    assert patch["metadata"] == {"resourceVersion": "7"}
    assert patch["status"]["conditions"] == [
        READY,
        {
            "type": "CostsResolved",
            "status": "True",
            "reason": "FromDB",
            "message": "from the charge rows",
            "lastTransitionTime": "2026-10-15T11:00:00Z",
        },
    ]

    def zero(granularity: str, start: str, end: str) -> dict[str, Any]:
        # Not active in the bucket at all: projected at what it was charged there (nothing).
        return {
            "granularity": granularity,
            "start": start,
            "endExclusive": end,
            "current": 0,
            "projected": 0,
            "breakdown": [
                {"name": "cpuHour", "current": 0, "projected": 0},
                {"name": "ramGbHour", "current": 0, "projected": 0},
            ],
        }

    assert patch["status"]["costs"] == [
        zero("hour", "2026-10-15T11:00:00Z", "2026-10-15T12:00:00Z"),
        zero("day", "2026-10-15T00:00:00Z", "2026-10-16T00:00:00Z"),
        # Active Oct 10 08:00 - Oct 14 18:00, all of it before the pinned hour: projected = current
        # (not 8,000 x 520 h / 124 h, the rest of the month as if still active).
        {
            "granularity": "month",
            "start": "2026-10-01T00:00:00Z",
            "endExclusive": "2026-11-01T00:00:00Z",
            "current": 8_000,
            "projected": 8_000,
            "breakdown": [
                {"name": "cpuHour", "current": 8_000, "projected": 8_000, "unpricedRows": 2},
                {"name": "ramGbHour", "current": 0, "projected": 0},
            ],
        },
    ]
    # Unchanged costs are not written again (status writes are what an hourly run costs the API).
    sub["status"] = {**sub["status"], **patch["status"]}
    assert not write_costs(kube, sub, plan, totals, PINNED, PINNED.start)  # type: ignore[arg-type]
    assert len(kube.calls) == 1


def test_a_run_with_unpriced_subscriptions_or_usage_is_partial_and_says_why() -> None:
    assert ChargesResult(pinned_hour=PINNED).outcome == "success"
    assert ChargesResult(pinned_hour=PINNED).problems() == []
    both = ChargesResult(pinned_hour=PINNED, unpriced_rows=3, errors={"shop/s": "Offering finops/o was never seen"})
    assert both.outcome == "partial"
    assert both.problems() == [
        "shop/s: Offering finops/o was never seen",
        "3 usage row(s) had no PriceBook rate and were not charged",
    ]
    assert ChargesResult(pinned_hour=PINNED, unpriced_rows=1).outcome == "partial"
    assert ChargesResult(pinned_hour=PINNED, errors={"shop/s": "x"}).outcome == "partial"
