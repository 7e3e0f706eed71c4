"""The GPU split as the hour is copied: ``RowBuilder.lines`` holds the GPU rows back from the
stream, and ``HourGpus.rewrite`` gives them back, at the stream's end, with their shares.

One time-sliced T4 (0.80 an hour, seen all hour) ran two pods: ``shop/a`` used a quarter of it,
``shop/b`` half. Split by use, they owe 0.20 and 0.40, and 0.20 is the T4's idle. OpenCost had
billed each 0.80 and left 0.40 of GPU in its ``__idle__`` row.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from finops.gpu_hours import GpuOptions
from finops.gpus import GpuBasis, GpuDevice
from usecases.collect_allocations.gpus import HourGpus
from usecases.collect_allocations.rows import COLUMNS, RowBuilder

HOUR = datetime(2026, 3, 2, 10, tzinfo=UTC)
T4 = GpuDevice("GPU-t4", "NVIDIA T4", "node-1", Decimal(60))
RATES = {"gpuHour": Decimal("0.80")}


def pod(name: str, *, gpu: dict[str, Any] | None = None, **costs: str) -> tuple[str, dict[str, Any]]:
    namespace, pod_name = name.split("/") if "/" in name and not name.startswith("__") else ("", name)
    allocation: dict[str, Any] = {
        "name": name,
        "properties": {"namespace": namespace, "pod": pod_name, "container": "main", "node": "node-1"},
        "minutes": Decimal(60),
        **{field: Decimal(value) for field, value in costs.items()},
    }
    if gpu is not None:
        allocation["gpuAllocation"] = gpu
    return name, allocation


def sliced(usage: str) -> dict[str, Any]:
    return {"gpuRequestAverage": Decimal(1), "gpuUsageAverage": Decimal(usage), "isGPUShared": True,
            "gpuModel": "NVIDIA T4", "gpuUUID": "GPU-t4"}  # fmt: skip


ENTRIES = [
    pod("shop/a", gpu=sliced("0.25"), cpuCost="0.20", gpuCost="0.80", gpuCount="1", totalCost="1.00"),
    pod("shop/web", cpuCost="0.30", totalCost="0.30"),
    pod("__idle__", cpuCost="0.50", gpuCost="0.40", totalCost="0.90"),
    pod("shop/b", gpu=sliced("0.5"), gpuCost="0.80", gpuCount="1", totalCost="0.80"),
]


def builder() -> RowBuilder:
    return RowBuilder(
        cluster="east",
        aggregation="namespace,pod",
        hour=HOUR,
        finalized=True,
        pricebook_id=None,
        currency="USD",
        owner_label_key="team",
        cost_center_label_key="cost-center",
        collected_at=HOUR,
        source="prometheus",
    )


def hour_gpus(rates: dict[str, Decimal] = RATES, **kwargs: Any) -> HourGpus:
    options = kwargs.pop("options", GpuOptions(GpuBasis.REQUEST))
    defaults: dict[str, Any] = {"assets": None, "devices": [T4], "figures": None, "rates": rates, "priced": True}
    return HourGpus(options, hour=HOUR, **(defaults | kwargs))


def copied(gpus: HourGpus, entries: list[tuple[str, dict[str, Any]]] = ENTRIES) -> list[dict[str, str]]:
    lines = builder().lines(iter(entries), hold=gpus.holds, then=gpus.rewrite)
    return [dict(zip(COLUMNS, line.rstrip("\n").split("\t"), strict=True)) for line in lines]


def test_the_gpu_rows_are_written_last_with_their_shares_and_totals_moved() -> None:
    gpus = hour_gpus()
    rows = copied(gpus)
    assert [row["name"] for row in rows] == ["shop/web", "__idle__", "shop/a", "shop/b"]  # held, by name
    figures = {
        row["name"]: (row["gpu_cost_micros"], row["total_cost_micros"], row["gpu_hours"], row["gpu_busy_hours"])
        for row in rows
    }
    assert figures == {
        "shop/web": ("\\N", "300000", "\\N", "\\N"),  # not a GPU row: as it came
        "__idle__": ("0", "500000", "0", "\\N"),  # the source's idle loses its GPU cost to the T4's idle row
        "shop/a": ("200000", "400000", "0.2500000000", "0.2500000000"),  # 1.00 - 0.80 + 0.20
        "shop/b": ("400000", "400000", "0.5000000000", "0.5000000000"),
    }
    assert rows[1]["gpu_count"] == "0"
    assert gpus.plan is not None and gpus.plan.idle == {"NVIDIA T4": 200_000}
    assert gpus.ledger == {"gpu_basis": "request", "gpu_mig_by": "compute"}


def test_an_hour_that_cannot_be_split_is_written_as_it_came() -> None:
    gpus = hour_gpus(rates={})  # no gpuHour rate: the T4's cost is unknown
    plain = builder().lines(iter(ENTRIES))
    assert sorted(line for line in builder().lines(iter(ENTRIES), hold=gpus.holds, then=gpus.rewrite)) == sorted(plain)
    assert gpus.plan is None and gpus.ledger == {"gpu_basis": None, "gpu_mig_by": None}


def test_prometheus_figures_replace_opencost_s_and_pick_rows_opencost_gave_no_gpu() -> None:
    # OpenCost's MIG pod carries no GPU at all; Prometheus says it holds a 3g slice of an H100.
    h100 = GpuDevice("GPU-h100", "NVIDIA H100 80GB HBM3", "node-1", Decimal(60))
    mig = {
        "gpuRequestAverage": Decimal(1),
        "gpuUsageAverage": Decimal("0.5"),
        "isGPUShared": False,
        "gpuModel": "NVIDIA H100 80GB HBM3",
        "gpuUUID": "GPU-h100",
        "gpuSharing": "mig",
        "gpuProfile": "3g.40gb",
    }
    entries = [pod("ml/train", cpuCost="0.10", totalCost="0.10"), pod("shop/web", cpuCost="0.30", totalCost="0.30")]
    gpus = hour_gpus(devices=[h100], rates={"gpuHour": Decimal("7.00")}, figures={("ml", "train", "main"): mig})
    rows = {row["name"]: row for row in copied(gpus, entries)}
    train = rows["ml/train"]
    assert (train["gpu_sharing"], train["gpu_profile"], train["gpu_uuid"]) == ("mig", "3g.40gb", "GPU-h100")
    assert (train["gpu_cost_micros"], train["total_cost_micros"]) == ("3000000", "3100000")  # 3/7 of 7.00
    assert rows["shop/web"]["gpu_cost_micros"] == "\\N"
    assert gpus.plan is not None and gpus.plan.idle == {"NVIDIA H100 80GB HBM3": 4_000_000}
