"""``cost_api``: reads for the Argo CD UI extension, behind Argo CD's proxy extension.

Authorization follows the proxy's contract: Argo CD checks that the user may see the application
named in ``Argocd-Application-Name`` (``namespace:name``) but not that the path refers to it, and
anything in the cluster could forge that header. So every request must carry the secret header
the proxy injects (``PROXY_TOKEN``); every ``/apps/{namespace}/{name}/...`` route requires the
header to name that same application, and data is looked up by the header's identity, never the
path's; cluster-wide routes require it to name the gate application (``CLUSTER_SCOPE_APP``).
Anything else is 403 with no data. ``GET /api/v1/openapi.json`` documents every route.
"""

from __future__ import annotations

import hmac
from typing import Any

import flask
import functions_framework

from finops.errors import NotFound, PermanentError
from functions.cost_api import cluster_views, routes, views
from functions.edge import current_secret, database_from, edge, respond, settings_for
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


def _app_view(db: Database, s: CostApiSettings, view: str, identity: tuple[str, str]) -> Any:
    records = db.fetch_all(
        "latest_cost_actuals", cluster=s.CLUSTER_ID, app_namespace=identity[0], app_name=identity[1], limit=50
    )
    if not records:
        raise NotFound(f"no cost record for application {identity[0]}/{identity[1]} yet")
    return views.actual(records[0]) if view == "actual" else views.trend(records)


@functions_framework.http
@edge(FUNCTION, settings, recorded=False)  # reads: errors mapped (409 with coverage), no run records
def cost_api(request: flask.Request, s: CostApiSettings, _run: Run) -> flask.Response:
    if request.method != "GET":
        raise PermanentError(f"{request.method} is not allowed; the API is read-only")
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
        return respond(200, _app_view(database_from(s), s, route.view, identity))
    if s.CLUSTER_SCOPE_APP == "off" or ":".join(identity) != s.CLUSTER_SCOPE_APP:
        raise Forbidden("cluster-wide views need Argocd-Application-Name to name the gate application")
    view = getattr(cluster_views, route.view)
    return respond(200, view(database_from(s), s, request.args, **params))


def warm_up() -> None:
    """Cold start: validate settings, open the pool and migrate."""
    database_from(settings())
