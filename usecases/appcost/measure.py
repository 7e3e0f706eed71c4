"""One measurement of an application's destination namespace, and storing it.

Three OpenCost queries run in parallel over the last 24 h: the namespace's cost (must succeed),
its efficiency summary and its per-pod breakdown (either may fail with a warning, leaving its
fields empty: "not measured", never 0). The application's share is the pods its listed
controllers own, found by walking ownerReferences in the Kubernetes API. Namespace scope (the
record's columns) and application scope (the ``share`` document) are never mixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from finops.errors import FinOpsError, TemporaryError
from finops.measurement import Figures, PodCost, controller_key, efficiency_document, figures_of, monthly
from finops.money import cost_micros
from finops.ownership import Ref, owned_pods
from infra.opencost import Allocation, OpenCostClient

WINDOW = timedelta(hours=24)


class NoData(TemporaryError):
    """OpenCost has no data for the namespace yet."""


class KubeLister(Protocol):
    def list_objects(
        self, group: str, version: str, plural: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...


@dataclass
class Measurement:
    namespace: str
    measured_at: datetime
    window_start: datetime
    window_end: datetime
    measured_hours: Decimal
    namespace_figures: Figures
    idle_measured: bool
    efficiency: dict[str, str | None] | None
    pod_count: int | None
    pods: list[PodCost] | None = None
    share: Figures | None = None
    warnings: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The ``cost_actuals`` columns (without identity and provenance)."""
        hours = self.measured_hours
        ns = self.namespace_figures
        return {
            "destination_namespace": self.namespace,
            "scope": "application" if self.share is not None else "namespace",
            "measured_at": self.measured_at,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "measured_hours": hours,
            "cost_micros": ns.cost_micros,
            "monthly_micros": monthly(ns.cost_micros, hours),
            "breakdown": ns.breakdown,
            "idle_micros": ns.idle_micros if self.idle_measured else None,
            "idle_monthly_micros": monthly(ns.idle_micros, hours) if self.idle_measured else None,
            "efficiency": self.efficiency,
            "pod_count": self.pod_count,
            "share": self.share.as_document(hours) if self.share is not None else None,
        }


def _breakdown(a: Allocation) -> dict[str, int]:
    """Micros per resource; a cost OpenCost could not measure counts as none here."""
    return {
        "cpu": cost_micros(a.get("cpuCost"), a.get("cpuCostAdjustment")) or 0,
        "ram": cost_micros(a.get("ramCost"), a.get("ramCostAdjustment")) or 0,
        "gpu": cost_micros(a.get("gpuCost"), a.get("gpuCostAdjustment")) or 0,
        "pv": cost_micros(a.get("pvCost"), a.get("pvCostAdjustment")) or 0,
        "network": cost_micros(a.get("networkCost"), a.get("networkCostAdjustment")) or 0,
        "lb": cost_micros(a.get("loadBalancerCost"), a.get("loadBalancerCostAdjustment")) or 0,
    }


def _total(a: Allocation) -> int:
    """OpenCost's ``totalCost`` is authoritative; the parts only when it is missing."""
    total = cost_micros(a.get("totalCost"))
    return total if total is not None else sum(_breakdown(a).values())


def pod_cost(a: Allocation) -> PodCost:
    props = a.get("properties") or {}
    return PodCost(
        pod=str(props.get("pod") or a.get("name", "")),
        minutes=a.get("minutes") or Decimal(0),
        costs=_breakdown(a),
        total_micros=_total(a),
        cpu_request=a.get("cpuCoreRequestAverage"),
        cpu_usage=a.get("cpuCoreUsageAverage"),
        ram_request=a.get("ramByteRequestAverage"),
        ram_usage=a.get("ramByteUsageAverage"),
        controller=controller_key(props.get("controllerKind"), props.get("controller")),
    )


def _ratio(used: Decimal | None, requested: Decimal | None) -> Decimal | None:
    if used is None or not requested or requested <= 0:
        return None
    return (used / requested).quantize(Decimal("0.0001"))


def measure_namespace(opencost: OpenCostClient, namespace: str, *, now: datetime) -> Measurement:
    """Measure ``namespace`` over ``[now - 24h, now)`` (namespace scope; see ``with_share``)."""
    start, end = now - WINDOW, now
    ns_filter = [namespace]
    with ThreadPoolExecutor(3, thread_name_prefix="measure") as pool:
        cost_f = pool.submit(
            opencost.allocation, start, end, aggregate="namespace", accumulate=True, namespaces=ns_filter
        )
        summary_f = pool.submit(
            opencost.allocation_summary, start, end, aggregate="namespace", accumulate=True, namespaces=ns_filter
        )
        pods_f = pool.submit(
            opencost.allocation, start, end, aggregate="namespace,pod", accumulate=True, namespaces=ns_filter
        )
    sets = cost_f.result()  # must succeed: raises OpenCostUnavailable
    # Old OpenCost ignores ``filter`` and answers every namespace: pick ours by key.
    entry = (sets[0] if sets else {}).get(namespace)
    minutes = (entry or {}).get("minutes") or Decimal(0)
    if entry is None or minutes <= 0:
        raise NoData(f"OpenCost has no data for namespace {namespace} in the last 24 h yet")
    warnings: list[str] = []

    efficiency = None
    try:
        summary = (summary_f.result() or [{}])[0].get(namespace)
        if summary is not None:
            cpu = _ratio(summary.get("cpuCoreUsageAverage"), summary.get("cpuCoreRequestAverage"))
            ram = _ratio(summary.get("ramByteUsageAverage"), summary.get("ramByteRequestAverage"))
            efficiency = efficiency_document(cpu, ram, _breakdown(entry))
            total = summary.get("totalEfficiency")
            if total is not None:
                efficiency["total"] = str(total.quantize(Decimal("0.0001")))
    except FinOpsError as exc:
        warnings.append(f"efficiency not measured: {exc.message}")

    pods: list[PodCost] | None = None
    try:
        pods = [
            pod_cost(a)
            for a in (pods_f.result() or [{}])[0].values()
            if (a.get("properties") or {}).get("namespace") == namespace and (a.get("properties") or {}).get("pod")
        ]
    except FinOpsError as exc:
        warnings.append(f"per-pod breakdown not measured: {exc.message}")

    whole = figures_of(pods or [])
    namespace_figures = Figures(
        cost_micros=_total(entry),
        breakdown=_breakdown(entry),
        idle_micros=whole.idle_micros,
        cpu_efficiency=whole.cpu_efficiency,
        ram_efficiency=whole.ram_efficiency,
    )
    return Measurement(
        namespace=namespace,
        measured_at=now,
        window_start=start,
        window_end=end,
        measured_hours=Decimal(minutes) / 60,
        namespace_figures=namespace_figures,
        idle_measured=pods is not None,
        efficiency=efficiency,
        pod_count=len(pods) if pods is not None else None,
        pods=pods,
        warnings=warnings,
    )


def with_share(measurement: Measurement, kube: KubeLister, resources: Sequence[Ref]) -> Measurement:
    """The measurement with the application's share: the pods its listed controllers own.
    Without resources (or without the per-pod breakdown) the record stays namespace-scoped."""
    if not resources:
        return replace(measurement, share=None)
    if measurement.pods is None:
        return replace(
            measurement,
            share=None,
            warnings=[*measurement.warnings, "application share not measured: the per-pod breakdown failed"],
        )
    owned = _owned(kube, measurement.namespace, resources)
    return replace(measurement, share=figures_of(p for p in measurement.pods if p.pod in owned))


def _owned(kube: KubeLister, namespace: str, resources: Sequence[Ref]) -> set[str]:
    pods = kube.list_objects("", "v1", "pods", namespace=namespace)
    owners = [
        *kube.list_objects("apps", "v1", "replicasets", namespace=namespace),
        *kube.list_objects("batch", "v1", "jobs", namespace=namespace),
    ]
    return owned_pods(resources, pods, owners)
