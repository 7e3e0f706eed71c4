"""One ``/allocation`` query end to end: parameters → step sets → idle → filter → aggregate → JSON.

Idle follows OpenCost's ``AggregateBy`` order literally. Per step set, in this order:

1. compute raw per-container allocations for the whole cluster (never pre-filtered);
2. with ``includeIdle=true``: idle per resource = node capacity cost - Σ allocated cost (may be < 0);
3. with ``shareIdle=true`` too: each allocation gets ``idle_r * cost_r / Σ cost_r`` added to its
   cpu/gpu/ram cost, coefficients taken over the *unfiltered* cluster, so a team's figure does not
   change when you filter; idle of a resource nobody uses (e.g. GPU) stays in ``__idle__``;
4. ``filter`` drops allocations; unshared idle is then scaled to the filtered share of each resource
   (OpenCost's "idle filtration coefficients"), so ``namespace:"a"`` shows only a's part of idle;
5. aggregate, and add one merged ``__idle__`` (properties ``{"cluster": ...}``, only cpu/gpu/ram cost).

Then ``accumulate`` merges sets (``true``: all of them; ``hour``/``day``/``week``: per bucket).
``shareIdle`` without ``includeIdle`` has no effect, as the reference infers for OpenCost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sandbox.opencost.aggregation import aggregate, parse_aggregate
from sandbox.opencost.allocation import IDLE, Alloc, Properties
from sandbox.opencost.filters import Filter, parse_filter
from sandbox.opencost.model import Cluster
from sandbox.opencost.rendering import Renderer, quote
from sandbox.opencost.windows import (
    HOUR,
    accumulate_bucket,
    floor,
    parse_accumulate,
    parse_bool,
    parse_step,
    parse_window,
    step_windows,
)


@dataclass(frozen=True, slots=True)
class Query:
    start: int
    end: int
    step: int
    accumulate: str
    aggregate: tuple[str, ...] | None
    include_idle: bool
    share_idle: bool
    keep_labels: bool
    filter: Filter | None

    def cache_key(self, cluster: Cluster, now: int) -> tuple[Any, ...]:
        """Everything the answer depends on, with relative windows already resolved to instants."""
        lo, hi = cluster.data_range(now)
        anchor = floor(now, HOUR) if cluster.has_relative_times else 0
        return (
            self.start,
            self.end,
            self.step,
            self.accumulate,
            self.aggregate,
            self.include_idle,
            self.share_idle,
            self.keep_labels,
            self.filter.canonical if self.filter else None,
            max(lo, self.start),
            min(hi, self.end),
            anchor,
        )


def parse_query(args: Mapping[str, str], now: int) -> Query:
    """Validate the documented parameters (raises ``QueryError``); unknown parameters are ignored."""
    start, end = parse_window(args.get("window"), now)
    include_idle = parse_bool(args.get("includeIdle"))
    return Query(
        start=start,
        end=end,
        step=parse_step(args.get("step"), start, end),
        accumulate=parse_accumulate(args.get("accumulate")),
        aggregate=parse_aggregate(args.get("aggregate")),
        include_idle=include_idle,
        share_idle=include_idle and parse_bool(args.get("shareIdle")),
        keep_labels=parse_bool(args.get("includeAggregatedMetadata")),
        filter=parse_filter(args.get("filter")),
    )


def _idle(cluster: Cluster, allocs: list[Alloc], win: tuple[int, int], lo: int, hi: int) -> Alloc:
    cpu, gpu, ram = cluster.capacity_costs(lo, hi)
    idle = Alloc(IDLE, Properties(cluster=cluster.name), win[0], win[1], lo, hi)
    idle.cpu_cost = cpu - sum(a.cpu_cost for a in allocs)
    idle.gpu_cost = gpu - sum(a.gpu_cost for a in allocs)
    idle.ram_cost = ram - sum(a.ram_cost for a in allocs)
    return idle


def _step_set(cluster: Cluster, q: Query, win: tuple[int, int], now: int) -> dict[str, Alloc]:
    data_lo, data_hi = cluster.data_range(now)
    lo, hi = max(win[0], data_lo), min(win[1], data_hi)
    if lo >= hi:
        return {}
    allocs = cluster.compute(win, lo, hi, floor(now, HOUR))
    idle: Alloc | None = None
    if q.include_idle:
        idle = _idle(cluster, allocs, win, lo, hi)
        totals = {
            "cpu": sum(a.cpu_cost for a in allocs),
            "gpu": sum(a.gpu_cost for a in allocs),
            "ram": sum(a.ram_cost for a in allocs),
        }
    kept = [a for a in allocs if q.filter.matches(a.props)] if q.filter else allocs
    if idle is not None and q.share_idle:
        coefficients = {r: (getattr(idle, f"{r}_cost") / t if t > 0 else 0.0) for r, t in totals.items()}
        for a in kept:
            a.cpu_cost += a.cpu_cost * coefficients["cpu"]
            a.gpu_cost += a.gpu_cost * coefficients["gpu"]
            a.ram_cost += a.ram_cost * coefficients["ram"]
        for r, total in totals.items():  # undistributable idle (nobody has cost for r) stays in __idle__
            if not (getattr(idle, f"{r}_cost") > 0 and total == 0):
                setattr(idle, f"{r}_cost", 0.0)
        if not (idle.cpu_cost or idle.gpu_cost or idle.ram_cost) or (q.filter and not q.filter.matches(idle.props)):
            idle = None
    elif idle is not None and q.filter is not None:
        for r, total in totals.items():
            kept_cost = sum(getattr(a, f"{r}_cost") for a in kept)
            setattr(idle, f"{r}_cost", getattr(idle, f"{r}_cost") * (kept_cost / total if total > 0 else 0.0))
    out = aggregate(kept, q.aggregate, q.keep_labels)
    if idle is not None:
        out[IDLE] = idle
    return out


def _accumulate(
    sets: list[tuple[tuple[int, int], dict[str, Alloc]]], option: str, keep_labels: bool
) -> list[tuple[tuple[int, int], dict[str, Alloc]]]:
    if option == "none" or not sets:
        return sets
    grouped: dict[int, list[tuple[tuple[int, int], dict[str, Alloc]]]] = {}
    for item in sets:
        grouped.setdefault(accumulate_bucket(item[0][0], option), []).append(item)
    out = []
    for members in grouped.values():
        win = (members[0][0][0], members[-1][0][1])
        merged: dict[str, Alloc] = {}
        for _, allocs in members:
            for key, alloc in allocs.items():
                if key in merged:
                    merged[key].merge(alloc, keep_labels)
                else:
                    merged[key] = alloc
        for alloc in merged.values():
            alloc.win_start, alloc.win_end = win
        out.append((win, merged))
    return out


def execute(cluster: Cluster, q: Query, now: int) -> list[tuple[tuple[int, int], dict[str, Alloc]]]:
    """The step sets (window, allocations by key) this query answers with."""
    sets = [(win, _step_set(cluster, q, win, now)) for win in step_windows(q.start, q.end, q.step)]
    return _accumulate(sets, q.accumulate, q.keep_labels)


def render(sets: list[tuple[tuple[int, int], dict[str, Alloc]]]) -> bytes:
    """OpenCost's success envelope; keys sorted as Go's encoding/json sorts map keys."""
    renderer = Renderer()
    data = (
        "{" + ",".join(f"{quote(key)}:{renderer.alloc(allocs[key])}" for key in sorted(allocs)) + "}"
        for _, allocs in sets
    )
    return ('{"code":200,"status":"success","data":[' + ",".join(data) + "]}").encode()


def error_body(code: int, message: str) -> bytes:
    """OpenCost's error envelope: ``{"code": 400, "message": "Error: ..."}``."""
    return json.dumps({"code": code, "message": f"Error: {message}"}, separators=(",", ":")).encode()
