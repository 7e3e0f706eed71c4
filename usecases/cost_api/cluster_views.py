"""The cluster-wide views: namespaces, a namespace with its applications, chargeback, idle ranking.

With ``FLEET_BUCKET`` set (a central ``cost_api``), the namespaces and the chargeback are every
cluster's, read from the fleet bucket (``usecases.reports.fleet``); the other views stay this
cluster's."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import InvalidInput, NotFound
from finops.money import format_amount
from infra.postgres import Database
from infra.settings import CostApiSettings
from usecases.cost_api.views import actual
from usecases.reports import fleet, service
from usecases.reports.formats import load_policy


def _window(args: Mapping[str, Any]) -> dict[str, Any]:
    period = service.last_days(args["days"], datetime.now(UTC).date())
    return {"start": period.start.date(), "end": period.end.date(), "aggregation": DEFAULT_AGGREGATION}


def namespaces(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> Any:
    if s.FLEET_BUCKET:  # a central cost_api: every cluster of the fleet bucket
        period = service.last_days(args["days"], datetime.now(UTC).date())
        found = fleet.fleet_namespaces(
            s.FLEET_BUCKET, period, endpoint_url=s.FLEET_S3_ENDPOINT_URL, field="FLEET_BUCKET"
        )
        return {"cluster": None, "fleet": True, "days": args["days"], "namespaces": found}
    rows = db.fetch_all("namespace_costs", cluster=s.CLUSTER_ID, namespace=None, **_window(args))
    return {
        "cluster": s.CLUSTER_ID,
        "days": args["days"],
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


def namespace(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> Any:
    namespace = args["namespace"]
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
        "days": args["days"],
        # Each app's own share; the namespace figures of these records are the namespace's, once.
        "applications": [actual(a) for a in apps],
    }


def chargeback(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> Any:
    """This cluster's chargeback with its ``coverage``; an incomplete month is refused (409, with
    the coverage) under ``require_complete=true`` or the policy's ``require_complete``, and a
    month holding unpriced cost always is."""
    if not s.POLICY_PATH:
        raise NotFound("chargeback is not configured: set POLICY_PATH to the policy file")
    month = args["month"] or datetime.now(UTC).strftime("%Y-%m")
    policy = load_policy(s.POLICY_PATH)
    if s.FLEET_BUCKET:  # a central cost_api: every cluster of the fleet bucket, on the estimate
        if args["basis"] not in (None, "estimate"):
            raise InvalidInput("basis: the fleet's chargeback stands on the estimate (FLEET_BUCKET is set)")
        report = fleet.fleet_chargeback(
            s.FLEET_BUCKET,
            policy,
            service.month_period(month),
            endpoint_url=s.FLEET_S3_ENDPOINT_URL,
            field="FLEET_BUCKET",
            by=args["by"],
            require_complete_period=args["require_complete"],
        )
        return report.to_document()
    query = service.ReportQuery(service.month_period(month), s.CLUSTER_ID, require_complete=args["require_complete"])
    return service.chargeback(db, policy, query, args["by"], args["basis"]).to_document()


def idle_ranking(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> Any:
    rows = db.fetch_all("idle_ranking", cluster=s.CLUSTER_ID, limit=args["limit"])
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
