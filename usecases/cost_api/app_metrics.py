"""The per-application family of ``GET /metrics``: what each Argo CD application cost in the last
complete hour, by resource, labelled to join ``argocd_app_info`` without relabelling.

``namespace`` and ``name`` are the Application's own (``argocd``/``web``), as Argo CD's
``argocd_app_info`` has them, so ``finops_application_cost_per_hour * on(namespace, name)
group_left(project) argocd_app_info`` works as it is; ``dest_namespace`` is where it deploys.

An application's rows are those of its scope as the application history defines it, in SQL, in
one place (``finops_app_allocations``, migration 013): its latest record's destination namespace
(every row there, volumes included) or, when that record is application-scoped, the rows of its own
controllers and bare pods only; ``scope`` says which. An application without a record yet, or
whose scope has no rows that hour, has no series.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric

from infra.postgres import Database
from usecases.cost_api.metric_families import money

RESOURCES = ("cpu", "ram", "gpu", "pv", "network", "lb", "shared", "external")


def application_families(db: Database, cluster: str, aggregation: str, hour: datetime | None) -> Iterator[Metric]:
    family = GaugeMetricFamily(
        "finops_application_cost_per_hour",
        "Cost of the Argo CD application in the last complete hour by resource (currency units per hour)",
        labels=["cluster", "namespace", "name", "dest_namespace", "scope", "resource", "currency"],
    )
    if hour is not None:
        rows = db.fetch_all("metrics_application_costs", cluster=cluster, aggregation=aggregation, hour=hour)
        for r in rows:
            for resource in RESOURCES:
                family.add_metric(
                    [
                        cluster,
                        r["app_namespace"],
                        r["app_name"],
                        r["destination_namespace"],
                        r["scope"],
                        resource,
                        r["currency"],
                    ],
                    money(int(r[resource])),
                )
    yield family
