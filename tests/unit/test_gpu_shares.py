"""We test these aspects of splitting a GPU's hour (``finops.gpus``):

- one worked example per way of sharing a GPU (a whole GPU, a time-sliced one, MIG slices by
  compute and by memory, HAMi fractions, oversubscribed HAMi cores), each figure computed by hand
  here from the GPU's hourly price and the workloads' requests and use, under every basis;
- for any GPUs, uses and basis, every GPU's parts (workloads and its model's idle) add up to its
  cost to the micro, no part is negative, each part is its exact share rounded up or down, and a
  time-sliced GPU is split by measured use whatever the basis;
- MIG profiles are their compute or memory slices of the GPU, and a bad one, a use on an unknown
  GPU or a fraction above one GPU is refused naming it.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.errors import InvalidInput
from finops.gpus import (
    GpuBasis,
    GpuUse,
    MigBy,
    PhysicalGpu,
    Sharing,
    fraction_of,
    mig_fraction,
    split_gpu_hour,
)

REQUEST, USAGE, MAX = GpuBasis.REQUEST, GpuBasis.USAGE, GpuBasis.MAX
F = Fraction


def use(key: str, uuid: str, sharing: Sharing, request: str, usage: str | None) -> GpuUse:
    return GpuUse(key, uuid, sharing, F(request), None if usage is None else F(usage))


# A100 at $3.00 an hour; one pod holds it all hour and keeps its engines 40 % busy.
WHOLE = [PhysicalGpu("GPU-a100", "A100", 3_000_000)]
TRAINER = [use("ml/train", "GPU-a100", Sharing.WHOLE, "1", "0.4")]


@pytest.mark.parametrize(
    ("basis", "owed", "idle"),
    [(REQUEST, 3_000_000, 0), (USAGE, 1_200_000, 1_800_000), (MAX, 3_000_000, 0)],
)
def test_a_whole_gpu(basis: GpuBasis, owed: int, idle: int) -> None:
    # usage: 40 % of $3.00 = $1.20, the other $1.80 idle on the A100s.
    split = split_gpu_hour(WHOLE, TRAINER, basis)
    assert split.owed == {"ml/train": owed} and split.idle == {"A100": idle}


@pytest.mark.parametrize("basis", list(GpuBasis))
def test_a_time_sliced_gpu_is_split_by_measured_use_whatever_the_basis(basis: GpuBasis) -> None:
    # T4 at $0.35; three replicas of "one GPU" take 30 %, 20 % and 10 % of it: 30 % of $0.35 is
    # $0.105, 20 % $0.07, 10 % $0.035; the 40 % nobody used, $0.14, is the T4s' idle.
    gpus = [PhysicalGpu("GPU-t4", "T4", 350_000)]
    uses = [use(f"web/r{n}", "GPU-t4", Sharing.TIME_SLICED, "1", u) for n, u in enumerate(("0.3", "0.2", "0.1"))]
    split = split_gpu_hour(gpus, uses, basis)
    assert split.owed == {"web/r0": 105_000, "web/r1": 70_000, "web/r2": 35_000}
    assert split.idle == {"T4": 140_000}


H100 = [PhysicalGpu("GPU-h100", "H100", 4_200_000)]  # 80 GB, $4.20 an hour


def mig_uses(by: MigBy) -> list[GpuUse]:
    # A 3g.40gb slice half busy, and two 1g.10gb slices, one flat out, one unused; use of the
    # GPU is use of the slice times the slice.
    big, small = mig_fraction("nvidia.com/mig-3g.40gb", by, 80), mig_fraction("1g.10gb", by, 80)
    return [
        GpuUse("llm/serve", "GPU-h100", Sharing.MIG, big, big / 2),
        GpuUse("llm/batch", "GPU-h100", Sharing.MIG, small, small),
        GpuUse("llm/dev", "GPU-h100", Sharing.MIG, small, F(0)),
    ]


@pytest.mark.parametrize(
    ("by", "basis", "serve", "batch", "dev", "idle"),
    [
        # compute: 3/7, 1/7, 1/7 of $4.20 = $1.80, $0.60, $0.60; 2/7 ($1.20) unallocated
        (MigBy.COMPUTE, REQUEST, 1_800_000, 600_000, 600_000, 1_200_000),
        # use: 3/14 ($0.90), 1/7 ($0.60), nothing; $2.70 idle
        (MigBy.COMPUTE, USAGE, 900_000, 600_000, 0, 2_700_000),
        (MigBy.COMPUTE, MAX, 1_800_000, 600_000, 600_000, 1_200_000),
        # memory: 40 of 80 GB is 4/8 ($2.10), 10 GB 1/8 ($0.525) each; 2/8 ($1.05) unallocated
        (MigBy.MEMORY, REQUEST, 2_100_000, 525_000, 525_000, 1_050_000),
        (MigBy.MEMORY, USAGE, 1_050_000, 525_000, 0, 2_625_000),
    ],
)
def test_mig_slices_are_their_share_of_the_physical_gpu(
    by: MigBy, basis: GpuBasis, serve: int, batch: int, dev: int, idle: int
) -> None:
    split = split_gpu_hour(H100, mig_uses(by), basis)
    assert split.owed == {"llm/serve": serve, "llm/batch": batch, "llm/dev": dev}
    assert split.idle == {"H100": idle}


@pytest.mark.parametrize(
    ("basis", "small", "large", "idle"),
    [
        # gpucores=25 used 30 % of the L4, gpucores=50 used 10 %: of $0.80, request 0.20 + 0.40
        # (0.20 idle), usage 0.24 + 0.08 (0.48 idle), max 0.24 + 0.40 (0.16 idle).
        (REQUEST, 200_000, 400_000, 200_000),
        (USAGE, 240_000, 80_000, 480_000),
        (MAX, 240_000, 400_000, 160_000),
    ],
)
def test_hami_fractions_are_never_whole_gpus(basis: GpuBasis, small: int, large: int, idle: int) -> None:
    gpus = [PhysicalGpu("GPU-l4", "L4", 800_000)]
    uses = [use("ci/a", "GPU-l4", Sharing.HAMI, "0.25", "0.3"), use("ci/b", "GPU-l4", Sharing.HAMI, "0.5", "0.1")]
    split = split_gpu_hour(gpus, uses, basis)
    assert split.owed == {"ci/a": small, "ci/b": large} and split.idle == {"L4": idle}


def test_oversubscribed_cores_are_scaled_to_one_gpu_and_rounded_to_its_price() -> None:
    # max(0.6, 0.7) + max(0.6, 0.2) = 1.3 GPUs: scaled to 7/13 and 6/13 of $1.00, that is
    # 538,461.54 and 461,538.46 micros; the spare micro goes to the larger remainder.
    gpus = [PhysicalGpu("GPU-l4", "L4", 1_000_000)]
    uses = [use("ci/a", "GPU-l4", Sharing.HAMI, "0.6", "0.7"), use("ci/b", "GPU-l4", Sharing.HAMI, "0.6", "0.2")]
    split = split_gpu_hour(gpus, uses, MAX)
    assert split.owed == {"ci/a": 538_462, "ci/b": 461_538} and split.idle == {"L4": 0}


def test_idle_is_per_model_across_gpus() -> None:
    gpus = [PhysicalGpu("GPU-1", "A100", 3_000_000), PhysicalGpu("GPU-2", "A100", 3_000_000),
            PhysicalGpu("GPU-3", "T4", 350_000)]  # fmt: skip
    uses = [use("ml/train", "GPU-1", Sharing.WHOLE, "1", "0.4")]
    split = split_gpu_hour(gpus, uses, USAGE)
    assert split.owed == {"ml/train": 1_200_000} and split.idle == {"A100": 4_800_000, "T4": 350_000}


def test_an_unmeasured_gpu_is_used_by_nobody() -> None:
    # No DCGM figure: nothing measured is nothing used, so on usage the whole $3.00 is idle.
    unmeasured = [use("ml/train", "GPU-a100", Sharing.WHOLE, "1", None)]
    assert split_gpu_hour(WHOLE, unmeasured, USAGE).idle == {"A100": 3_000_000}
    assert split_gpu_hour(WHOLE, unmeasured, MAX).owed == {"ml/train": 3_000_000}


def test_bad_input_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInput, match="GPU memory 81 GB is not 8 memory slices"):
        mig_fraction("1g.10gb", MigBy.MEMORY, 81)
    for profile in ("1g.5gb", "1g.90gb"):  # half a slice; more than the GPU
        with pytest.raises(InvalidInput, match=re.escape(f"{profile!r} is not whole memory slices of a 80 GB GPU")):
            mig_fraction(profile, MigBy.MEMORY, 80)
    with pytest.raises(InvalidInput, match="ml/x: GPU usage 3/2 is not a fraction"):
        split_gpu_hour(WHOLE, [use("ml/x", "GPU-a100", Sharing.WHOLE, "1", "1.5")], REQUEST)
    with pytest.raises(InvalidInput, match=re.escape("'nvidia.com/mig-9g'")):
        mig_fraction("nvidia.com/mig-9g", MigBy.COMPUTE, 80)
    with pytest.raises(InvalidInput, match="ml/x: GPU GPU-none is not among"):
        split_gpu_hour(WHOLE, [use("ml/x", "GPU-none", Sharing.WHOLE, "1", None)], REQUEST)
    with pytest.raises(InvalidInput, match="ml/x: GPU request 2 is not a fraction"):
        split_gpu_hour(WHOLE, [use("ml/x", "GPU-a100", Sharing.WHOLE, "2", None)], REQUEST)
    with pytest.raises(InvalidInput, match="GPU memory 0 GB is not 8 memory slices"):
        mig_fraction("1g.10gb", MigBy.MEMORY, 0)


def test_a_mig_profile_may_hold_every_memory_slice() -> None:
    assert mig_fraction("7g.80gb", MigBy.MEMORY, 80) == 1 == mig_fraction("7g.80gb", MigBy.COMPUTE, 80)


def test_a_workload_on_two_gpus_owes_both_shares() -> None:
    # A pod holding two time-sliced T4s (0.60 an hour each), using half of one and a tenth of the other.
    t4s = [PhysicalGpu("GPU-1", "T4", 600_000), PhysicalGpu("GPU-2", "T4", 600_000)]
    both = [
        use("ml/x", "GPU-1", Sharing.TIME_SLICED, "1", "0.5"),
        use("ml/x", "GPU-2", Sharing.TIME_SLICED, "1", "0.1"),
    ]
    split = split_gpu_hour(t4s, both, REQUEST)
    assert (split.owed, split.idle, split.billed) == ({"ml/x": 360_000}, {"T4": 840_000}, {"ml/x": F(3, 5)})


fractions = st.fractions(min_value=0, max_value=1, max_denominator=1000)
gpus_st = st.lists(
    st.builds(PhysicalGpu, st.sampled_from(["g1", "g2", "g3"]), st.sampled_from(["A100", "T4"]),
              st.integers(0, 10**8)),
    min_size=1, max_size=3, unique_by=lambda g: g.uuid,
)  # fmt: skip


@st.composite
def hours(draw: st.DrawFn) -> tuple[list[PhysicalGpu], list[GpuUse]]:
    gpus = draw(gpus_st)
    uses = draw(
        st.lists(
            st.builds(GpuUse, st.sampled_from([f"ns/p{n}" for n in range(6)]), st.sampled_from([g.uuid for g in gpus]),
                      st.sampled_from(list(Sharing)), fractions, st.none() | fractions),
            max_size=8, unique_by=lambda u: u.key,
        )
    )  # fmt: skip
    return gpus, uses


@given(hour=hours(), basis=st.sampled_from(list(GpuBasis)))
def test_every_gpus_parts_add_up_to_its_cost_exactly(
    hour: tuple[list[PhysicalGpu], list[GpuUse]], basis: GpuBasis
) -> None:
    gpus, uses = hour
    for gpu in gpus:
        mine = [u for u in uses if u.uuid == gpu.uuid]
        split = split_gpu_hour([gpu], mine, basis)
        assert split.total == gpu.cost_micros
        assert all(micros >= 0 for micros in [*split.owed.values(), *split.idle.values()])
        wanted = [fraction_of(u, basis) for u in mine]
        scale = max(sum(wanted, F(0)), F(1))
        for u, fraction in zip(mine, wanted, strict=True):
            exact = gpu.cost_micros * fraction / scale
            assert math.floor(exact) <= split.owed[u.key] <= math.ceil(exact), u
            if u.sharing is Sharing.TIME_SLICED:
                assert fraction == (u.usage or 0)
    whole = split_gpu_hour(gpus, uses, basis)
    assert whole.total == sum(g.cost_micros for g in gpus)


@pytest.mark.parametrize(
    ("profile", "by", "memory", "model", "share"),
    [
        ("1g.10gb+me", MigBy.COMPUTE, 80, "NVIDIA H100 80GB HBM3", Fraction(1, 7)),  # with the media extensions
        ("1g.10gb+me", MigBy.MEMORY, 80, "NVIDIA H100 80GB HBM3", Fraction(1, 8)),
        ("1g.6gb", MigBy.COMPUTE, 24, "NVIDIA A30", Fraction(1, 4)),  # an A30 has 4 compute slices
        ("2g.12gb", MigBy.MEMORY, 24, "NVIDIA A30", Fraction(2, 4)),  # and 4 memory slices of 6 GB
        ("4g.24gb", MigBy.COMPUTE, 24, "NVIDIA A30", Fraction(1)),
    ],
)
def test_mig_slices_follow_the_gpus_model(profile: str, by: MigBy, memory: int, model: str, share: Fraction) -> None:
    assert mig_fraction(profile, by, memory, model) == share


def test_an_a30_has_no_seventh_slice() -> None:
    with pytest.raises(InvalidInput, match="more than the 4 compute slices"):
        mig_fraction("7g.80gb", MigBy.COMPUTE, 24, "NVIDIA A30")
