"""``/allocation/summary``: the same allocations as ``/allocation``, condensed (reference §1.7).

Its figures are *the same* numbers ``/allocation`` gives for the same query: the query (window, step,
aggregate, accumulate, idle, filter) runs through :func:`sandbox.opencost.query.execute` unchanged,
and only the JSON differs:

* envelope ``{"code":200,"status":"success","data":{"step":<ns>,"sets":[{"allocations":{..},
  "window":{..}}],"window":{..}}}``; ``step`` is a Go ``time.Duration`` (nanoseconds) equal to the
  first set's length, ``window`` spans all sets (``SummaryAllocationSetRange``);
* per item, the fields of ``SummaryAllocationResponse`` in its order (``_item``); no properties, no labels;
* each ``*Cost`` includes its ``*CostAdjustment`` (OpenCost's ``NewSummaryAllocation`` folds them in),
  so ``totalCost`` is the sum of the parts, as on ``/allocation``;
* ``cpuCostIdle``/``ramCostIdle``/``gpuCostIdle`` are always 0, as in real OpenCost (opencost#3823),
  ``sharedCost``/``externalCost`` too; ``gpuRequestAverage`` is requested GPUs averaged over the
  item's minutes, and ``gpuUsageAverage`` is ``null``: GPU usage needs the DCGM exporter, which the
  sandbox does not simulate (so a client must treat it as "not measured", never as 0).

Unlike OpenCost before v1.115, the sandbox honours ``filter`` here as on ``/allocation``.

``legacy=True`` emulates the variants other OpenCost versions answer, for clients to be tested
against: each record names its efficiency ``efficiency`` (not ``totalEfficiency``), and an empty
range (no sets, or a set without allocations) has the window ``{"start":"null","end":"null"}``
with the strings ``"null"`` rather than JSON nulls.
"""

from __future__ import annotations

from sandbox.opencost.allocation import Alloc
from sandbox.opencost.rendering import Renderer, efficiency, quote

NANOS = 1_000_000_000
Sets = list[tuple[tuple[int, int], dict[str, Alloc]]]


def _item(r: Renderer, name: str, alloc: Alloc, efficiency_key: str = "totalEfficiency") -> str:
    n = r.number
    minutes = (alloc.end - alloc.start) / 60.0
    per_minute = 1.0 / minutes if minutes > 0 else 0.0
    cpu_req, cpu_use = alloc.cpu_req_cm * per_minute, alloc.cpu_use_cm * per_minute
    ram_req, ram_use = alloc.ram_req_bm * per_minute, alloc.ram_use_bm * per_minute
    cpu_cost, ram_cost = alloc.cpu_cost + alloc.cpu_adj, alloc.ram_cost + alloc.ram_adj
    cpu_ram = cpu_cost + ram_cost
    total_eff = (
        (efficiency(cpu_use, cpu_req) * cpu_cost + efficiency(ram_use, ram_req) * ram_cost) / cpu_ram
        if cpu_ram > 0
        else 0.0
    )
    fields = (
        ("name", quote(name)),
        ("start", r.time(alloc.start)),
        ("end", r.time(alloc.end)),
        ("cpuCoreRequestAverage", n(cpu_req)),
        ("cpuCoreUsageAverage", n(cpu_use)),
        ("cpuCost", n(cpu_cost)),
        ("cpuCostIdle", "0"),
        ("gpuRequestAverage", n(alloc.gpu_hours * 60.0 * per_minute)),
        ("gpuUsageAverage", "null"),
        ("gpuCost", n(alloc.gpu_cost + alloc.gpu_adj)),
        ("gpuCostIdle", "0"),
        ("networkCost", n(alloc.net_cost + alloc.net_adj)),
        ("loadBalancerCost", n(alloc.lb_cost + alloc.lb_adj)),
        ("pvCost", n(alloc.pv_cost + alloc.pv_adj)),
        ("ramByteRequestAverage", n(ram_req)),
        ("ramByteUsageAverage", n(ram_use)),
        ("ramCost", n(ram_cost)),
        ("ramCostIdle", "0"),
        ("sharedCost", "0"),
        ("externalCost", "0"),
        (efficiency_key, n(total_eff)),
        ("totalCost", n(alloc.total_cost)),
    )
    return "{" + ",".join(f'"{key}":{value}' for key, value in fields) + "}"


LEGACY_NULL_WINDOW = '{"start":"null","end":"null"}'


def render_summary(sets: Sets, *, legacy: bool = False) -> bytes:
    """OpenCost's ``SummaryAllocationSetRangeResponse`` envelope; keys sorted as Go sorts map keys
    (``legacy``: the variants of other OpenCost versions, module docstring)."""
    r = Renderer()
    rendered = []
    key_name = "efficiency" if legacy else "totalEfficiency"
    for (start, end), allocs in sets:
        items = ",".join(f"{quote(key)}:{_item(r, key, allocs[key], key_name)}" for key in sorted(allocs))
        window = LEGACY_NULL_WINDOW if legacy and not allocs else r.window(start, end)
        rendered.append(f'{{"allocations":{{{items}}},"window":{window}}}')
    if sets:
        step = (sets[0][0][1] - sets[0][0][0]) * NANOS
        window = r.window(min(w[0] for w, _ in sets), max(w[1] for w, _ in sets))
    else:
        step, window = 0, LEGACY_NULL_WINDOW if legacy else '{"start":null,"end":null}'
    data = f'{{"step":{step},"sets":[{",".join(rendered)}],"window":{window}}}'
    return ('{"code":200,"status":"success","data":' + data + "}").encode()
