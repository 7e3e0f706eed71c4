"""The read API's routes: one table, from which the dispatcher and the OpenAPI document are both
built, so a route cannot exist without being documented (a test checks the document against
what is served).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Route:
    template: str  # OpenAPI path, e.g. /api/v1/apps/{appNamespace}/{appName}/actual
    scope: str  # "app": the header must name the path's application; "cluster": the gate app;
    # "any": the header must name some application; "ci": CI_TOKEN's bearer, never the proxy's headers
    summary: str
    view: str  # the view's key in its scope's table (usecases.cost_api.reads, usecases.cost_api.status_views)
    query: dict[str, str] = field(default_factory=dict)  # query parameter -> description
    responses: dict[str, str] = field(default_factory=dict)  # further status -> description
    method: str = "get"

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.template)
        return re.compile(f"^{regex}/?$")


MONTH = {"month": "UTC month, e.g. 2026-10 (default: the current month)"}
ROUTES = (
    Route("/api/v1/apps/{appNamespace}/{appName}/actual", "app", "The application's latest cost record", "actual"),
    Route("/api/v1/apps/{appNamespace}/{appName}/trend", "app", "Change since the previous sync record", "trend"),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/daily",
        "app",
        "Daily cost history in the application's scope, with today's partial day",
        "daily",
        {"days": "UTC days ending today, 1 to DAILY_HISTORY_DAYS, default 30"},
    ),
    Route(
        "/api/v1/namespaces",
        "cluster",
        "Namespaces with owner and cost",
        "namespaces",
        {"days": "trailing days, default 30"},
    ),
    Route(
        "/api/v1/namespaces/{namespace}",
        "cluster",
        "A namespace's cost, owner and its applications",
        "namespace",
        {"days": "trailing days, default 30"},
    ),
    Route(
        "/api/v1/chargeback",
        "cluster",
        "The month's chargeback; lines add up to the bill",
        "chargeback",
        {
            **MONTH,
            "by": "team | cost-center | namespace (chargeback by label)",
            "require_complete": "true: refuse (409) a month whose hours are not all final and priced",
        },
        {"409": "Refused: unpriced hours, or an incomplete month with require_complete (`error`, `coverage`)"},
    ),
    Route(
        "/api/v1/budgets",
        "cluster",
        "The policy's budgets: month to date, month-end forecast (method stated) and percent of budget",
        "budgets",
        MONTH,
        {"409": "Refused: unpriced hours, or gaps in month to date under the policy's require_complete"},
    ),
    Route(
        "/api/v1/idle-ranking",
        "cluster",
        "Applications ranked by the workload idle of their own pods",
        "idle_ranking",
        {"limit": "default 20"},
    ),
    Route(
        "/api/v1/anomalies",
        "cluster",
        "Applications ranked by the anomaly score of today's cost against their own daily history",
        "anomalies",
        {"limit": "1 to 500, default 20"},
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/rightsizing",
        "app",
        "Requests suggested by the destination namespace's VerticalPodAutoscalers (updateMode Off), priced",
        "rightsizing",
        {"days": "trailing days of stored rows priced, 1 to 90, default 7"},
    ),
    Route(
        "/api/v1/apps/{appNamespace}/{appName}/orphaned-pods",
        "app",
        "Pods in the application's destination namespace that no Argo CD application owns, with their cost",
        "app_orphaned_pods",
        {"days": "trailing days of cost, 1 to 90, default 7"},
    ),
    Route(
        "/api/v1/orphaned-pods",
        "cluster",
        "Pods no Argo CD application owns, in every managed namespace, with their cost",
        "orphaned_pods",
        {"days": "trailing days of cost, 1 to 90, default 7"},
    ),
    Route(
        "/api/v1/namespaces/{namespace}/orphaned-pods",
        "cluster",
        "Pods no Argo CD application owns in one namespace, with their cost",
        "namespace_orphaned_pods",
        {"days": "trailing days of cost, 1 to 90, default 7"},
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
        {"source": "the tool that produced the body: infracost (default)"},
        {
            "401": "Missing or wrong CI_TOKEN bearer",
            "413": "Body larger than 10 MiB",
            "415": "Body not application/json",
        },
        method="post",
    ),
    Route("/api/v1/data-quality", "any", "How complete and priced the data is; is OpenCost reachable", "data_quality"),
    Route("/api/v1/config", "any", "The non-secret settings the UI needs", "config"),
)


def match(path: str, method: str = "get") -> tuple[Route, dict[str, str]] | None:
    for route in ROUTES:
        found = route.pattern.fullmatch(path) if route.method == method else None
        if found:
            return route, found.groupdict()
    return None


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``ROUTES``."""
    security: list[dict[str, list[str]]] = [{"proxyToken": [], "argocdApplication": []}]
    paths: dict[str, Any] = {}
    for route in ROUTES:
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in re.findall(r"\{(\w+)\}", route.template)
        ]
        parameters += [
            {"name": name, "in": "query", "required": False, "schema": {"type": "string"}, "description": text}
            for name, text in route.query.items()
        ]
        who = {
            "app": "Argocd-Application-Name must name this application",
            "any": "Argocd-Application-Name must name an application (any)",
            "ci": "Authorization: Bearer $CI_TOKEN only (never Argo CD's proxy headers); 404 without CI_TOKEN",
        }.get(route.scope, "Argocd-Application-Name must name the gate application (CLUSTER_SCOPE_APP)")
        paths.setdefault(route.template, {})[route.method] = {
            "summary": route.summary,
            "description": who,
            "operationId": route.view,
            "parameters": parameters,
            "security": [{"ciToken": []}] if route.scope == "ci" else security,
            **({"requestBody": {"required": True, "content": {"application/json": {}}}} if route.scope == "ci" else {}),
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {}}},
                "400": {"description": "Bad parameter or body (named in `error`)"},
                "403": {"description": "Not through Argo CD's proxy, or the header names another application"},
                "404": {"description": "No data yet"},
                **{status: {"description": text} for status, text in route.responses.items()},
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
