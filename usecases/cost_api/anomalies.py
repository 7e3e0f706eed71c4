"""The anomaly score of ``cost_api``: attached to ``/actual`` at read time (never stored), and
ranked across the cluster by ``GET /api/v1/anomalies`` (gate application).

Both read one grouped query, ``app_anomaly_inputs`` (every application at once, or one), and
score with ``finops.anomaly``, so an application's score on its tab is the one it has in the
ranking. What is read:

- **Baseline**: the newest ``BASELINE_DAYS`` (14) days recorded by the daily history in the
  application's current scope (the series ``/daily`` serves), among the last ``LOOKBACK_DAYS``
  (28): a day not recorded yet is skipped, and a baseline older than four weeks does not describe
  the application any more. The series starts at its first day with cost: days before it are its
  destination namespace's, before the application ran there.
- **Today**: its own rows in today's hours that are ``final`` in the ledger, over that many
  hours. Not ``/daily``'s partial day, which also sums the open hour: that hour holds only the
  minutes collected so far, so counting it as a whole hour would read low all day; a final hour
  of the ledger without rows of the application counts as an hour at 0 (a job that did not run),
  as it does in a recorded day. Not the hours elapsed since midnight either: when the collector
  lags, the hours not collected yet would count as hours at 0.
- **Currencies**: a baseline and today priced in more than one currency are not compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from finops import anomaly
from finops.allocations import DEFAULT_AGGREGATION
from finops.hours import midnight
from infra.postgres import Database
from infra.settings import CostApiSettings
from usecases.cost_api.views import money

LOOKBACK_DAYS = 28  # the baseline's days are among the last four weeks


def _inputs(db: Database, cluster: str, now: datetime, identity: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    today = now.astimezone(UTC).date()
    return db.fetch_all(
        "app_anomaly_inputs",
        cluster=cluster,
        aggregation=DEFAULT_AGGREGATION,
        app_namespace=None if identity is None else identity[0],
        app_name=None if identity is None else identity[1],
        oldest=today - timedelta(days=LOOKBACK_DAYS),
        today=today,
        baseline_days=anomaly.BASELINE_DAYS,
        start=midnight(today),
        end=midnight(today + timedelta(days=1)),
    )


def _scored(row: dict[str, Any]) -> tuple[anomaly.Anomaly, str | None]:
    """The application's anomaly and its currency (None: unpriced)."""
    history = [anomaly.BaselineDay(day, int(micros)) for day, micros in zip(row["days"], row["micros"], strict=True)]
    result = anomaly.score(history, int(row["today_micros"]), int(row["today_hours"]))
    currencies = sorted({str(c).strip() for c in [*row["currencies"], *row["today_currencies"]]})
    if len(currencies) > 1 and result.score is not None:
        reason = f"the baseline and today are priced in more than one currency ({', '.join(currencies)})"
        return replace(result, score=None, reason=reason), None
    return result, currencies[0] if currencies else None


def _amount(value: Fraction | None) -> dict[str, Any] | None:
    return None if value is None else money(anomaly.round_micros(value))


def document(result: anomaly.Anomaly, currency: str | None) -> dict[str, Any]:
    """The ``anomaly`` object of ``/actual`` and of each ranked application."""
    days = result.days
    return {
        "score": None if result.score is None else anomaly.score_text(result.score),
        "anomalous": result.anomalous,
        "threshold": anomaly.score_text(anomaly.THRESHOLD),
        "reason": result.reason,
        "currency": currency,
        "runRatePerDay": _amount(result.run_rate),
        "today": {"hours": result.today_hours, "cost": money(result.today_micros)},
        "baseline": {
            "days": len(days),
            "from": days[0].day.isoformat() if days else None,
            "to": days[-1].day.isoformat() if days else None,
            "median": _amount(result.median),
            "mad": _amount(result.mad),
            "scaledMad": _amount(result.scaled_mad),
            "spread": _amount(result.spread),
        },
    }


def of_application(db: Database, cluster: str, identity: tuple[str, str], *, now: datetime) -> dict[str, Any] | None:
    """The application's ``anomaly`` object; None when it has no cost record."""
    rows = _inputs(db, cluster, now, identity)
    return document(*_scored(rows[0])) if rows else None


def ranking(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /api/v1/anomalies``: applications by score, highest first (ties by name); those
    without a score follow, by name, each with its reason; at most ``limit`` in all."""
    limit = int(args["limit"])
    scored = [(row, *_scored(row)) for row in _inputs(db, s.CLUSTER_ID, datetime.now(UTC))]
    scored.sort(
        key=lambda entry: (
            entry[1].score is None,
            -(entry[1].score or 0),
            entry[0]["app_namespace"],
            entry[0]["app_name"],
        )
    )
    return {
        "cluster": s.CLUSTER_ID,
        "threshold": anomaly.score_text(anomaly.THRESHOLD),
        "anomalous": sum(1 for _, result, _ in scored if result.anomalous),
        "scored": sum(1 for _, result, _ in scored if result.score is not None),
        "applications": [
            {
                "app": {"namespace": row["app_namespace"], "name": row["app_name"]},
                "scope": row["scope"],
                "destinationNamespace": row["destination_namespace"],
                "anomaly": document(result, currency),
            }
            for row, result, currency in scored[:limit]
        ],
    }
