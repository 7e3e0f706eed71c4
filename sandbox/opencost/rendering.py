"""An Allocation's JSON form, as OpenCost writes it.

The form follows ``AllocationJSON`` (allocation_json.go): fields in its order, floats rounded to
5 decimals, NaN/Inf as ``null``, whole numbers written without a fraction as Go does.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sandbox.opencost.allocation import Alloc
from sandbox.opencost.windows import rfc3339

_FIELDS = (
    "name",
    "properties",
    "window",
    "start",
    "end",
    "minutes",
    "cpuCores",
    "cpuCoreRequestAverage",
    "cpuCoreUsageAverage",
    "cpuCoreHours",
    "cpuCost",
    "cpuCostAdjustment",
    "cpuCostIdle",
    "cpuEfficiency",
    "gpuCount",
    "gpuHours",
    "gpuCost",
    "gpuCostAdjustment",
    "gpuCostIdle",
    "networkTransferBytes",
    "networkReceiveBytes",
    "networkCost",
    "networkCrossZoneCost",
    "networkCrossRegionCost",
    "networkInternetCost",
    "networkCostAdjustment",
    "loadBalancerCost",
    "loadBalancerCostAdjustment",
    "pvBytes",
    "pvByteHours",
    "pvCost",
    "pvs",
    "pvCostAdjustment",
    "ramBytes",
    "ramByteRequestAverage",
    "ramByteUsageAverage",
    "ramByteHours",
    "ramCost",
    "ramCostAdjustment",
    "ramCostIdle",
    "ramEfficiency",
    "externalCost",
    "sharedCost",
    "totalCost",
    "totalEfficiency",
    "rawAllocationOnly",
    "proportionalAssetResourceCosts",
    "lbAllocations",
    "sharedCostBreakdown",
    "gpuAllocation",
)
_TEMPLATE = "{" + ",".join(f'"{field}":%s' for field in _FIELDS) + "}"


_SAFE = re.compile(r'[^"\\\x00-\x1f]*')


def quote(text: str) -> str:
    """A JSON string literal; the fast path covers Kubernetes names (no quotes, backslashes or controls)."""
    return f'"{text}"' if _SAFE.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def num(value: float) -> float | int | None:
    """Round like OpenCost's ``formatFloat64ForResponse`` (5 decimals, NaN/Inf as null), integral as int."""
    if not math.isfinite(value):
        return None
    rounded = round(value, 5)
    whole = int(rounded)
    return whole if whole == rounded else rounded


def efficiency(usage: float, request: float) -> float:
    """OpenCost's CPU/RAM efficiency: usage / request, 1.0 for usage without a request."""
    if request > 0:
        return usage / request
    return 1.0 if usage > 0 else 0.0


class Renderer:
    """Writes allocations as OpenCost's JSON text, memoising numbers, instants and properties.

    Why text templates instead of ``json.dumps`` of dicts: a 20,000-container hour is ~1M numbers, and
    the per-key work of the generic encoder dominated the response time; replicas share most values.
    """

    def __init__(self) -> None:
        self._numbers: dict[float, str] = {}
        self._times: dict[int, str] = {}
        self._windows: dict[tuple[int, int], str] = {}

    def number(self, value: float) -> str:
        text = self._numbers.get(value)
        if text is None:
            text = self._numbers[value] = json.dumps(num(value))
        return text

    def time(self, ts: int) -> str:
        text = self._times.get(ts)
        if text is None:
            text = self._times[ts] = f'"{rfc3339(ts)}"'
        return text

    def window(self, start: int, end: int) -> str:
        text = self._windows.get((start, end))
        if text is None:
            text = self._windows[(start, end)] = f'{{"start":{self.time(start)},"end":{self.time(end)}}}'
        return text

    def alloc(self, alloc: Alloc) -> str:
        get, slow = self._numbers.get, self.number

        def n(value: float) -> str:
            return get(value) or slow(value)

        minutes = (alloc.end - alloc.start) / 60.0
        hours = minutes / 60.0
        per_hour = 1.0 / hours if hours > 0 else 0.0
        per_minute = 1.0 / minutes if minutes > 0 else 0.0
        cpu_req = alloc.cpu_req_cm * per_minute
        cpu_use = alloc.cpu_use_cm * per_minute
        ram_req = alloc.ram_req_bm * per_minute
        ram_use = alloc.ram_use_bm * per_minute
        cpu_eff = efficiency(cpu_use, cpu_req)
        ram_eff = efficiency(ram_use, ram_req)
        pv_byte_hours = alloc.pv_byte_hours
        cpu_total, ram_total = alloc.cpu_cost + alloc.cpu_adj, alloc.ram_cost + alloc.ram_adj
        cpu_ram = cpu_total + ram_total
        total_eff = (cpu_eff * cpu_total + ram_eff * ram_total) / cpu_ram if cpu_ram > 0 else 0.0
        net_cost = n(alloc.net_cost)
        raw = alloc.raw
        return _TEMPLATE % (
            quote(alloc.name),
            alloc.props.to_json_text(),
            self.window(alloc.win_start, alloc.win_end),
            self.time(alloc.start),
            self.time(alloc.end),
            n(minutes),
            n(alloc.cpu_core_hours * per_hour),
            n(cpu_req),
            n(cpu_use),
            n(alloc.cpu_core_hours),
            n(alloc.cpu_cost),
            n(alloc.cpu_adj),
            "0",
            n(cpu_eff),
            n(alloc.gpu_hours * per_hour),
            n(alloc.gpu_hours),
            n(alloc.gpu_cost),
            n(alloc.gpu_adj),
            "0",
            n(alloc.net_tx),
            n(alloc.net_rx),
            net_cost,
            net_cost,
            "0",
            "0",
            n(alloc.net_adj),
            n(alloc.lb_cost),
            n(alloc.lb_adj),
            n(pv_byte_hours * per_hour),
            n(pv_byte_hours),
            n(alloc.pv_cost),
            self._pvs(alloc.pvs),
            n(alloc.pv_adj),
            n(alloc.ram_byte_hours * per_hour),
            n(ram_req),
            n(ram_use),
            n(alloc.ram_byte_hours),
            n(alloc.ram_cost),
            n(alloc.ram_adj),
            "0",
            n(ram_eff),
            "0",
            "0",
            n(alloc.total_cost),
            n(total_eff),
            f'{{"cpuCoreUsageMax":{n(raw[0])},"ramByteUsageMax":{n(raw[1])}}}' if raw else "null",
            "{}",
            self._lbs(alloc.lbs),
            "{}",
            self._gpu(alloc.gpu, per_minute),
        )

    def _gpu(self, gpu: list[Any] | None, per_minute: float) -> str:
        if gpu is None:
            return "null"
        request, usage, shared, index, model, uuid = gpu
        return json.dumps(
            {
                "gpuDevice": f"nvidia{index}",
                "gpuModel": model,
                "gpuUUID": uuid,
                "isGPUShared": shared,
                "gpuUsageAverage": num(usage * per_minute),
                "gpuRequestAverage": num(request * per_minute),
            }
        )

    def _pvs(self, pvs: dict[str, list[Any]] | None) -> str:
        if not pvs:
            return "null"
        items = (
            f'{json.dumps(key)}:{{"byteHours":{self.number(pv[0])},"cost":{self.number(pv[1])},'
            f'"providerID":{json.dumps(pv[2])}}}'
            for key, pv in sorted(pvs.items())
        )
        return "{" + ",".join(items) + "}"

    def _lbs(self, lbs: dict[str, list[Any]] | None) -> str:
        if not lbs:
            return "null"
        items = (
            f'{json.dumps(key)}:{{"service":{json.dumps(lb[0])},"cost":{self.number(lb[1])},'
            f'"private":{json.dumps(lb[2])},"ip":{json.dumps(lb[3])},"hours":{self.number(lb[4])}}}'
            for key, lb in sorted(lbs.items())
        )
        return "{" + ",".join(items) + "}"
