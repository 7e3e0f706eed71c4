"""``GET /api/v1/apps/{appNamespace}/{appName}/daily``: an application's daily cost history.

The series is served in the scope of the application's latest record (``application`` or
``namespace``; ``usecases.app_history.scope``), and only days recorded in that same scope are
read, so a series is never mixed even while the recorder is rebuilding it. One entry per UTC day
of the range, oldest first, without gaps:

- a recorded day: its stored sum, ``final: true``;
- a day before the series' first day with cost (known to have none): 0, ``hours: 0``, final;
- a day not recorded (yet): 0, ``hours: 0``, ``final: false`` (its hours are not all final, or
  the recorder has not reached it);
- today, last: the partial day, summed at read time from today's stored hours (open or final)
  in the same scope, ``final: false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.hours import midnight
from infra.postgres import Database
from infra.settings import CostApiSettings
from usecases.app_history.scope import app_scope
from usecases.cost_api.views import money, no_record


def daily(
    db: Database, s: CostApiSettings, identity: tuple[str, str], args: Mapping[str, Any], *, now: datetime
) -> dict[str, Any]:
    """The last ``days`` UTC days of the application named by ``identity`` (the header's)."""
    count = int(args["days"])
    app_namespace, app_name = identity
    scope = app_scope(db, s.CLUSTER_ID, app_namespace, app_name)
    if scope is None:
        return no_record(identity)
    today = now.astimezone(UTC).date()
    first = today - timedelta(days=count - 1)
    who: dict[str, Any] = {"cluster": s.CLUSTER_ID, "app_namespace": app_namespace, "app_name": app_name}
    recorded = db.fetch_one("app_daily_scope", **who)
    current = recorded is not None and recorded["fingerprint"] == scope.fingerprint
    aggregation = recorded["aggregation"] if recorded is not None else DEFAULT_AGGREGATION
    known_empty_before = recorded["first_day"] if current and recorded is not None else None
    stored = {
        row["day"]: row
        for row in db.fetch_all("app_daily_series", **who, start=first, end=today, fingerprint=scope.fingerprint)
    }
    partial = db.fetch_one(
        "app_scope_cost",
        cluster=s.CLUSTER_ID,
        aggregation=aggregation,
        start=midnight(today),
        end=midnight(today + timedelta(days=1)),
        **scope.params(),
    )
    assert partial is not None  # an aggregate always answers one row
    days: list[dict[str, Any]] = []
    currencies: set[str] = set()
    total = 0
    for offset in range(count):
        day = first + timedelta(days=offset)
        if day == today:
            micros, hours, final, currency = int(partial["micros"]), int(partial["hours"]), False, partial["currency"]
        elif day in stored:
            row = stored[day]
            micros, hours, final, currency = int(row["total_cost_micros"]), int(row["hours"]), True, row["currency"]
        else:
            micros, hours, currency = 0, 0, None
            final = known_empty_before is not None and day < known_empty_before
        if currency is not None and hours:
            currencies.add(str(currency).strip())
        total += micros
        days.append({"day": day.isoformat(), "cost": money(micros), "final": final, "hours": hours})
    return {
        "app": {"namespace": app_namespace, "name": app_name},
        "recorded": True,
        "scope": scope.scope,
        "destinationNamespace": scope.destination_namespace,
        "currency": currencies.pop() if len(currencies) == 1 else None,
        "days": days,
        "total": money(total),
        "from": first.isoformat(),
        "to": today.isoformat(),
    }
