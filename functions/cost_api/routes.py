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
    scope: str  # "app": the header must name the path's application; "cluster": the gate app
    summary: str
    view: str  # the name of the view function in views_cluster / views
    query: dict[str, str] = field(default_factory=dict)  # query parameter -> description
    responses: dict[str, str] = field(default_factory=dict)  # further status -> description

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.template)
        return re.compile(f"^{regex}/?$")


MONTH = {"month": "UTC month, e.g. 2026-10 (default: the current month)"}
ROUTES = (
    Route("/api/v1/apps/{appNamespace}/{appName}/actual", "app", "The application's latest cost record", "actual"),
    Route("/api/v1/apps/{appNamespace}/{appName}/trend", "app", "Change since the previous sync record", "trend"),
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
        "/api/v1/idle-ranking",
        "cluster",
        "Applications ranked by the workload idle of their own pods",
        "idle_ranking",
        {"limit": "default 20"},
    ),
)


def match(path: str) -> tuple[Route, dict[str, str]] | None:
    for route in ROUTES:
        found = route.pattern.fullmatch(path)
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
        who = (
            "Argocd-Application-Name must name this application"
            if route.scope == "app"
            else "Argocd-Application-Name must name the gate application (CLUSTER_SCOPE_APP)"
        )
        paths[route.template] = {
            "get": {
                "summary": route.summary,
                "description": who,
                "operationId": route.view,
                "parameters": parameters,
                "security": security,
                "responses": {
                    "200": {"description": "OK", "content": {"application/json": {}}},
                    "400": {"description": "Bad parameter (named in `error`)"},
                    "403": {"description": "Not through Argo CD's proxy, or the header names another application"},
                    "404": {"description": "No data yet"},
                    **{status: {"description": text} for status, text in route.responses.items()},
                },
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "finops cost_api", "version": "1"},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "proxyToken": {"type": "apiKey", "in": "header", "name": "X-Finops-Proxy-Token"},
                "argocdApplication": {"type": "apiKey", "in": "header", "name": "Argocd-Application-Name"},
            }
        },
    }
