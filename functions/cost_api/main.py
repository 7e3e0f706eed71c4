"""``cost_api``: reads for the Argo CD UI extension, behind Argo CD's proxy extension.

Authorization follows the proxy's contract: Argo CD checks that the user may see the application
named in ``Argocd-Application-Name`` (``namespace:name``) but not that the path refers to it, and
anything in the cluster could forge that header. So every request must carry the secret header
the proxy injects (``PROXY_TOKEN``); every ``/apps/{namespace}/{name}/...`` route requires the
header to name that same application, and data is looked up by the header's identity, never the
path's; cluster-wide routes require it to name the gate application (``CLUSTER_SCOPE_APP``).
Anything else is 403 with no data. ``GET /api/v1/openapi.json`` documents every route.
``GET /metrics`` (``functions/cost_api/metrics.py``) is for Prometheus, not the UI: it is answered
before any of this, for ``METRICS_TOKEN``'s bearer only, and never reads the proxy's headers.
So is CI's ``POST /api/v1/apps/{namespace}/{name}/cloud-estimate`` (``estimates.py``), for
``CI_TOKEN``'s bearer only. ``/api/v1/data-quality`` and ``/api/v1/config`` (``status_views.py``)
need the header to name an application, any one.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import flask
import functions_framework

from finops.errors import NotFound, PermanentError
from functions.clients import database_from
from functions.cost_api import (
    anomalies,
    budget_views,
    cluster_views,
    daily_views,
    estimates,
    metrics,
    routes,
    status_views,
    views,
)
from functions.edge import current_secret, edge, respond, settings_for
from functions.insights import views as insights
from functions.runs import Run
from infra.postgres import Database
from infra.settings import CostApiSettings

FUNCTION = "cost_api"
settings = settings_for(FUNCTION, CostApiSettings)


class Forbidden(PermanentError):
    """Not allowed."""

    http_status = 403


def _identity(request: flask.Request, s: CostApiSettings) -> tuple[str, str]:
    given = request.headers.get(s.PROXY_TOKEN_HEADER, "")
    if not hmac.compare_digest(given.encode(), (current_secret(s, "PROXY_TOKEN") or "").encode()):
        raise Forbidden(f"missing or wrong {s.PROXY_TOKEN_HEADER} header (requests must come through Argo CD)")
    namespace, sep, name = request.headers.get("Argocd-Application-Name", "").partition(":")
    if not sep or not namespace or not name:
        raise Forbidden("Argocd-Application-Name must be namespace:name")
    return namespace, name


def _record_view(db: Database, s: CostApiSettings, view: str, identity: tuple[str, str]) -> Any:
    records = db.fetch_all(
        "latest_cost_actuals", cluster=s.CLUSTER_ID, app_namespace=identity[0], app_name=identity[1], limit=50
    )
    if not records:
        raise NotFound(f"no cost record for application {identity[0]}/{identity[1]} yet")
    latest, baseline = records[0], views.baseline_of(records)
    start = latest["window_start"] if view == "actual" or baseline is None else baseline["window_start"]
    currency = views.currency_of(db, s.CLUSTER_ID, latest["destination_namespace"], start, latest["window_end"])
    if view == "actual":  # with the CI-pushed cloud estimates and their age
        return {
            **views.actual(latest, currency),
            "cloudEstimates": estimates.summaries(db, s.CLUSTER_ID, identity),
            "anomaly": anomalies.of_application(db, s.CLUSTER_ID, identity, now=datetime.now(UTC)),  # read time
        }
    return views.trend(records, currency)


Identity = tuple[str, str]
Args = Mapping[str, str]

# Every route's view (``Route.view``), by the scope that authorises it. An application's views read
# by the header's identity; cluster views get the path's parameters; "any" views neither.
APP_VIEWS: dict[str, Callable[[Database, CostApiSettings, Identity, Args], Any]] = {
    "actual": lambda db, s, who, _: _record_view(db, s, "actual", who),
    "trend": lambda db, s, who, _: _record_view(db, s, "trend", who),
    "daily": lambda db, s, who, args: daily_views.daily(db, s, who, args, now=datetime.now(UTC)),
    "cloud_estimate": lambda db, s, who, _: estimates.listing(db, s.CLUSTER_ID, who),
    "rightsizing": lambda db, s, who, args: insights.app_rightsizing(db, s, args, who),
    "app_orphaned_pods": lambda db, s, who, args: insights.app_orphaned_pods(db, s, args, who),
}
CLUSTER_VIEWS: dict[str, Callable[..., Any]] = {
    "namespaces": cluster_views.namespaces,
    "namespace": cluster_views.namespace,
    "chargeback": cluster_views.chargeback,
    "budgets": budget_views.budgets,
    "idle_ranking": cluster_views.idle_ranking,
    "anomalies": anomalies.ranking,
    "orphaned_pods": insights.cluster_orphaned_pods,
    "namespace_orphaned_pods": insights.namespace_orphaned_pods,
}
ANY_VIEWS: dict[str, Callable[[CostApiSettings, Args], Any]] = {
    "data_quality": status_views.data_quality,
    "config": status_views.config,
}


@functions_framework.http
@edge(FUNCTION, settings, recorded=False, body_limit=estimates.body_limit)  # reads: errors mapped, no run records
def cost_api(request: flask.Request, s: CostApiSettings, _run: Run) -> flask.Response:
    if request.method == "POST" and (pushed := routes.match(request.path, "post")) is not None:
        # CI's cloud estimate: CI_TOKEN's bearer only; the proxy's headers are never read
        return estimates.push(request, s, pushed[1]["appNamespace"], pushed[1]["appName"])
    if request.method != "GET":
        raise PermanentError(f"{request.method} is not allowed; the API is read-only")
    if request.path.rstrip("/") == metrics.PATH:  # its own bearer token; the proxy's headers are never read
        return metrics.scrape(request, s)
    if request.path.rstrip("/") == "/api/v1/openapi.json":
        return respond(200, routes.openapi())
    found = routes.match(request.path)
    if found is None:
        raise NotFound(f"no route {request.path}")
    route, params = found
    identity = _identity(request, s)
    if route.scope == "app":
        if identity != (params["appNamespace"], params["appName"]):
            raise Forbidden("Argocd-Application-Name does not name the application in the path")
        return respond(200, APP_VIEWS[route.view](database_from(s), s, identity, request.args))
    if route.scope == "any":  # any application's header: how the data stands, no application's figures
        return respond(200, ANY_VIEWS[route.view](s, request.args))
    if s.CLUSTER_SCOPE_APP == "off" or ":".join(identity) != s.CLUSTER_SCOPE_APP:
        raise Forbidden("cluster-wide views need Argocd-Application-Name to name the gate application")
    return respond(200, CLUSTER_VIEWS[route.view](database_from(s), s, request.args, **params))
