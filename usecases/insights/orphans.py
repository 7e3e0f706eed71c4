"""Orphaned pods: pods in a managed namespace that no Argo CD application owns, with their cost.

- A namespace is **managed** when it is the destination of at least one Application deploying to
  this cluster (the gate application, ``CLUSTER_SCOPE_APP``, deploys nothing and does not count).
- A pod there is **owned** when its controller chain (Pod -> ReplicaSet -> Deployment, Pod -> Job
  -> CronJob, ...) reaches a resource some Application lists in that namespace (its
  ``status.resources``, whatever the Application's own destination); otherwise it is orphaned: a
  ``kubectl run`` left behind, a workload applied by hand, a controller removed from Git whose
  objects were not pruned.
- Its **cost** is the sum of its stored allocation rows (``pod`` column) over the last ``days``
  (default 7), with the number of hours it has rows in; a pod with no rows yet costs 0.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from infra.kube import KubeClient as Kube
from infra.postgres import Database
from usecases.insights import workloads
from usecases.insights.money import money
from usecases.insights.workloads import App, Unavailable

log = logging.getLogger(__name__)


def _managed(apps: list[App], gate: str) -> dict[str, list[App]]:
    """Managed namespace -> the local applications (gate excluded)."""
    local = [a for a in apps if a.local and f"{a.namespace}:{a.name}" != gate]
    return {ns: local for ns in sorted({a.destination for a in local if a.destination})}


def _orphans_in(kube: Kube, namespace: str, apps: list[App]) -> list[dict[str, Any]]:
    ns = workloads.namespace(kube, namespace)
    listed = set().union(*(a.listed_in(namespace) for a in apps))
    owned = ns.owned_by(listed)
    found = []
    for pod in ns.pods:
        meta = pod.get("metadata") or {}
        if meta.get("name") in owned:
            continue
        top = ns.top_owner(pod)
        found.append(
            {
                "namespace": namespace,
                "pod": meta.get("name"),
                "phase": (pod.get("status") or {}).get("phase"),
                "owner": None if top is None else {"kind": top[0], "name": top[1]},
                "created": meta.get("creationTimestamp"),
            }
        )
    return found


def orphaned_pods(
    db: Database,
    kube_factory: Callable[[], Kube],
    *,
    cluster: str,
    gate: str,
    days: int,
    now: datetime,
    namespace: str | None = None,
) -> dict[str, Any]:
    """Orphaned pods of ``namespace`` (or of every managed namespace) with their cost."""
    start = now.replace(minute=0, second=0, microsecond=0) - timedelta(days=days)
    body: dict[str, Any] = {
        "cluster": cluster,
        "window": {"start": start.isoformat(), "end": now.isoformat(), "days": days},
        "available": True,
        "reason": None,
        "namespaces": [],
        "pods": [],
        "total": money(0),
    }
    try:
        kube = workloads.connect(kube_factory)
        managed = _managed(workloads.applications(kube), gate)
        wanted = [namespace] if namespace is not None else list(managed)
        body["namespaces"] = [{"namespace": ns, "managed": ns in managed} for ns in wanted]
        pods = [pod for ns in wanted if ns in managed for pod in _orphans_in(kube, ns, managed[ns])]
    except Unavailable as exc:
        log.info("orphaned pods unavailable", extra={"fields": {"reason": exc.reason}})
        return {**body, "available": False, "reason": exc.reason}
    costs = (
        {
            (r["namespace"], r["pod"]): r
            for r in db.fetch_all(
                "pod_costs",
                cluster=cluster,
                aggregation=DEFAULT_AGGREGATION,
                start=start,
                end=now,
                namespaces=sorted({p["namespace"] for p in pods}),
                pods=sorted({p["pod"] for p in pods}),
            )
        }
        if pods
        else {}
    )
    for pod in pods:
        row = costs.get((pod["namespace"], pod["pod"]))
        pod["cost"] = money(int(row["cost_micros"]) if row else 0)
        pod["hours"] = int(row["hours"]) if row else 0
        pod["currency"] = row["currency"] if row else None
    pods.sort(key=lambda p: (-p["cost"]["micros"], p["namespace"], p["pod"]))
    body["pods"] = pods
    body["total"] = money(sum(p["cost"]["micros"] for p in pods))
    return body
