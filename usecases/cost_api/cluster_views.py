"""The cluster-wide views: namespaces, a namespace with its applications, chargeback, idle ranking."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import InvalidInput, NotFound
from finops.money import format_amount
from infra.postgres import Database
from infra.settings import CostApiSettings
from usecases.cost_api.views import actual, days_param
from usecases.reports import service
from usecases.reports.formats import load_policy

MAX_DAYS = 400


def _window(args: Mapping[str, str]) -> dict[str, Any]:
    period = service.last_days(days_param(args, MAX_DAYS), datetime.now(UTC).date())
    return {"start": period.start.date(), "end": period.end.date(), "aggregation": DEFAULT_AGGREGATION}


def namespaces(db: Database, s: CostApiSettings, args: Mapping[str, str], **_: str) -> Any:
    rows = db.fetch_all("namespace_costs", cluster=s.CLUSTER_ID, namespace=None, **_window(args))
    return {
        "cluster": s.CLUSTER_ID,
        "days": days_param(args, MAX_DAYS),
        "namespaces": [
            {
                "namespace": r["namespace"],
                "owner": r["owner"],
                "costCenter": r["cost_center"],
                "cost": format_amount(int(r["micros"])),
            }
            for r in rows
        ],
    }


def namespace(db: Database, s: CostApiSettings, args: Mapping[str, str], namespace: str = "", **_: str) -> Any:
    rows = db.fetch_all("namespace_costs", cluster=s.CLUSTER_ID, namespace=namespace, **_window(args))
    apps = db.fetch_all("namespace_apps", cluster=s.CLUSTER_ID, namespace=namespace)
    if not rows and not apps:
        raise NotFound(f"no cost data for namespace {namespace}")
    row = rows[0] if rows else None
    return {
        "cluster": s.CLUSTER_ID,
        "namespace": namespace,
        "owner": row["owner"] if row else None,
        "costCenter": row["cost_center"] if row else None,
        "cost": format_amount(int(row["micros"])) if row else None,
        "days": days_param(args, MAX_DAYS),
        # Each app's own share; the namespace figures of these records are the namespace's, once.
        "applications": [actual(a) for a in apps],
    }


def _require_complete(args: Mapping[str, str]) -> bool:
    raw = args.get("require_complete", "false")
    if raw not in ("true", "false"):
        raise InvalidInput(f"require_complete: {raw!r} must be true or false")
    return raw == "true"


def chargeback(db: Database, s: CostApiSettings, args: Mapping[str, str], **_: str) -> Any:
    """This cluster's chargeback with its ``coverage``; an incomplete month is refused (409, with
    the coverage) under ``require_complete=true`` or the policy's ``require_complete``, and a
    month holding unpriced cost always is."""
    if not s.POLICY_PATH:
        raise NotFound("chargeback is not configured: set POLICY_PATH to the policy file")
    month = args.get("month") or datetime.now(UTC).strftime("%Y-%m")
    query = service.ReportQuery(service.month_period(month), s.CLUSTER_ID, require_complete=_require_complete(args))
    policy = load_policy(s.POLICY_PATH)
    return service.chargeback(db, policy, query, args.get("by", "team"), args.get("basis")).to_document()


def idle_ranking(db: Database, s: CostApiSettings, args: Mapping[str, str], **_: str) -> Any:
    raw = args.get("limit", "20")
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= 500:
        raise InvalidInput(f"limit: {raw!r} must be a whole number from 1 to 500")
    rows = db.fetch_all("idle_ranking", cluster=s.CLUSTER_ID, limit=int(raw))
    return {
        "cluster": s.CLUSTER_ID,
        "applications": [
            {
                "app": {"namespace": r["app_namespace"], "name": r["app_name"]},
                "destinationNamespace": r["destination_namespace"],
                "workloadIdleMonthly": format_amount(int(r["share"]["idle_monthly_micros"])),
                "monthly": format_amount(int(r["share"]["monthly_micros"])),
                "measuredAt": r["measured_at"].isoformat(),
            }
            for r in rows
        ],
    }
