"""The per-application views: the latest actual and the trend since the previous sync.

Amounts are decimal strings (two places, half-even) next to their exact integer micros. A record
measured at install is flagged, and is never the baseline of a change; a change compares records
of the same scope only (application share with application share, namespace with namespace).
``currency`` is that of the stored rows of the record's namespace over its window (a record is
measured from OpenCost and carries none of its own): ``null`` when they are unpriced, or priced in
more than one currency.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.money import format_amount
from infra.postgres import Database


def no_record(identity: tuple[str, str]) -> dict[str, Any]:
    """What ``/actual``, ``/trend`` and ``/daily`` answer (200) for an application not measured yet:
    a state of the application, not an error (the Cost tab shows it as such)."""
    return {
        "app": {"namespace": identity[0], "name": identity[1]},
        "recorded": False,
        "reason": f"no cost record for application {identity[0]}/{identity[1]} yet",
    }


def money(micros: int | None) -> dict[str, Any] | None:
    """The API's one shape of money, used by every view: exact integer micros beside the amount a
    page shows (two places, half-even); None stays None (unpriced, not 0)."""
    return None if micros is None else {"amount": format_amount(micros), "micros": micros}


def _breakdown(values: dict[str, int]) -> dict[str, str]:
    return {k: format_amount(v) for k, v in values.items()}


def currency_of(db: Database, cluster: str, namespace: str, start: datetime, end: datetime) -> str | None:
    """The one currency the namespace's stored rows over ``[start, end)`` are priced in; None when
    they are unpriced, absent, or priced in more than one."""
    rows = db.fetch_all(
        "namespace_window_currencies",
        cluster=cluster,
        aggregation=DEFAULT_AGGREGATION,
        namespace=namespace,
        start=start,
        end=end,
    )
    return str(rows[0]["currency"]) if len(rows) == 1 else None


def actual(record: dict[str, Any], currency: str | None = None) -> dict[str, Any]:
    share = record["share"]
    return {
        "app": {"namespace": record["app_namespace"], "name": record["app_name"]},
        "recorded": True,
        "cluster": record["cluster"],
        "currency": currency,
        "destinationNamespace": record["destination_namespace"],
        "scope": record["scope"],
        "measuredOn": record["measured_on"],
        "measuredAtInstall": record["measured_on"] == "install",
        "measuredAt": record["measured_at"].isoformat(),
        "revision": record["revision"],
        "window": {"start": record["window_start"].isoformat(), "end": record["window_end"].isoformat()},
        "measuredHours": str(record["measured_hours"]),
        "namespace": {**_figures(record), "podCount": record["pod_count"]},
        "application": None if share is None else {"pods": share["pods"], **_figures(share)},
    }


def _figures(measured: dict[str, Any]) -> dict[str, Any]:
    """The cost figures a record (the namespace) and its share (the application) both carry."""
    return {
        "cost": money(measured["cost_micros"]),
        "monthly": money(measured["monthly_micros"]),
        "breakdown": _breakdown(measured["breakdown"]),
        "workloadIdle": money(measured["idle_micros"]),
        "workloadIdleMonthly": money(measured["idle_monthly_micros"]),
        "efficiency": measured["efficiency"],
    }


def monthly_of(record: dict[str, Any]) -> int:
    """The record's monthly figure in its own scope."""
    if record["scope"] == "application":
        return int(record["share"]["monthly_micros"])
    return int(record["monthly_micros"])


def baseline_of(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The trend's baseline: the newest earlier *sync* record of the latest record's scope."""
    latest = records[0]
    return next((r for r in records[1:] if r["scope"] == latest["scope"] and r["measured_on"] == "sync"), None)


def trend(records: list[dict[str, Any]], currency: str | None = None) -> dict[str, Any]:
    """``records`` newest first; the baseline is the newest earlier *sync* record of the same scope."""
    latest = records[0]
    baseline = baseline_of(records)
    body: dict[str, Any] = {
        "app": {"namespace": latest["app_namespace"], "name": latest["app_name"]},
        "recorded": True,
        "scope": latest["scope"],
        "currency": currency,
        "latest": {
            "measuredAt": latest["measured_at"].isoformat(),
            "measuredOn": latest["measured_on"],
            "revision": latest["revision"],
            "monthly": money(monthly_of(latest)),
        },
        "previous": None,
        "change": None,
    }
    if baseline is not None:
        change = monthly_of(latest) - monthly_of(baseline)
        previous = monthly_of(baseline)
        body["previous"] = {
            "measuredAt": baseline["measured_at"].isoformat(),
            "revision": baseline["revision"],
            "monthly": money(previous),
        }
        body["change"] = {
            **(money(change) or {}),
            "percent": None if previous == 0 else f"{change * 100 / previous:.1f}",
        }
    return body
