"""The cost API's reads, by the scope that authorises them (``functions.cost_api`` checks it): an
application's views read by the identity Argo CD's proxy vouched for; cluster views get the
path's parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from infra.postgres import Database
from infra.settings import CostApiSettings
from usecases.cost_api import anomalies, budget_views, cloud_estimates, cluster_views, daily_views, gpus_carbon, views
from usecases.insights import views as insights


def _record_view(db: Database, s: CostApiSettings, view: str, identity: tuple[str, str]) -> Any:
    records = db.fetch_all(
        "latest_cost_actuals", cluster=s.CLUSTER_ID, app_namespace=identity[0], app_name=identity[1], limit=50
    )
    if not records:
        return views.no_record(identity)
    latest, baseline = records[0], views.baseline_of(records)
    start = latest["window_start"] if view == "actual" or baseline is None else baseline["window_start"]
    currency = views.currency_of(db, s.CLUSTER_ID, latest["destination_namespace"], start, latest["window_end"])
    if view == "actual":  # with the CI-pushed cloud estimates and their age
        return {
            **views.actual(latest, currency),
            "cloudEstimates": cloud_estimates.summaries(db, s.CLUSTER_ID, identity),
            "anomaly": anomalies.of_application(db, s.CLUSTER_ID, identity, now=datetime.now(UTC)),  # read time
        }
    return views.trend(records, currency)


Identity = tuple[str, str]
Args = Mapping[str, Any]  # the route's parameters, path and query, parsed by their declarations

# Every route's view (``Route.view``), by the scope that authorises it. An application's views read
# by the header's identity (the path's, checked equal); cluster views get the path's namespace in ``args``.
APP_VIEWS: dict[str, Callable[[Database, CostApiSettings, Identity, Args], Any]] = {
    "actual": lambda db, s, who, _: _record_view(db, s, "actual", who),
    "trend": lambda db, s, who, _: _record_view(db, s, "trend", who),
    "daily": lambda db, s, who, args: daily_views.daily(db, s, who, args, now=datetime.now(UTC)),
    "cloud_estimate": lambda db, s, who, _: cloud_estimates.listing(db, s.CLUSTER_ID, who),
    "rightsizing": lambda db, s, who, args: insights.app_rightsizing(db, s, args, who),
    "app_orphaned_pods": lambda db, s, who, args: insights.app_orphaned_pods(db, s, args, who),
    "app_gpus": lambda db, s, who, args: gpus_carbon.app_gpus(db, s.CLUSTER_ID, who, args),
    "app_carbon": lambda db, s, who, args: gpus_carbon.app_carbon(db, s.CLUSTER_ID, who, args),
}
CLUSTER_VIEWS: dict[str, Callable[[Database, CostApiSettings, Args], Any]] = {
    "namespaces": cluster_views.namespaces,
    "namespace": cluster_views.namespace,
    "chargeback": cluster_views.chargeback,
    "budgets": budget_views.budgets,
    "idle_ranking": cluster_views.idle_ranking,
    "anomalies": anomalies.ranking,
    "orphaned_pods": insights.cluster_orphaned_pods,
    "namespace_orphaned_pods": insights.namespace_orphaned_pods,
    "gpus": lambda db, s, args: gpus_carbon.cluster_gpus(db, s.CLUSTER_ID, args),
    "carbon": lambda db, s, args: gpus_carbon.cluster_carbon(db, s.CLUSTER_ID, args),
}
