"""``GET /metrics``: cost and health for Prometheus, served by ``cost_api`` beside the proxy routes.

This route never trusts Argo CD's proxy headers: it is answered before them, and only for
``Authorization: Bearer $METRICS_TOKEN`` (compared in constant time). Argo CD's proxy strips
``Authorization`` from what it forwards, so a request through the UI extension (or one forging the
proxy's headers) cannot read it. Without ``METRICS_TOKEN`` the route is 404, naming the variable.

Each scrape exposes one collector holding what its queries returned: nothing is kept between
scrapes, so no replica holds state of its own. The queries run first; a database error is a 503
(Prometheus's ``up`` is 0), never a partial page.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

import flask
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import NotFound
from functions.edge import require_bearer
from infra.clients import database_from
from infra.postgres import Database
from infra.settings import CostApiSettings, current_secret
from usecases.cost_api.app_metrics import application_families
from usecases.cost_api.budget_views import budget_families
from usecases.cost_api.metric_families import cost_families, health_families, last_complete_hour
from usecases.cost_api.resource_metrics import emission_families, gpu_families

PATH = "/metrics"


class _Families(Collector):
    """The families of one scrape, already read."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def scrape(request: flask.Request, s: CostApiSettings) -> flask.Response:
    """The exposition (Prometheus's text format); 404 when ``METRICS_TOKEN`` is not configured,
    401 without its bearer token."""
    token = current_secret(s, "METRICS_TOKEN")
    if not token:
        raise NotFound("metrics are not enabled: set METRICS_TOKEN (the bearer token Prometheus sends)")
    require_bearer(request, token)
    exposition = generate_latest(_Families(families(database_from(s), s)))
    response = flask.Response(exposition, status=200, content_type=CONTENT_TYPE_LATEST)
    response.headers["Cache-Control"] = "no-store"
    return response


def families(db: Database, s: CostApiSettings) -> list[Metric]:
    """Every family of one scrape, read from ``db``, and how long reading them took."""
    started = time.monotonic()
    cluster = s.CLUSTER_ID
    hour = last_complete_hour(db, cluster, DEFAULT_AGGREGATION)
    found: list[Metric] = [
        *cost_families(db, cluster, DEFAULT_AGGREGATION, hour),
        *gpu_families(db, cluster, DEFAULT_AGGREGATION, hour),
        *emission_families(db, cluster, DEFAULT_AGGREGATION, hour),
        *application_families(db, cluster, DEFAULT_AGGREGATION, hour),
        *health_families(db, cluster, DEFAULT_AGGREGATION),
        *budget_families(db, s),
    ]
    duration = GaugeMetricFamily(
        "finops_metrics_scrape_duration_seconds",
        "How long this scrape's queries took (present whenever the exporter answers for the cluster)",
        labels=["cluster"],
    )
    duration.add_metric([cluster], time.monotonic() - started)
    return [*found, duration]
