"""The read API's routes: one table, from which the dispatcher and the OpenAPI document are both
built, so a route cannot exist without being documented, and a parameter is parsed by the same
declaration the document states (``usecases.cost_api.params``). The document is the contract:
every answer is one of the statuses it lists, with the body it declares; a method it does not
list for a path is a 405 naming the ones it does (``Allow``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import flask

from finops.errors import PermanentError
from functions.edge import error_response
from infra.settings import CostApiSettings
from usecases.cost_api import params as p
from usecases.cost_api.params import Param


@dataclass(frozen=True)
class Route:
    template: str  # OpenAPI path, e.g. /api/v1/apps/{appNamespace}/{appName}/actual
    scope: str  # "app": the header must name the path's application; "cluster": the gate app;
    # "any": the header must name some application; "ci": CI_TOKEN's bearer, never the proxy's headers
    summary: str
    view: str  # the view's key in its scope's table (usecases.cost_api.reads, usecases.cost_api.status_views)
    query: tuple[Param, ...] = ()
    responses: dict[str, str] = field(default_factory=dict)  # further status -> description
    method: str = "get"
    no_record: bool = False  # 200 says "no record yet" for an application not measured yet

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.template)
        return re.compile(f"^{regex}/?$")

    @property
    def params(self) -> tuple[Param, ...]:
        """The path's parameters, then the query's."""
        return (*(PATH_PARAMS[name] for name in re.findall(r"\{(\w+)\}", self.template)), *self.query)


PATH_PARAMS = {param.name: param for param in (p.APP_NAMESPACE, p.APP_NAME, p.NAMESPACE)}
TRAILING_DAYS = p.days(30, 400)
INSIGHT_DAYS = p.days(7, 90, "trailing UTC days of cost")
REFUSED = "Refused: unpriced hours, or gaps in the month under require_complete (`error`, `coverage`)"
UNPRICED = "Refused: the days hold unpriced hours (`error`, `coverage`)"
ROUTES = (
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/actual",
        "app",
        "The application's latest cost record",
        "actual",
        no_record=True,
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/trend",
        "app",
        "Change since the previous sync record",
        "trend",
        no_record=True,
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/daily",
        "app",
        "Daily cost history in the application's scope, with today's partial day",
        "daily",
        (p.days(30, "DAILY_HISTORY_DAYS", "UTC days ending today"),),
        no_record=True,
    ),
    Route("/api/v1/namespaces", "cluster", "Namespaces with owner and cost", "namespaces", (TRAILING_DAYS,)),
    Route(
        "/api/v1/namespaces/{namespace}",
        "cluster",
        "A namespace's cost, owner and its applications",
        "namespace",
        (TRAILING_DAYS,),
    ),
    Route(
        "/api/v1/chargeback",
        "cluster",
        "The month's chargeback; lines add up to the bill",
        "chargeback",
        (p.MONTH_PARAM, p.BY, p.REQUIRE_COMPLETE, p.BASIS),
        {"409": REFUSED},
    ),
    Route(
        "/api/v1/budgets",
        "cluster",
        "The policy's budgets: month to date, month-end forecast (method stated) and percent of budget",
        "budgets",
        (p.MONTH_PARAM, p.BASIS),
        {"409": REFUSED + "; a month that has not started"},
    ),
    Route(
        "/api/v1/idle-ranking",
        "cluster",
        "Applications ranked by the workload idle of their own pods",
        "idle_ranking",
        (p.limit(20, 500),),
    ),
    Route(
        "/api/v1/anomalies",
        "cluster",
        "Applications ranked by the anomaly score of today's cost against their own daily history",
        "anomalies",
        (p.limit(20, 500),),
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/rightsizing",
        "app",
        "Requests suggested by the destination namespace's VerticalPodAutoscalers (updateMode Off), priced",
        "rightsizing",
        (INSIGHT_DAYS,),
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/orphaned-pods",
        "app",
        "Pods in the application's destination namespace that no Argo CD application owns, with their cost",
        "app_orphaned_pods",
        (INSIGHT_DAYS,),
    ),
    Route(
        "/api/v1/orphaned-pods",
        "cluster",
        "Pods no Argo CD application owns, in every managed namespace, with their cost",
        "orphaned_pods",
        (INSIGHT_DAYS,),
    ),
    Route(
        "/api/v1/namespaces/{namespace}/orphaned-pods",
        "cluster",
        "Pods no Argo CD application owns in one namespace, with their cost",
        "namespace_orphaned_pods",
        (INSIGHT_DAYS,),
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/cloud-estimate",
        "app",
        "The application's cloud estimates pushed by CI, with every resource",
        "cloud_estimate",
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/cloud-estimate",
        "ci",
        "Store Infracost's JSON (infracost breakdown --format json) as the application's estimate",
        "push_cloud_estimate",
        (p.SOURCE,),
        {
            "401": "Missing or wrong CI_TOKEN bearer",
            "413": "Body larger than 10 MiB",
            "415": "Body not application/json",
        },
        method="post",
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/gpus",
        "app",
        "The application's GPU-hours, GPU cost and cost per busy GPU-hour from its own stored rows",
        "app_gpus",
        (TRAILING_DAYS,),
        no_record=True,
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/carbon",
        "app",
        "The application's grams CO2e beside its cost, with the factors' source and region"
        " and the hours without emissions",
        "app_carbon",
        (TRAILING_DAYS,),
        no_record=True,
    ),
    Route(
        "/api/v1/gpus",
        "cluster",
        "GPU-hours, GPU cost and cost per busy GPU-hour per line, each GPU model's idle on its own line",
        "gpus",
        (TRAILING_DAYS, p.GPU_BY),
        {"409": UNPRICED},
    ),
    Route(
        "/api/v1/carbon",
        "cluster",
        "Grams CO2e per line beside its cost, with the factors' source and region and the hours without emissions",
        "carbon",
        (TRAILING_DAYS, p.CARBON_BY),
        {"409": UNPRICED},
    ),
    Route("/api/v1/data-quality", "any", "How complete and priced the data is; is OpenCost reachable", "data_quality"),
    Route("/api/v1/config", "any", "The non-secret settings the UI needs", "config"),
)
OPENAPI_PATH = "/api/v1/openapi.json"


def match(path: str, method: str = "get") -> tuple[Route, dict[str, str]] | None:
    for route in ROUTES:
        found = route.pattern.fullmatch(path) if route.method == method else None
        if found:
            return route, found.groupdict()
    return None


def allowed(path: str) -> list[str]:
    """The methods the document lists for ``path`` (empty: no such path); HEAD goes with GET."""
    methods = {"get"} if path.rstrip("/") in (OPENAPI_PATH, "/metrics") else set()
    methods |= {route.method for route in ROUTES if route.pattern.fullmatch(path)}
    return sorted(m.upper() for m in (methods | {"head"} if "get" in methods else methods))


class MethodNotAllowed(PermanentError):
    """The path does not answer this method (``Allow`` names those it does)."""

    http_status = 405


def method_not_allowed(method: str, methods: list[str]) -> flask.Response:
    """405 with ``Allow``: the methods the document lists for the path."""
    response = error_response(MethodNotAllowed(f"{method[:20]} is not allowed here; allowed: {', '.join(methods)}"))
    response.headers["Allow"] = ", ".join(methods)
    return response


_ERROR = {
    "type": "object",
    "required": ["outcome", "error"],
    "properties": {
        "outcome": {"const": "failed"},
        "error": {"type": "string", "description": "one line, naming the parameter or field at fault"},
        "retry": {"type": "boolean"},
        "coverage": {"type": "object", "description": "the refused period's coverage (409)"},
    },
}
_APP = {
    "type": "object",
    "required": ["namespace", "name"],
    "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}},
}
_NO_RECORD = {
    "type": "object",
    "description": "The application has no cost record yet: measured after its next sync, or by the backfill",
    "required": ["app", "recorded", "reason"],
    "properties": {"app": _APP, "recorded": {"const": False}, "reason": {"type": "string"}},
}
_RECORDED = {
    "type": "object",
    "required": ["app", "recorded"],
    "properties": {"app": _APP, "recorded": {"const": True}},
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def openapi(s: CostApiSettings | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``ROUTES`` (bounds set by settings are ``s``'s, else the defaults)."""
    security: list[dict[str, list[str]]] = [{"proxyToken": [], "argocdApplication": []}]
    paths: dict[str, Any] = {}
    for route in ROUTES:
        who = {
            "app": "Argocd-Application-Name must name this application",
            "any": "Argocd-Application-Name must name an application (any)",
            "ci": "Authorization: Bearer $CI_TOKEN only (never Argo CD's proxy headers); 404 without CI_TOKEN",
        }.get(route.scope, "Argocd-Application-Name must name the gate application (CLUSTER_SCOPE_APP)")
        ok = {"oneOf": [_RECORDED, _NO_RECORD]} if route.no_record else {"type": "object"}
        paths.setdefault(route.template, {})[route.method] = {
            "summary": route.summary,
            "description": who,
            "operationId": route.view,
            "parameters": [param.document(s) for param in route.params],
            "security": [{"ciToken": []}] if route.scope == "ci" else security,
            **({"requestBody": {"required": True, "content": {"application/json": {}}}} if route.scope == "ci" else {}),
            "responses": {
                "200": _json(ok, "OK" + (", or no record yet (`recorded` false)" if route.no_record else "")),
                "400": _json(_ERROR, "Bad parameter or body (named in `error`)"),
                "403": _json(_ERROR, "Not through Argo CD's proxy, or the header names another application"),
                "404": _json(_ERROR, "No such data, or the feature is not configured (named in `error`)"),
                **{status: _json(_ERROR, text) for status, text in route.responses.items()},
                "503": _json(_ERROR, "A dependency is unavailable (`retry` true, `Retry-After`)"),
            },
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "finops cost_api", "version": "1"},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "proxyToken": {"type": "apiKey", "in": "header", "name": "X-Finops-Proxy-Token"},
                "argocdApplication": {"type": "apiKey", "in": "header", "name": "Argocd-Application-Name"},
                "ciToken": {"type": "http", "scheme": "bearer", "description": "CI_TOKEN"},
            }
        },
    }
