"""``cost_api``: reads for the Argo CD UI extension, behind Argo CD's proxy extension.

Authorization follows the proxy's contract: Argo CD checks that the user may see the application
named in ``Argocd-Application-Name`` (``namespace:name``) but not that the path refers to it, and
anything in the cluster could forge that header. So every request must carry the secret header
the proxy injects (``PROXY_TOKEN``); every ``/apps/{namespace}/{name}/...`` route requires the
header to name that same application, and data is looked up by the header's identity, never the
path's; cluster-wide routes require it to name the gate application (``CLUSTER_SCOPE_APP``).
Anything else is 403 with no data. ``GET /api/v1/openapi.json`` documents every route, and is the
contract: parameters are parsed by its declarations, other methods are 405.
``GET /metrics`` (``functions/cost_api/metrics.py``) is for Prometheus, not the UI: it is answered
before any of this, for ``METRICS_TOKEN``'s bearer only, and never reads the proxy's headers.
So is CI's ``POST /api/v1/apps/{namespace}/{name}/cloud-estimate`` (``estimates.py``), for
``CI_TOKEN``'s bearer only. ``/api/v1/data-quality`` and ``/api/v1/config`` (``usecases.cost_api.status_views``)
need the header to name an application, any one.
"""

from __future__ import annotations

import hmac

import flask

from finops.errors import NotFound, PermanentError
from functions.cost_api import estimates, metrics, routes
from functions.edge import edge, respond, settings_for
from infra.clients import database_from
from infra.settings import CostApiSettings, current_secret
from usecases.cost_api.params import parse_all
from usecases.cost_api.reads import APP_VIEWS, CLUSTER_VIEWS
from usecases.cost_api.status_views import ANY_VIEWS
from usecases.runs import Run

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


@edge(FUNCTION, settings, recorded=False, body_limit=estimates.body_limit)  # reads: errors mapped, no run records
def cost_api(request: flask.Request, s: CostApiSettings, _run: Run) -> flask.Response:
    methods = routes.allowed(request.path)
    if not methods:
        raise NotFound(f"no route {request.path}")
    if request.method not in methods:  # the document's methods only: 405 naming them
        return routes.method_not_allowed(request.method, methods)
    if request.method == "POST" and (pushed := routes.match(request.path, "post")) is not None:
        # CI's cloud estimate: CI_TOKEN's bearer only; the proxy's headers are never read
        return estimates.push(request, s, pushed[1]["appNamespace"], pushed[1]["appName"])
    if request.path.rstrip("/") == metrics.PATH:  # its own bearer token; the proxy's headers are never read
        return metrics.scrape(request, s)
    if request.path.rstrip("/") == routes.OPENAPI_PATH:
        return respond(200, routes.openapi(s))
    route, path = routes.match(request.path) or (None, {})
    assert route is not None  # allowed() found a GET route for the path
    identity = _identity(request, s)
    args = parse_all(route.params, {**request.args.to_dict(), **path}, s)  # by the document's declarations
    if route.scope == "app":
        if identity != (args["appNamespace"], args["appName"]):
            raise Forbidden("Argocd-Application-Name does not name the application in the path")
        return respond(200, APP_VIEWS[route.view](database_from(s), s, identity, args))
    if route.scope == "any":  # any application's header: how the data stands, no application's figures
        return respond(200, ANY_VIEWS[route.view](database_from(s), s, args))
    if s.CLUSTER_SCOPE_APP == "off" or ":".join(identity) != s.CLUSTER_SCOPE_APP:
        raise Forbidden("cluster-wide views need Argocd-Application-Name to name the gate application")
    return respond(200, CLUSTER_VIEWS[route.view](database_from(s), s, args))
