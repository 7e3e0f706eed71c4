"""The insight routes of ``cost_api``: what the dispatcher calls for each route's ``view``.

The application views take the header's identity (the dispatcher has checked it names the path's
application); the others are for the gate application, like ``cluster_views``. Both read
the Kubernetes API through the process's client (``KUBE_API_URL``, else in-cluster, else
``KUBECONFIG``), built only when one of these routes is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from infra.clients import kube_from
from infra.kube import KubeClient as Kube
from infra.postgres import Database
from infra.settings import CostApiSettings
from usecases.insights import workloads
from usecases.insights.orphans import orphaned_pods
from usecases.insights.rightsizing import rightsizing


def _kube(s: CostApiSettings) -> Callable[[], Kube]:
    return lambda: kube_from(s)


def app_rightsizing(db: Database, s: CostApiSettings, args: Mapping[str, Any], identity: tuple[str, str]) -> Any:
    return rightsizing(db, _kube(s), s.CLUSTER_ID, identity, args["days"], datetime.now(UTC))


def app_orphaned_pods(db: Database, s: CostApiSettings, args: Mapping[str, Any], identity: tuple[str, str]) -> Any:
    """The orphaned pods of the application's destination namespace."""
    days, now = args["days"], datetime.now(UTC)
    head: dict[str, Any] = {"app": {"namespace": identity[0], "name": identity[1]}, "destinationNamespace": None}
    try:
        app = workloads.application(workloads.connect(_kube(s)), *identity)
    except workloads.Unavailable as exc:
        return {**head, "available": False, "reason": exc.reason, "pods": []}
    head["destinationNamespace"] = app.destination
    if not app.local or app.destination is None:
        reason = "the application deploys to another cluster" if not app.local else "no valid destination namespace"
        return {**head, "available": False, "reason": reason, "pods": []}
    return {
        **head,
        **orphaned_pods(
            db,
            _kube(s),
            cluster=s.CLUSTER_ID,
            gate=s.CLUSTER_SCOPE_APP,
            days=days,
            now=now,
            namespace=app.destination,
        ),
    }


def cluster_orphaned_pods(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> Any:
    return orphaned_pods(
        db, _kube(s), cluster=s.CLUSTER_ID, gate=s.CLUSTER_SCOPE_APP, days=args["days"], now=datetime.now(UTC)
    )


def namespace_orphaned_pods(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> Any:
    """The namespace's (a DNS label: its declaration) orphaned pods."""
    return orphaned_pods(
        db,
        _kube(s),
        cluster=s.CLUSTER_ID,
        gate=s.CLUSTER_SCOPE_APP,
        days=args["days"],
        now=datetime.now(UTC),
        namespace=args["namespace"],
    )
