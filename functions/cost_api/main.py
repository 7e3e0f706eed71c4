"""``cost_api``: reads for the Argo CD UI extension, behind Argo CD's proxy extension.

Authorization follows the proxy's contract: Argo CD checks that the user may see the application
named in ``Argocd-Application-Name`` (``namespace:name``) but not that the path refers to it, and
anything in the cluster could forge that header. So every request must carry the secret header
the proxy injects (``PROXY_TOKEN``), every ``/apps/{namespace}/{name}/...`` route requires the
header to name that same application, and data is looked up by the header's identity, never the
path's. Anything else is 403 with no data.
"""

from __future__ import annotations

import hmac
import re

import flask
import functions_framework

from finops.errors import FinOpsError, NotFound, PermanentError
from functions.cost_api import views
from functions.edge import database_from, error_response, health, respond, settings_for
from infra.settings import CostApiSettings

FUNCTION = "cost_api"
settings = settings_for(FUNCTION, CostApiSettings)

APP_ROUTE = re.compile(r"^/api/v1/apps/(?P<namespace>[^/]+)/(?P<name>[^/]+)/(?P<view>actual|trend)/?$")


class Forbidden(PermanentError):
    """Not allowed."""

    http_status = 403


def _authorise_app(request: flask.Request, s: CostApiSettings, namespace: str, name: str) -> tuple[str, str]:
    given = request.headers.get(s.PROXY_TOKEN_HEADER, "")
    if not hmac.compare_digest(given.encode(), s.PROXY_TOKEN.get_secret_value().encode()):
        raise Forbidden(f"missing or wrong {s.PROXY_TOKEN_HEADER} header (requests must come through Argo CD)")
    header = request.headers.get("Argocd-Application-Name", "")
    app_namespace, sep, app_name = header.partition(":")
    if not sep or (app_namespace, app_name) != (namespace, name):
        raise Forbidden("Argocd-Application-Name does not name the application in the path")
    return app_namespace, app_name


@functions_framework.http
def cost_api(request: flask.Request) -> flask.Response:
    if (healthy := health(request)) is not None:
        return healthy
    s = settings()
    try:
        if request.method != "GET":
            raise PermanentError(f"{request.method} is not allowed; the API is read-only")
        match = APP_ROUTE.match(request.path)
        if match is None:
            raise NotFound(f"no route {request.path}")
        app_namespace, app_name = _authorise_app(request, s, match["namespace"], match["name"])
        records = database_from(s).fetch_all(
            "latest_cost_actuals", cluster=s.CLUSTER_ID, app_namespace=app_namespace, app_name=app_name, limit=50
        )
        if not records:
            raise NotFound(f"no cost record for application {app_namespace}/{app_name} yet")
        body = views.actual(records[0]) if match["view"] == "actual" else views.trend(records)
        return respond(200, body)
    except FinOpsError as exc:
        return error_response(exc)


def warm_up() -> None:
    """Cold start: validate settings, open the pool and migrate."""
    database_from(settings())
