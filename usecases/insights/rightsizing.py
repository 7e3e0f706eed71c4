"""``GET /api/v1/apps/{ns}/{name}/rightsizing``: advice from the destination namespace's
VerticalPodAutoscalers, priced from the stored allocation rows (``finops.rightsizing``).

1. The Application (by the header's identity) gives its destination namespace and the resources
   it lists; its controllers are those resources plus every object on the owner chains of the pods
   they own (a Rollout's ReplicaSets, a CronJob's Jobs).
2. The namespace's VPAs are listed (``available: false`` with the reason when the cluster has no
   VPA API, refuses the request, or we have no credentials); a VPA belongs to the application when
   its ``spec.targetRef`` (API group, kind, name) is one of those controllers.
3. ``updateMode: Off`` is advice: each container of its recommendation gets current (longest run
   of the stored rows), suggested, the confidence and the priced change. Any other mode (``Auto``,
   ``Recreate``, ``Initial``, ``InPlaceOrRecreate``; absent means ``Auto``) is ``managed``: the VPA
   applies its own recommendation, so no advice is given.
4. The rows of a target are those of its current pods (by name) and of its earlier pods (by the
   controller OpenCost reported), over the last ``days`` (default 7).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import InvalidInput
from finops.quantities import parse_quantity
from finops.rightsizing import RowUse, change, decimal_text, longest_run, quantity_text, suggest, unsettled
from infra.kube import KubeClient as Kube
from infra.postgres import Database
from usecases.insights import workloads
from usecases.insights.money import money
from usecases.insights.workloads import Namespace, Obj, Target, Unavailable

log = logging.getLogger(__name__)

# resource -> (row columns: request, usage, billed, cost); the VPA's key is the resource's name.
COLUMNS = {
    "cpu": ("cpu_core_request_avg", "cpu_core_usage_avg", "cpu_core_hours", "cpu_cost_micros"),
    "memory": ("ram_byte_request_avg", "ram_byte_usage_avg", "ram_byte_hours", "ram_cost_micros"),
}


def _exact(value: Any) -> Fraction | None:
    return None if value is None else Fraction(value)


def _uses(rows: list[dict[str, Any]], resource: str) -> list[RowUse]:
    request, usage, billed, cost = COLUMNS[resource]
    return [
        RowUse(
            hour=r["hour"],
            hours=Fraction(r["minutes"] or 0) / 60,
            request=_exact(r[request]),
            usage=_exact(r[usage]),
            billed=_exact(r[billed]),
            cost_micros=None if r[cost] is None else int(r[cost]),
        )
        for r in rows
    ]


def _bounds(recommendation: Mapping[str, Any], key: str, resource: str, where: str) -> Fraction | None:
    raw = (recommendation.get(key) or {}).get(resource)
    return None if raw is None else parse_quantity(f"{where}.{key}.{resource}", raw)


def _memory_limit(pods: list[Obj], container: str) -> Fraction | None:
    """The container's memory limit in the target's pods (the smallest, if they differ)."""
    limits = [
        parse_quantity(f"pod {p['metadata'].get('name')} container {container} limits.memory", limit)
        for p in pods
        for c in (p.get("spec") or {}).get("containers") or []
        if c.get("name") == container and (limit := ((c.get("resources") or {}).get("limits") or {}).get("memory"))
    ]
    return min(limits) if limits else None


def _resource(
    resource: str, target: Fraction, upper: Fraction | None, lower: Fraction | None, rows: list[RowUse]
) -> Any:
    suggested = suggest(resource, target)
    current = longest_run(rows)
    priced = change(rows, suggested)
    return {
        "current": decimal_text(current),
        "currentQuantity": None if current is None else quantity_text(resource, current),
        "target": decimal_text(target),
        "lowerBound": decimal_text(lower),
        "upperBound": decimal_text(upper),
        "suggested": decimal_text(suggested),
        "suggestedQuantity": quantity_text(resource, suggested),
        "unsettled": unsettled(target, upper),
        "change": money(priced.window_micros),
        "monthly": money(priced.monthly_micros),
        "measuredHours": decimal_text(priced.measured_hours),
        "unpricedRows": priced.unpriced_rows,
    }


def _container(recommendation: Mapping[str, Any], where: str, rows: list[dict[str, Any]], pods: list[Obj]) -> Any:
    name = str(recommendation.get("containerName", ""))
    mine = [r for r in rows if r["container"] == name]
    body: dict[str, Any] = {"container": name, "warnings": []}
    monthly = 0
    for resource in ("cpu", "memory"):
        target = _bounds(recommendation, "target", resource, where)
        if target is None:
            body[resource] = None
            continue
        upper = _bounds(recommendation, "upperBound", resource, where)
        lower = _bounds(recommendation, "lowerBound", resource, where)
        body[resource] = _resource(resource, target, upper, lower, _uses(mine, resource))
        monthly += body[resource]["monthly"]["micros"]
    limit = _memory_limit(pods, name)
    upper_memory = _bounds(recommendation, "upperBound", "memory", where)
    if limit is not None and upper_memory is not None and limit < upper_memory:
        body["warnings"].append(
            f"memory limit {quantity_text('memory', limit)} is below the VPA's upper bound "
            f"{quantity_text('memory', upper_memory)}: the container may be OOM-killed at the usage the VPA expects"
        )
    body["settled"] = not any(body[r] and body[r]["unsettled"] for r in ("cpu", "memory"))
    body["confidence"] = "normal" if body["settled"] else "low"
    body["monthly"] = money(monthly)  # the sum of the lines' monthly figures
    return body


def _advice(
    db: Database, cluster: str, vpa: Obj, target: Target, ns: Namespace, window: tuple[datetime, datetime]
) -> Any:
    meta = vpa.get("metadata") or {}
    where = f"VerticalPodAutoscaler {meta.get('name')} status.recommendation.containerRecommendations"
    recommendations = [
        r
        for r in ((vpa.get("status") or {}).get("recommendation") or {}).get("containerRecommendations") or []
        if isinstance(r, Mapping) and r.get("containerName")
    ]
    pod_names = ns.owned_by({target})
    pods = [p for p in ns.pods if p["metadata"].get("name") in pod_names]
    rows = db.fetch_all(
        "rightsizing_rows",
        cluster=cluster,
        aggregation=DEFAULT_AGGREGATION,
        start=window[0],
        end=window[1],
        namespace=ns.name,
        containers=[str(r["containerName"]) for r in recommendations],
        pods=sorted(pod_names),
        controller_kind=target[1].lower(),
        controller=target[2],
    )
    containers, warnings = [], []
    for index, recommendation in enumerate(recommendations):
        try:
            containers.append(_container(recommendation, f"{where}[{index}]", rows, pods))
        except InvalidInput as exc:  # one bad quantity skips its container, not the answer
            warnings.append(exc.message)
    currencies = sorted({r["currency"] for r in rows if r["currency"]})
    return {
        "currency": currencies[0] if len(currencies) == 1 else None,
        "containers": containers,
        "monthly": money(sum(c["monthly"]["micros"] for c in containers)),
        "warnings": warnings if recommendations else ["the VPA has no recommendation yet"],
    }


def rightsizing(
    db: Database, kube_factory: Callable[[], Kube], cluster: str, identity: tuple[str, str], days: int, now: datetime
) -> dict[str, Any]:
    end = now
    start = now.replace(minute=0, second=0, microsecond=0) - timedelta(days=days)
    body: dict[str, Any] = {
        "app": {"namespace": identity[0], "name": identity[1]},
        "cluster": cluster,
        "destinationNamespace": None,
        "window": {"start": start.isoformat(), "end": end.isoformat(), "days": days},
        "available": True,
        "reason": None,
        "vpas": [],
        "monthly": money(0),
    }
    try:
        kube = workloads.connect(kube_factory)
        app = workloads.application(kube, *identity)
        body["destinationNamespace"] = app.destination
        if not app.local:
            raise Unavailable("the application deploys to another cluster; only this cluster is measured")
        if app.destination is None:
            raise Unavailable("the application has no valid destination namespace")
        ns = workloads.namespace(kube, app.destination)
        listed = app.listed_in(app.destination)
        controllers = listed | ns.controllers_of(ns.owned_by(listed))
        found = workloads.vpas(kube, app.destination)
    except Unavailable as exc:
        log.info("rightsizing unavailable", extra={"fields": {"reason": exc.reason}})
        return {**body, "available": False, "reason": exc.reason}
    for vpa in sorted(found, key=lambda v: str(v["metadata"].get("name"))):
        ref = (vpa.get("spec") or {}).get("targetRef") or {}
        target: Target = (str(ref.get("apiVersion", "")).rpartition("/")[0], str(ref.get("kind")), str(ref.get("name")))
        if target not in controllers:
            continue  # another application's (or nobody's) workload
        mode = str(((vpa.get("spec") or {}).get("updatePolicy") or {}).get("updateMode") or "Auto")
        entry: dict[str, Any] = {
            "name": vpa["metadata"].get("name"),
            "targetRef": {"apiVersion": ref.get("apiVersion"), "kind": target[1], "name": target[2]},
            "updateMode": mode,
            "managed": mode != "Off",
        }
        if mode == "Off":
            entry.update(_advice(db, cluster, vpa, target, ns, (start, end)))
        body["vpas"].append(entry)
    body["monthly"] = money(sum(v["monthly"]["micros"] for v in body["vpas"] if not v["managed"]))
    return body
