"""Measuring an application's cost: monthly projection, workload idle, and figures of a pod set.

- **Monthly** figures are projected from the period OpenCost actually measured, never from the
  window asked for and never by a fixed 30: ``monthly = cost x 720 / measured_hours``. $5 over
  24 h is $150 a month; a namespace that existed 6 h and cost $1 is $120 a month.
- **Workload idle** of a pod, per resource: ``cost x (request - usage) / request``; zero when the
  pod uses at least its request. OpenCost's per-pod costs and averages already cover only the
  minutes the pod ran, so the figure is minute-weighted by construction. This is not OpenCost's
  ``__idle__`` (node capacity nobody was billed for); the two are kept apart.
- Everything in money is integer micros; ratios are Decimal; rounding is half-even, once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

HOURS_PER_MONTH = 720
RESOURCES = ("cpu", "ram", "gpu", "pv", "network", "lb")
# OpenCost names an Argo Rollout's pods after their ReplicaSet (``web-6d9f8c7b5``): the
# ReplicaSet's pod-template hash is dropped so the key names the Rollout across its revisions.
_TEMPLATE_HASH = re.compile(r"-[0-9a-z]{1,10}$")


def controller_key(kind: str | None, name: str | None) -> str | None:
    """A pod's controller as the application selector names it: ``<controllerKind>:<controller>``
    (``deployment:web``; ``rollout:web`` for the ReplicaSet ``web-6d9f8c7b5`` of a Rollout); None
    for a bare pod. SQL's ``finops_in_app_scope`` (migration 013) applies the same rule to rows."""
    if not name:
        return None
    if kind == "rollout":
        name = _TEMPLATE_HASH.sub("", name)
    return f"{kind or ''}:{name}"


def monthly(cost_micros: int, measured_hours: Decimal) -> int:
    """``cost x 720 / measured_hours`` in micros (0 when nothing was measured)."""
    if measured_hours <= 0:
        return 0
    return round(Decimal(cost_micros) * HOURS_PER_MONTH / measured_hours)


def _idle_fraction(request: Decimal | None, usage: Decimal | None) -> Decimal:
    if not request or request <= 0 or usage is None or usage >= request:
        return Decimal(0)
    return (request - max(usage, Decimal(0))) / request


@dataclass(frozen=True)
class PodCost:
    """One pod over the measured window, as OpenCost reported it (costs in micros)."""

    pod: str
    minutes: Decimal
    costs: Mapping[str, int]  # micros per resource in RESOURCES
    total_micros: int
    cpu_request: Decimal | None = None
    cpu_usage: Decimal | None = None
    ram_request: Decimal | None = None
    ram_usage: Decimal | None = None
    controller: str | None = None  # ``controller_key`` of OpenCost's properties; None for a bare pod

    @property
    def idle(self) -> Decimal:
        """Workload idle in (fractional) micros: CPU and RAM held but not used."""
        cpu = self.costs.get("cpu", 0) * _idle_fraction(self.cpu_request, self.cpu_usage)
        ram = self.costs.get("ram", 0) * _idle_fraction(self.ram_request, self.ram_usage)
        return cpu + ram


@dataclass(frozen=True)
class Figures:
    """The figures of a set of pods: cost, breakdown, workload idle and efficiency."""

    cost_micros: int
    breakdown: dict[str, int]
    idle_micros: int
    cpu_efficiency: Decimal | None
    ram_efficiency: Decimal | None
    pods: list[str] = field(default_factory=list)
    controllers: list[str] = field(default_factory=list)  # OpenCost controllers of the pods
    bare_pods: list[str] = field(default_factory=list)  # the pods without a controller

    def as_document(self, measured_hours: Decimal) -> dict[str, object]:
        """The share document. ``selector`` says which hourly allocation rows are the application's
        (its pods' controllers, and its bare pods by name), so its history survives pod churn."""
        return {
            "pods": self.pods,
            "selector": {"controllers": self.controllers, "pods": self.bare_pods},
            "cost_micros": self.cost_micros,
            "monthly_micros": monthly(self.cost_micros, measured_hours),
            "breakdown": self.breakdown,
            "idle_micros": self.idle_micros,
            "idle_monthly_micros": monthly(self.idle_micros, measured_hours),
            "efficiency": efficiency_document(self.cpu_efficiency, self.ram_efficiency, self.breakdown),
        }


def _ratio(used: Decimal, requested: Decimal) -> Decimal | None:
    return (used / requested).quantize(Decimal("0.0001")) if requested > 0 else None


def figures_of(pods: Iterable[PodCost]) -> Figures:
    """Sum a pod set. Efficiency is usage over request, weighted by the minutes each pod ran."""
    chosen = list(pods)
    breakdown = {r: sum(p.costs.get(r, 0) for p in chosen) for r in RESOURCES}
    idle = round(sum((p.idle for p in chosen), Decimal(0)))

    def weighted(attr_request: str, attr_usage: str) -> Decimal | None:
        req = sum(((getattr(p, attr_request) or 0) * p.minutes for p in chosen), Decimal(0))
        use = sum(((getattr(p, attr_usage) or 0) * p.minutes for p in chosen), Decimal(0))
        return _ratio(use, req)

    return Figures(
        cost_micros=sum(p.total_micros for p in chosen),
        breakdown=breakdown,
        idle_micros=idle,
        cpu_efficiency=weighted("cpu_request", "cpu_usage"),
        ram_efficiency=weighted("ram_request", "ram_usage"),
        pods=sorted(p.pod for p in chosen),
        controllers=sorted({p.controller for p in chosen if p.controller}),
        bare_pods=sorted(p.pod for p in chosen if not p.controller),
    )


def efficiency_document(
    cpu: Decimal | None, ram: Decimal | None, breakdown: Mapping[str, int]
) -> dict[str, str | None]:
    """CPU, RAM and cost-weighted total efficiency as decimal strings (None: not measured)."""
    total: Decimal | None = None
    weights = [(cpu, breakdown.get("cpu", 0)), (ram, breakdown.get("ram", 0))]
    measured = [(e, w) for e, w in weights if e is not None and w > 0]
    if measured:
        weighted = sum((e * w for e, w in measured), Decimal(0)) / sum(w for _, w in measured)
        total = weighted.quantize(Decimal("0.0001"))
    return {k: None if v is None else str(v) for k, v in (("cpu", cpu), ("ram", ram), ("total", total))}
