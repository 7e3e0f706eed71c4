"""We test these aspects of the Prometheus source's GPU figures against a real Prometheus (Debian's)
whose TSDB promtool built from ``sandbox.prometheus.gpu_world``, over HTTP:

- each container holding a GPU carries its ``gpuAllocation`` (how the GPU is shared, what it
  requested and used of it, which GPU and MIG profile) as computed by hand below from the world's
  definitions, in each of two hours (one pod starting mid-hour), for the four ways of sharing: a
  whole A100, a time-sliced T4, MIG slices of an H100 and HAMi fractions of an L4;
- containers without a GPU have none, and the source's GPU-hours stay request-based;
- ``gpu_devices`` lists every GPU DCGM saw, the idle A100 too, with its node, model and minutes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from finops.allocations import DEFAULT_AGGREGATION, IDLE
from finops.gpus import GpuDevice
from finops.hours import truncate_to_hour
from infra.prometheus import PrometheusClient
from infra.prometheus.source import PrometheusAllocations
from sandbox.prometheus import gpu_uuid, gpu_world
from tests.prometheus import real_prometheus

FIRST = truncate_to_hour(datetime.now(UTC)) - timedelta(hours=4)
WORLD = gpu_world(FIRST, hours=2)
HOURS = [FIRST, FIRST + timedelta(hours=1)]
A100 = "NVIDIA A100-SXM4-80GB"
H100 = "NVIDIA H100 80GB HBM3"

# By hand from gpu_world's docstring: (namespace, pod) -> sharing, request, use, model, UUID, profile.
# The T4's pods use their util / 100 (the activity DCGM puts on each is the GPU's); the L4's
# gpumem-only pod requests 5632 of the GPU's 22528 MiB.
EXPECTED: dict[tuple[str, str], tuple[str, str, str, str, str, str | None]] = {
    ("ml", "train-0"): ("whole", "1", "0.3", A100, gpu_uuid("a1", 0), None),
    ("inference", "asr-0"): ("time-sliced", "1", "0.4", "Tesla T4", gpu_uuid("74", 0), None),
    ("inference", "ocr-0"): ("time-sliced", "1", "0.2", "Tesla T4", gpu_uuid("74", 0), None),
    ("inference", "tts-0"): ("time-sliced", "1", "0.1", "Tesla T4", gpu_uuid("74", 0), None),
    ("research", "mig-small-0"): ("mig", "1", "0.5", H100, gpu_uuid("h1", 0), "1g.10gb"),
    ("research", "mig-medium-0"): ("mig", "1", "0.25", H100, gpu_uuid("h1", 0), "2g.20gb"),
    ("research", "mig-large-0"): ("mig", "1", "0.75", H100, gpu_uuid("h1", 0), "3g.40gb"),
    ("notebooks", "nb-quarter-0"): ("hami", "0.25", "0.2", "NVIDIA L4", gpu_uuid("14", 0), None),
    ("notebooks", "nb-half-0"): ("hami", "0.5", "0.35", "NVIDIA L4", gpu_uuid("14", 0), None),
    ("notebooks", "nb-mem-0"): ("hami", "0.25", "0.05", "NVIDIA L4", gpu_uuid("14", 0), None),
}
MINUTES = {("inference", "tts-0"): (30, 60)}  # from minute 30; the others both hours whole


@pytest.fixture(scope="module")
def source() -> Iterator[PrometheusAllocations]:
    with real_prometheus(WORLD) as url:
        client = PrometheusClient(url)
        try:
            yield PrometheusAllocations(client, cluster="gpus")
        finally:
            client.close()


def hour(source: PrometheusAllocations, n: int) -> dict[tuple[str, str], Any]:
    (entries,) = source.allocation(HOURS[n], HOURS[n] + timedelta(hours=1), aggregate=DEFAULT_AGGREGATION)
    return {(a["properties"]["namespace"], a["properties"]["pod"]): a for k, a in entries.items() if k != IDLE}  # type: ignore[index]


@pytest.mark.parametrize("n", [0, 1])
def test_each_scenario_says_how_its_gpu_is_shared_and_what_it_asked_and_used(
    source: PrometheusAllocations, n: int
) -> None:
    got = hour(source, n)
    assert set(got) == set(EXPECTED)
    for key, (sharing, request, usage, model, uuid, profile) in EXPECTED.items():
        entry = got[key]
        assert entry["minutes"] == MINUTES.get(key, (60, 60))[n], key
        assert entry["gpuAllocation"] == {
            "gpuRequestAverage": Decimal(request),
            "gpuUsageAverage": Decimal(usage),
            "isGPUShared": sharing in ("time-sliced", "hami"),
            "gpuDevice": "nvidia0",
            "gpuModel": model,
            "gpuUUID": uuid,
            "gpuSharing": sharing,
            "gpuProfile": profile,
        }, key
    # OpenCost's figures stay: GPUs requested as nvidia.com/gpu (a MIG slice is not one)
    assert got[("research", "mig-small-0")]["gpuHours"] == 0
    assert got[("inference", "tts-0")]["gpuHours"] == Decimal(MINUTES[("inference", "tts-0")][n]) / 60


def test_every_gpu_seen_is_in_the_inventory_used_or_not(source: PrometheusAllocations) -> None:
    for start in HOURS:
        assert source.gpu_devices(start, start + timedelta(hours=1)) == [
            GpuDevice(gpu_uuid("14", 0), "NVIDIA L4", "gpu-l4", Decimal(60)),
            GpuDevice(gpu_uuid("74", 0), "Tesla T4", "gpu-t4", Decimal(60)),
            GpuDevice(gpu_uuid("a1", 0), A100, "gpu-a100", Decimal(60)),
            GpuDevice(gpu_uuid("a1", 1), A100, "gpu-a100", Decimal(60)),  # no pod on it
            GpuDevice(gpu_uuid("h1", 0), H100, "gpu-h100", Decimal(60)),
        ]
    half = HOURS[0] + timedelta(minutes=30)  # a window of 30 minutes: the GPUs seen 30 of them
    assert {d.minutes for d in source.gpu_devices(HOURS[0], half)} == {Decimal(30)}
