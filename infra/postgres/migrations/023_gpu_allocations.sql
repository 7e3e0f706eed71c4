-- What OpenCost's gpuAllocation says of each allocation's GPU (finops.gpus): the GPUs requested
-- and used on average over its minutes (fractions of one GPU), whether the GPU is shared
-- (time-sliced), and the device, model and UUID of the physical GPU. NULL: not sent (no GPU, or an
-- OpenCost without it).
ALTER TABLE provider_allocations
    ADD COLUMN gpu_request_avg numeric,
    ADD COLUMN gpu_usage_avg numeric,
    ADD COLUMN gpu_shared boolean,
    ADD COLUMN gpu_device text,
    ADD COLUMN gpu_model text,
    ADD COLUMN gpu_uuid text;
