"""Which hourly allocation rows are an application's own: its scope, from its latest record.

The rule lives in SQL (migration 013, ``finops_app_scopes`` and ``finops_in_app_scope``), so the
recorder, the read API and any other query select the same rows:

- **namespace** scope (the latest record has no share): every ``provider_allocations`` row of the
  destination namespace (workloads and unmounted volumes; ``__idle__`` is nobody's).
- **application** scope (the record has a share): the destination namespace's *workload* rows
  whose OpenCost controller (``<controllerKind>:<controller>``) is one of the share's
  ``selector.controllers``, or whose pod is one of its ``selector.pods`` (bare pods). The
  measurement stores the selector from the per-pod breakdown it already asks OpenCost for, so the
  history follows a Deployment across rollouts. A record measured before the selector existed
  (no ``share.selector``) selects its share's pods by name until the application's next
  measurement.

A scope's ``fingerprint`` covers its kind, destination namespace and selector: two series with
the same fingerprint were computed from the same rows, and a new fingerprint means a new series.
The application scope needs ``controller`` and ``pod`` in ``OPENCOST_AGGREGATE`` (the default has
them); with another aggregation, application-scoped series select no rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from infra.postgres import Database


@dataclass(frozen=True)
class AppScope:
    """An application's scope: whose rows (``finops_in_app_scope``) make its cost."""

    cluster: str
    app_namespace: str
    app_name: str
    destination_namespace: str
    scope: str  # "application" | "namespace"
    controllers: tuple[str, ...]  # "<controllerKind>:<controller>", as OpenCost labels the rows
    pods: tuple[str, ...]  # pods selected by name
    fingerprint: str

    @classmethod
    def of(cls, row: dict[str, Any]) -> AppScope:
        return cls(
            cluster=row["cluster"],
            app_namespace=row["app_namespace"],
            app_name=row["app_name"],
            destination_namespace=row["destination_namespace"],
            scope=row["scope"],
            controllers=tuple(row["controllers"]),
            pods=tuple(row["pods"]),
            fingerprint=row["fingerprint"],
        )

    def params(self) -> dict[str, Any]:
        """The named query parameters that select its rows (``app_scope_cost``)."""
        return {
            "namespace": self.destination_namespace,
            "scope": self.scope,
            "controllers": list(self.controllers),
            "pods": list(self.pods),
        }


def app_scope(db: Database, cluster: str, app_namespace: str, app_name: str) -> AppScope | None:
    """One application's scope; None when it has no cost record."""
    row = db.fetch_one("app_scopes", cluster=cluster, app_namespace=app_namespace, app_name=app_name)
    return None if row is None else AppScope.of(row)


def app_hourly_costs(
    db: Database, cluster: str, aggregation: str, start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """Each application's own cost per hour of ``[start, end)``: rows of ``app_namespace``,
    ``app_name``, ``scope``, ``hour``, ``micros`` (integer), ``currency`` (None: unpriced) and
    ``final`` (every row of the hour final)."""
    return db.fetch_all("app_hourly_costs", cluster=cluster, aggregation=aggregation, start=start, end=end)
