"""We test these aspects of planning an hour of a cluster's GPUs (``finops.gpu_hours``), with no
I/O, on hours small enough to compute by hand (each GPU costs 7,000,000 or 8,000,000 micros, so
sevenths and eighths of it are whole):

- a node's whole GPUs are one pool: a row's request and use are shares of the pool, and the
  GPUs nobody holds are that model's idle, in cost and GPU-hours;
- a shared GPU (time-sliced, HAMi, MIG) is split on its own, by UUID, with the node's next GPU
  when the inventory gives no UUIDs (OpenCost's assets);
- a MIG slice is its share of the GPU by compute (of 7) or by memory (of 8, the GPU's memory read
  from its model's name), and its use is a share of its slice;
- a row that ran part of the GPU's time holds that part of its request and use;
- rows and idle add up to the GPUs' cost exactly, and GPU-hours to the GPUs' hours;
- a row that cannot be placed (its node has no GPU; a whole GPU where every GPU is shared; a MIG
  row without profile; slicing by memory a model that does not say its memory) is refused,
  naming it.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from finops.errors import InvalidInput
from finops.gpu_hours import GpuOptions, GpuRow, HourGpu, from_devices, plan, scaled_adjustment
from finops.gpus import GpuBasis, GpuDevice, MigBy, Sharing

H100 = "NVIDIA H100 80GB HBM3"


def row(
    name: str,
    node: str,
    sharing: Sharing = Sharing.WHOLE,
    *,
    request: str = "1",
    usage: str | None = None,
    uuid: str | None = None,
    profile: str | None = None,
    minutes: int = 60,
    model: str | None = None,
) -> GpuRow:
    return GpuRow(
        name,
        node,
        Decimal(minutes),
        sharing,
        profile,
        Decimal(request),
        None if usage is None else Decimal(usage),
        model,
        uuid,
    )


def gpu(node: str, cost: int = 7_000_000, uuid: str | None = None, model: str | None = "A100") -> HourGpu:
    return HourGpu(node, uuid, model, cost)


def test_whole_gpus_are_a_pool_per_node_and_the_rest_is_idle() -> None:
    gpus = [gpu("a"), gpu("a")]  # 14,000,000 for the pool of two
    rows = [row("train", "a", usage="0.5")]
    request = plan(rows, gpus, GpuOptions(GpuBasis.REQUEST))
    assert (request.owed, request.idle) == ({"train": 7_000_000}, {"A100": 7_000_000})
    assert (request.hours, request.idle_hours) == ({"train": Decimal(1)}, {"A100": Decimal(1)})
    usage = plan(rows, gpus, GpuOptions(GpuBasis.USAGE))
    assert (usage.owed, usage.idle) == ({"train": 3_500_000}, {"A100": 10_500_000})
    assert (usage.hours, usage.idle_hours) == ({"train": Decimal("0.5")}, {"A100": Decimal("1.5")})


def test_a_row_that_ran_half_the_hour_holds_half_its_request() -> None:
    result = plan([row("batch", "a", minutes=30)], [gpu("a")], GpuOptions(GpuBasis.REQUEST))
    assert (result.owed, result.idle, result.hours) == (
        {"batch": 3_500_000},
        {"A100": 3_500_000},
        {"batch": Decimal("0.5")},
    )


def test_a_time_sliced_gpu_is_split_by_use_on_its_own_beside_the_nodes_pool() -> None:
    gpus = [gpu("a", uuid="GPU-1", model="T4"), gpu("a", uuid="GPU-2", model="T4")]
    rows = [
        row("asr", "a", Sharing.TIME_SLICED, usage="0.5", uuid="GPU-1"),
        row("ocr", "a", Sharing.TIME_SLICED, usage="0.25", uuid="GPU-1"),
        row("train", "a", usage="1"),  # the pool: GPU-2
    ]
    result = plan(rows, gpus, GpuOptions(GpuBasis.REQUEST))
    assert result.owed == {"asr": 3_500_000, "ocr": 1_750_000, "train": 7_000_000}
    assert result.idle == {"T4": 1_750_000}
    assert result.idle_hours == {"T4": Decimal("0.25")}


def test_without_uuids_a_shared_gpu_takes_the_nodes_next_gpu() -> None:
    rows = [row("nb", "a", Sharing.HAMI, request="0.25", usage="0.1", uuid="GPU-x", model="L4")]
    result = plan(rows, [gpu("a", model=None), gpu("a", model=None)], GpuOptions(GpuBasis.MAX))
    assert result.owed == {"nb": 1_750_000}
    assert result.idle == {"L4": 12_250_000}  # the node's other GPU takes the model its rows report


@pytest.mark.parametrize(
    ("by", "basis", "owed", "idle"),
    [
        (MigBy.COMPUTE, GpuBasis.REQUEST, {"small": 1_000_000, "large": 3_000_000}, 3_000_000),
        (MigBy.COMPUTE, GpuBasis.USAGE, {"small": 500_000, "large": 750_000}, 5_750_000),
        (MigBy.MEMORY, GpuBasis.REQUEST, {"small": 875_000, "large": 3_500_000}, 2_625_000),
        (MigBy.MEMORY, GpuBasis.MAX, {"small": 875_000, "large": 3_500_000}, 2_625_000),
    ],
    ids=["compute-request", "compute-usage", "memory-request", "memory-max"],
)
def test_a_mig_slice_is_its_share_of_the_gpu(by: MigBy, basis: GpuBasis, owed: dict[str, int], idle: int) -> None:
    """1g.10gb (used 0.5) and 3g.40gb (used 0.25) of a 7,000,000 H100: 1/7 and 3/7 by compute,
    1/8 and 4/8 by memory; their use is of their slice."""
    rows = [
        row("small", "h", Sharing.MIG, usage="0.5", uuid="GPU-h", profile="1g.10gb"),
        row("large", "h", Sharing.MIG, usage="0.25", uuid="GPU-h", profile="3g.40gb"),
    ]
    result = plan(rows, [gpu("h", uuid="GPU-h", model=H100)], GpuOptions(basis, by))
    assert (result.owed, result.idle) == (owed, {H100: idle})


def test_every_part_adds_up_to_the_gpus_cost_and_hours() -> None:
    gpus = [gpu("a", 8_000_001, "GPU-1", "T4"), gpu("a", 3_333_333), gpu("b", 5_000_000, model="L4")]
    rows = [
        row("x", "a", Sharing.TIME_SLICED, usage="0.333", uuid="GPU-1"),
        row("y", "a", Sharing.TIME_SLICED, usage="0.333", uuid="GPU-1"),
        row("z", "a", request="1", minutes=17),
        row("w", "b", Sharing.HAMI, request="0.7", usage="0.9", uuid="GPU-b", minutes=59),
    ]
    result = plan(rows, gpus, GpuOptions(GpuBasis.MAX))
    assert sum(result.owed.values()) + sum(result.idle.values()) == 8_000_001 + 3_333_333 + 5_000_000
    assert sum(result.hours.values()) + sum(result.idle_hours.values()) == 3


def test_dcgm_devices_are_priced_for_the_minutes_seen() -> None:
    devices = [GpuDevice("GPU-1", "T4", "a", Decimal(60)), GpuDevice("GPU-2", "T4", "a", Decimal(15))]
    assert from_devices(devices, Decimal("2.80")) == [
        HourGpu("a", "GPU-1", "T4", 2_800_000, Decimal(60)),
        HourGpu("a", "GPU-2", "T4", 700_000, Decimal(15)),
    ]


@pytest.mark.parametrize(
    ("rows", "gpus", "options", "message"),
    [
        ([row("lost", "b")], [gpu("a")], GpuOptions(), "lost: its node b has no GPU in the hour's inventory"),
        (
            [row("t", "a", Sharing.TIME_SLICED, usage="0.1", uuid="GPU-1"), row("w", "a")],
            [gpu("a", uuid="GPU-1")],
            GpuOptions(),
            "w: holds a whole GPU, but every GPU of node a is shared",
        ),
        (
            [row("m", "h", Sharing.MIG, uuid="GPU-h")],
            [gpu("h", uuid="GPU-h")],
            GpuOptions(),
            "m: a mig GPU row has no gpuProfile",
        ),
        (
            [row("m", "h", Sharing.MIG, uuid="GPU-h", profile="1g.10gb")],
            [gpu("h", uuid="GPU-h", model="Tesla H100")],
            GpuOptions(mig_by=MigBy.MEMORY),
            "does not say its memory",
        ),
        (
            [row("a", "a", Sharing.HAMI, request="0.5", uuid="GPU-1"), row("b", "a", Sharing.HAMI, uuid="GPU-2")],
            [gpu("a", uuid="GPU-1")],
            GpuOptions(),
            "node a: GPU GPU-2 is not among the node's 1 GPUs",
        ),
        ([row("nowhere", "")], [gpu("a")], GpuOptions(), r"nowhere: its node \(none\) has no GPU"),
    ],
    ids=["no-gpu-on-node", "whole-but-all-shared", "mig-without-profile", "memory-unknown", "unknown-uuid", "no-node"],
)
def test_a_row_that_cannot_be_placed_is_refused_naming_it(
    rows: list[GpuRow], gpus: list[HourGpu], options: GpuOptions, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        plan(rows, gpus, options)


def test_a_pools_gpus_count_each_for_the_minutes_it_was_seen() -> None:
    """2,800,000 for a GPU seen all hour, 700,000 for one seen 15 minutes: 75 GPU-minutes, of which
    the row held 60, so 4/5 of the pool's 3,500,000."""
    gpus = [HourGpu("a", "GPU-1", "T4", 2_800_000, Decimal(60)), HourGpu("a", "GPU-2", "T4", 700_000, Decimal(15))]
    result = plan([row("train", "a")], gpus, GpuOptions())
    assert (result.owed, result.idle) == ({"train": 2_800_000}, {"T4": 700_000})
    assert (result.hours, result.idle_hours) == ({"train": Decimal(1)}, {"T4": Decimal("0.25")})


def test_a_row_seen_longer_than_its_gpu_holds_all_of_it_not_more() -> None:
    gpus = [HourGpu("a", "GPU-1", "T4", 2_800_000, Decimal(59))]
    result = plan([row("asr", "a", Sharing.TIME_SLICED, usage="1", uuid="GPU-1")], gpus, GpuOptions())
    assert (result.owed, result.idle) == ({"asr": 2_800_000}, {"T4": 0})


def test_a_node_with_two_models_has_a_pool_per_model() -> None:
    gpus = [gpu("a", 7_000_000, "GPU-1", "A100"), gpu("a", 8_000_000, "GPU-2", "L4")]
    rows = [row("train", "a", usage="0.5", model="L4")]
    result = plan(rows, gpus, GpuOptions(GpuBasis.USAGE))
    assert (result.owed, result.idle) == ({"train": 4_000_000}, {"A100": 7_000_000, "L4": 4_000_000})
    with pytest.raises(InvalidInput, match="other: its GPU model 'H100' is none of node a's"):
        plan([row("other", "a", model="H100")], gpus, GpuOptions())


def test_busy_gpu_hours_are_in_gpus_a_mig_slices_use_counted_as_its_share() -> None:
    rows = [
        row("small", "h", Sharing.MIG, usage="0.5", uuid="GPU-h", profile="1g.10gb"),
        row("train", "a", usage="0.5", minutes=30),
        row("idle-pod", "a"),
    ]
    result = plan(rows, [gpu("h", uuid="GPU-h", model=H100), gpu("a"), gpu("a")], GpuOptions())
    assert result.busy == {"small": Decimal("0.0714285714"), "train": Decimal("0.25"), "idle-pod": None}


@pytest.mark.parametrize(
    ("adjustment", "share", "original", "scaled"),
    [
        (-190_000, 950_000, 950_000, -190_000),  # the share is OpenCost's: its adjustment as it was
        (-190_000, 95_000, 950_000, -19_000),  # a tenth of the GPU: a tenth of its discount
        (-1, 1, 2, 0),  # -0.5 micro: half-even
        (-3, 1, 2, -2),  # -1.5 micros: half-even
        (50_000, 400_000, 0, 50_000),  # no cost of OpenCost's to scale by: kept
        (0, 400_000, 950_000, 0),
    ],
)
def test_opencosts_adjustment_is_scaled_to_the_rows_share(
    adjustment: int, share: int, original: int, scaled: int
) -> None:
    assert scaled_adjustment(adjustment, share, original) == scaled


STORED = {
    "name": "ml/train/train-0/main",
    "node": "gpu-a",
    "minutes": Decimal(45),
    "gpu_sharing": None,
    "gpu_shared": None,
    "gpu_uuid": None,
    "gpu_profile": None,
    "gpu_request_avg": Decimal("0.5"),
    "gpu_usage_avg": Decimal("0.25"),
    "gpu_model": "NVIDIA L4",
}


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ({}, GpuRow("ml/train/train-0/main", "gpu-a", Decimal(45), Sharing.WHOLE, None, Decimal("0.5"),
                    Decimal("0.25"), "NVIDIA L4", None)),
        ({"gpu_shared": True, "gpu_uuid": "GPU-1"},  # OpenCost's isGPUShared: time-sliced
         GpuRow("ml/train/train-0/main", "gpu-a", Decimal(45), Sharing.TIME_SLICED, None, Decimal("0.5"),
                Decimal("0.25"), "NVIDIA L4", "GPU-1")),
        ({"gpu_sharing": "mig", "gpu_shared": True, "gpu_uuid": "GPU-1", "gpu_profile": "1g.10gb"},  # the source says
         GpuRow("ml/train/train-0/main", "gpu-a", Decimal(45), Sharing.MIG, "1g.10gb", Decimal("0.5"),
                Decimal("0.25"), "NVIDIA L4", "GPU-1")),
        ({"node": None, "minutes": None, "gpu_request_avg": None, "gpu_usage_avg": None, "gpu_model": None},
         GpuRow("ml/train/train-0/main", "", Decimal(0), Sharing.WHOLE, None, None, None, None, None)),
    ],
    ids=["whole", "opencost-shared", "source-sharing", "unknowns"],
)  # fmt: skip
def test_a_stored_row_reads_as_the_split_needs_it(stored: dict[str, object], expected: GpuRow) -> None:
    assert GpuRow.of({**STORED, **stored}) == expected


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ({"gpu_sharing": "mps"}, "ml/train/train-0/main: gpuSharing 'mps' is not one of whole, mig, hami, time-sliced"),
        ({"gpu_sharing": "hami"}, "ml/train/train-0/main: a hami GPU row has no gpuUUID"),
        ({"gpu_shared": True}, "ml/train/train-0/main: a time-sliced GPU row has no gpuUUID"),
    ],
)
def test_a_stored_row_that_says_too_little_is_refused_naming_it(stored: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        GpuRow.of({**STORED, **stored})
    assert refused.value.message == message


def test_each_units_busy_hours_are_its_own_rows() -> None:
    # Three shared GPUs on three nodes, each with its own pods: every row's busy GPU-hours are its
    # own use of its own GPU, however many units come before it.
    gpus = [gpu(node, uuid=f"GPU-{node}") for node in "abc"]
    rows = [
        row(f"{node}-{n}", node, Sharing.TIME_SLICED, usage=f"0.{n}", uuid=f"GPU-{node}")
        for node in "abc"
        for n in range(1, 1 + "abc".index(node) + 1)
    ]
    result = plan(rows, gpus, GpuOptions())
    assert result.busy == {r.name: r.usage for r in rows}


def test_a_gpu_seen_for_no_minute_holds_nothing_and_its_use_is_none_of_it() -> None:
    result = plan(
        [row("late", "a", Sharing.TIME_SLICED, usage="0.5", uuid="GPU-a", minutes=0)],
        [HourGpu("a", "GPU-a", "T4", 0, Decimal(0))],
        GpuOptions(GpuBasis.USAGE),
    )
    assert (result.owed, result.busy, result.hours) == ({"late": 0}, {"late": Decimal(0)}, {"late": Decimal(0)})
    unmeasured = plan(
        [row("late", "a", Sharing.TIME_SLICED, usage=None, uuid="GPU-a", minutes=0)],
        [HourGpu("a", "GPU-a", "T4", 0, Decimal(0))],
        GpuOptions(),
    )
    assert unmeasured.busy == {"late": None}


def test_two_shared_gpus_of_a_node_are_split_each_among_its_own_rows() -> None:
    gpus = [gpu("a", uuid="GPU-1"), gpu("a", uuid="GPU-2")]
    rows = [
        row("one", "a", Sharing.TIME_SLICED, usage="0.5", uuid="GPU-1"),
        row("two", "a", Sharing.TIME_SLICED, usage="0.25", uuid="GPU-2"),
    ]
    result = plan(rows, gpus, GpuOptions())
    assert (result.owed, result.idle) == ({"one": 3_500_000, "two": 1_750_000}, {"A100": 8_750_000})


def test_a_whole_gpus_row_with_a_uuid_is_in_the_pool_not_a_shared_gpu() -> None:
    # OpenCost names the UUID of a whole GPU too: the row is still the pool's, beside a shared GPU.
    gpus = [gpu("a", uuid="GPU-1"), gpu("a", uuid="GPU-2")]
    rows = [row("t", "a", Sharing.TIME_SLICED, usage="0.5", uuid="GPU-1"), row("w", "a", uuid="GPU-2")]
    result = plan(rows, gpus, GpuOptions())
    assert (result.owed, result.idle) == ({"t": 3_500_000, "w": 7_000_000}, {"A100": 3_500_000})


def test_gpus_and_rows_that_name_no_model_are_of_the_unknown_model() -> None:
    result = plan([row("w", "a")], [gpu("a", model=None), gpu("a", model=None)], GpuOptions())
    assert result.idle == {"unknown": 7_000_000}
    shared = plan([row("t", "a", Sharing.TIME_SLICED, usage="0.5", uuid="GPU-1")], [gpu("a", model=None)], GpuOptions())
    assert shared.idle == {"unknown": 3_500_000}


def test_an_a30_is_sliced_in_fours_whatever_the_rule() -> None:
    a30 = [gpu("a", cost=8_000_000, uuid="GPU-1", model="NVIDIA A30")]
    rows = [row("m", "a", Sharing.MIG, uuid="GPU-1", profile="1g.6gb", usage=None)]
    result = plan(rows, a30, GpuOptions())
    assert (result.owed, result.busy) == ({"m": 2_000_000}, {"m": None})  # 1 of 4, its use not measured
