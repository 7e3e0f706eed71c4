"""We test these aspects of what the Prometheus source says of GPUs (no I/O: a fake query port
answers each query by name, with series labelled as kube-state-metrics and dcgm-exporter label them):

- how a container's GPU is shared: HAMi's gpucores or gpumem, a MIG slice (kube-state-metrics'
  resource, or DCGM's ``GPU_I_PROFILE`` alone), time-sliced replicas (the renamed resource, or a
  node labelled ``nvidia.com/gpu.replicas`` above 1), else a whole GPU; HAMi without either is not
  HAMi; a container without a GPU has no ``gpuAllocation``;
- what it requested (averaged over its minutes; HAMi's cores in hundredths, its memory over the
  GPU's framebuffer, unknown without it) and used: DCGM's engine activity of a whole GPU or a MIG
  slice (summed over its GPUs; the utilisation / 100 without it), the per-pod utilisation / 100 on
  a shared GPU, whose per-pod activity is the GPU's copied; None without any series;
- the inventory: every GPU seen, its minutes, its node the first host label naming a node, and
  refusals (no host label naming a node, no model, a replicas label or MIG resource that is not
  one) in one line naming the bad field.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import SourceMisconfigured
from finops.gpus import GpuDevice
from infra.prometheus import Sample, gpus, promql
from infra.prometheus.source import PrometheusAllocations

START = datetime(2026, 11, 20, 10, tzinfo=UTC)
END = START + timedelta(hours=1)
NAMES = {text: name for name, text in (promql.queries(3600) | promql.device_queries(3600)).items()}
UUID, OTHER = "GPU-0000aaaa", "GPU-0000bbbb"
DCGM = {"UUID": UUID, "device": "nvidia0", "modelName": "NVIDIA A100-SXM4-80GB", "gpu": "0"}


def of(pod: str, **labels: str) -> dict[str, str]:
    return {"namespace": "ml", "pod": pod, "container": "main", **labels}


def answer(**answers: list[Sample]) -> dict[str, list[Sample]]:
    """Every query of the window, empty unless given."""
    return {name: [] for name in NAMES.values()} | answers


def derive(minutes: int = 60, nodes: dict[tuple[str, str], str] | None = None, **answers: list[Sample]) -> Any:
    pods = {s.labels["pod"] for samples in answers.values() for s in samples if "pod" in s.labels}
    return {
        key[1]: value
        for key, value in gpus.allocations(
            answer(**answers), {("ml", p, "main"): Decimal(minutes) for p in pods}, nodes or {}
        ).items()
    }


def test_a_whole_gpu_is_billed_on_its_own_activity() -> None:
    (got,) = derive(
        gpu_request=[Sample(of("train"), Decimal(60))],
        gpu_active=[Sample(of("train", **DCGM), Decimal("18.000000000000004"))],  # 0.3 a minute, in float64
        gpu_util=[Sample(of("train", **DCGM), Decimal(2700))],
    ).values()
    assert got == {
        "gpuRequestAverage": Decimal(1),
        "gpuUsageAverage": Decimal("0.3"),  # the activity, not the 45% utilisation
        "isGPUShared": False,
        "gpuDevice": "nvidia0",
        "gpuModel": "NVIDIA A100-SXM4-80GB",
        "gpuUUID": UUID,
        "gpuSharing": "whole",
        "gpuProfile": None,
    }


def test_several_whole_gpus_sum_their_use_and_name_the_first() -> None:
    got = derive(
        minutes=30,
        gpu_request=[Sample(of("train"), Decimal(60))],  # two GPUs for its 30 minutes
        gpu_active=[
            Sample(of("train", **(DCGM | {"UUID": OTHER, "device": "nvidia1"})), Decimal(15)),
            Sample(of("train", **DCGM), Decimal("7.5")),
        ],
    )["train"]
    assert (got["gpuRequestAverage"], got["gpuUsageAverage"]) == (Decimal(2), Decimal("0.75"))
    assert (got["gpuUUID"], got["gpuDevice"]) == (UUID, "nvidia0")


def test_without_the_profiling_metric_the_utilisation_is_the_use() -> None:
    got = derive(gpu_request=[Sample(of("t"), Decimal(60))], gpu_util=[Sample(of("t", **DCGM), Decimal(2700))])["t"]
    assert got["gpuUsageAverage"] == Decimal("0.45")


def test_without_dcgm_the_use_and_the_gpu_are_unknown() -> None:
    got = derive(gpu_request=[Sample(of("t"), Decimal(60))])["t"]
    assert got["gpuRequestAverage"] == 1 and got["gpuSharing"] == "whole"
    assert (got["gpuUsageAverage"], got["gpuUUID"], got["gpuDevice"], got["gpuModel"]) == (None, None, None, None)


def test_time_sliced_by_the_node_label_or_the_renamed_resource_use_the_per_pod_utilisation() -> None:
    replicas = Sample({"node": "gpu-t4", promql.REPLICAS_LABEL: "4"}, Decimal(1))
    got = derive(
        nodes={("ml", "a"): "gpu-t4", ("ml", "b"): "gpu-x"},
        gpu_replicas=[replicas, Sample({"node": "gpu-y", promql.REPLICAS_LABEL: "1"}, Decimal(1))],
        gpu_request=[Sample(of("a"), Decimal(60))],
        gpu_shared_request=[Sample(of("b"), Decimal(120))],
        # the GPU's activity copied onto each pod: not theirs
        gpu_active=[Sample(of("a", **DCGM), Decimal(45)), Sample(of("b", **DCGM), Decimal(45))],
        gpu_util=[Sample(of("a", **DCGM), Decimal(2400)), Sample(of("b", **DCGM), Decimal(1200))],
    )
    assert [
        (g["gpuSharing"], g["isGPUShared"], g["gpuRequestAverage"], g["gpuUsageAverage"]) for g in got.values()
    ] == [
        ("time-sliced", True, Decimal(1), Decimal("0.4")),
        ("time-sliced", True, Decimal(2), Decimal("0.2")),
    ]


def test_one_replica_is_a_whole_gpu() -> None:
    got = derive(
        nodes={("ml", "a"): "gpu-y"},
        gpu_replicas=[Sample({"node": "gpu-y", promql.REPLICAS_LABEL: "1"}, Decimal(1))],
        gpu_request=[Sample(of("a"), Decimal(60))],
    )
    assert got["a"]["gpuSharing"] == "whole"


def test_a_mig_slice_by_its_resource_or_by_dcgm_alone() -> None:
    mig = DCGM | {"GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "1"}
    got = derive(
        gpu_mig_request=[Sample(of("small", resource="nvidia_com_mig_1g_10gb"), Decimal(60))],
        gpu_request=[Sample(of("single"), Decimal(60))],  # the single strategy: a slice as nvidia.com/gpu
        gpu_active=[Sample(of("single", **mig), Decimal(45))],
    )
    assert [(g["gpuSharing"], g["gpuProfile"], g["gpuRequestAverage"], g["gpuUsageAverage"]) for g in got.values()] == [
        ("mig", "3g.40gb", Decimal(1), Decimal("0.75")),
        ("mig", "1g.10gb", Decimal(1), None),
    ]
    assert not got["single"]["isGPUShared"]


def test_hami_requests_are_fractions_of_the_gpu() -> None:
    got = derive(
        minutes=30,
        gpu_request=[Sample(of(p), Decimal(30)) for p in ("cores", "mem", "blind", "neither")],
        gpu_cores_request=[Sample(of("cores"), Decimal(750))],  # 25 for 30 minutes
        gpu_mem_request=[Sample(of(p), Decimal(5632 * 30)) for p in ("cores", "mem", "blind")],
        gpu_framebuffer=[Sample({"UUID": UUID}, Decimal(22528))],
        gpu_util=[Sample(of(p, **DCGM), Decimal(600)) for p in ("cores", "mem", "neither")],
    )
    assert got["cores"]["gpuRequestAverage"] == Decimal("0.25")  # gpucores win over gpumem
    assert got["mem"]["gpuRequestAverage"] == Decimal("0.25")  # 5632 of 22528 MiB
    assert got["blind"]["gpuRequestAverage"] is None and got["blind"]["gpuUUID"] is None  # no DCGM: no framebuffer
    assert {g["gpuSharing"] for k, g in got.items() if k != "neither"} == {"hami"}
    assert got["cores"]["gpuUsageAverage"] == Decimal("0.2") and got["cores"]["isGPUShared"]
    assert got["neither"]["gpuSharing"] == "whole"  # neither gpucores nor gpumem: not HAMi


def test_the_source_puts_it_on_gpu_containers_only() -> None:
    class Fake:
        def query(self, text: str, at: datetime, *, retry_until: float | None = None) -> list[Sample]:
            return answers.get(NAMES[text], [])

    answers = answer(
        minutes=[Sample(of("train"), Decimal(60)), Sample(of("web"), Decimal(60))],
        gpu_request=[Sample(of("train"), Decimal(60))],
        pod_node=[Sample({"namespace": "ml", "pod": "train", "node": "n"}, Decimal(1))],
        namespace_labels=[Sample({"namespace": "ml", "label_team": "research"}, Decimal(1))],
    )
    (entries,) = PrometheusAllocations(Fake(), cluster="c").allocation(START, END, aggregate=DEFAULT_AGGREGATION)
    train, web = (
        entries["ml/__unallocated__/__unallocated__/train/main"],
        entries["ml/__unallocated__/__unallocated__/web/main"],
    )
    assert train["gpuAllocation"]["gpuSharing"] == "whole" and train["gpuCount"] == 1  # type: ignore[typeddict-item]
    assert "gpuAllocation" not in web


def devices(**answers: list[Sample]) -> list[GpuDevice]:
    nodes = [Sample({"node": n}, Decimal(3)) for n in ("gpu-a", "gpu-b")]
    return gpus.devices(answer(node_names=nodes) | answers)


def test_the_inventory_lists_every_gpu_seen_with_its_node_and_minutes() -> None:
    a = {"UUID": UUID, "modelName": "Tesla T4"}
    got = devices(
        gpu_minutes=[Sample({"UUID": OTHER}, Decimal(60)), Sample({"UUID": UUID}, Decimal(45))],
        gpu_labels=[
            Sample(a | {"Hostname": "gpu-a"}, Decimal(40)),
            Sample(a | {"hostname": "gpu-b"}, Decimal(5)),  # an upgraded exporter for 5 minutes
            Sample(
                {"UUID": OTHER, "modelName": "NVIDIA L4", "Hostname": "dcgm-exporter-x1", "node": "gpu-b"}, Decimal(60)
            ),
        ],
    )
    assert got == [
        GpuDevice(UUID, "Tesla T4", "gpu-a", Decimal(45)),
        GpuDevice(OTHER, "NVIDIA L4", "gpu-b", Decimal(60)),  # Hostname is the exporter's pod: the node label
    ]


def test_the_inventory_refuses_a_gpu_it_cannot_place() -> None:
    with pytest.raises(
        SourceMisconfigured, match=r"GPU-0000aaaa \(Hostname='dcgm-exporter-x1'\) names no node.*NODE_NAME"
    ):
        devices(
            gpu_minutes=[Sample({"UUID": UUID}, Decimal(60))],
            gpu_labels=[Sample({"UUID": UUID, "modelName": "m", "Hostname": "dcgm-exporter-x1"}, Decimal(60))],
        )
    with pytest.raises(SourceMisconfigured, match="GPU-0000aaaa has no modelName"):
        devices(
            gpu_minutes=[Sample({"UUID": UUID}, Decimal(60))],
            gpu_labels=[Sample({"UUID": UUID, "Hostname": "gpu-a"}, Decimal(60))],
        )


def test_labels_that_say_nothing_are_refused_naming_them() -> None:
    with pytest.raises(SourceMisconfigured, match="label_nvidia_com_gpu_replicas 'many' of node n is no count"):
        gpus.replicas([Sample({"node": "n", promql.REPLICAS_LABEL: "many"}, Decimal(1))])
    assert gpus.mig_profile("nvidia_com_mig_1g_10gb_me") == "1g.10gb+me"
    with pytest.raises(SourceMisconfigured, match="resource 'nvidia_com_mig_1c_2g_20gb' is not a MIG slice"):
        gpus.mig_profile("nvidia_com_mig_1c_2g_20gb")
