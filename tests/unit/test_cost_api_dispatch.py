"""Every route of ``cost_api``'s table has a view in the dispatch table of its scope, and every
view is reachable by a route: a route cannot be documented but unserved, nor a view dead."""

from __future__ import annotations

from functions.cost_api import routes
from usecases.cost_api import reads, status_views

TABLES = {"app": reads.APP_VIEWS, "cluster": reads.CLUSTER_VIEWS, "any": status_views.ANY_VIEWS}


def test_every_get_route_has_a_view_in_its_scopes_table() -> None:
    for route in routes.ROUTES:
        if route.scope == "ci":  # CI's push: served by estimates.push before any view
            continue
        assert route.view in TABLES[route.scope], f"{route.template}: no {route.scope} view {route.view!r}"


def test_every_view_is_reached_by_a_route() -> None:
    routed = {(route.scope, route.view) for route in routes.ROUTES}
    for scope, table in TABLES.items():
        for view in table:
            assert (scope, view) in routed, f"{scope} view {view!r} has no route"
