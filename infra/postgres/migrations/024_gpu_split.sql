-- The GPU split (finops.gpus, usecases.collect_allocations.gpus): how each allocation shares its
-- GPU, and how each hour's GPUs were split.
--
-- gpu_sharing: whole | mig | hami | time-sliced (NULL: no GPU, or a source that does not say; an
-- OpenCost row is then time-sliced when gpu_shared, else whole). gpu_profile: the MIG profile
-- (1g.10gb) of a mig row. gpu_adjustment_micros: the part of gpu_cost_micros that is OpenCost's
-- gpuCostAdjustment (its reconciliation with the bill), which the split scales to the row's share.
-- gpu_busy_hours: the row's measured use in GPU-hours, by the split (NULL: not measured or not split).
ALTER TABLE provider_allocations
    ADD COLUMN gpu_sharing text,
    ADD COLUMN gpu_profile text,
    ADD COLUMN gpu_adjustment_micros bigint,
    ADD COLUMN gpu_busy_hours numeric;

-- The basis and MIG rule the hour's GPUs were split by (NULL: the hour's GPU cost is the source's
-- own, not split: it had no GPU, or its GPUs had no price).
ALTER TABLE allocation_hours
    ADD COLUMN gpu_basis text,
    ADD COLUMN gpu_mig_by text;
