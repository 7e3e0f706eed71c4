-- What each node, disk and load balancer of a cluster cost in each collected hour (OpenCost's
-- assets), with its provider ID, so the cloud bill's lines can be matched to them and each node's
-- idle (its cost minus what its allocations were charged) is known.
--
-- Written by the collector in the hour's transaction, under the hour's advisory lock, together
-- with the hour's allocations: the hour's assets are deleted and inserted again, so they are
-- replaced with its rows or not at all. Hence `aggregation` in the key: the lock, the ledger and
-- the rows are per (cluster, aggregation, hour); two CostJobs collecting one cluster with two
-- aggregations each own their copy (a few rows per node and hour) and never race on each other's.
-- Costs are in the hour's currency (allocation_hours.currency), in micros as sent by OpenCost.
--   cpu/ram/gpu_cost_micros   a node's capacity cost per resource (0 for disks, load balancers)
--   adjustment_micros         OpenCost's adjustment (reconciliation with the bill)
--   total_cost_micros         OpenCost's totalCost: for a node (cpu + ram) x (1 - discount) + gpu
--                             + adjustment; for a disk or load balancer its cost + adjustment
CREATE TABLE cluster_assets (
    cluster            text        NOT NULL,
    aggregation        text        NOT NULL,
    hour               timestamptz NOT NULL,
    kind               text        NOT NULL CONSTRAINT cluster_assets_kind CHECK (kind IN ('node', 'disk', 'load_balancer')),
    name               text        NOT NULL,  -- node name, volume name, <namespace>/<service>
    provider_id        text        NOT NULL,  -- the cloud's id (instance, volume, LB); the name when OpenCost has none
    cpu_cores          numeric,
    ram_bytes          numeric,
    gpu_count          numeric,
    bytes              numeric,               -- a disk's size
    cpu_cost_micros    bigint      NOT NULL DEFAULT 0,
    ram_cost_micros    bigint      NOT NULL DEFAULT 0,
    gpu_cost_micros    bigint      NOT NULL DEFAULT 0,
    adjustment_micros  bigint      NOT NULL DEFAULT 0,
    total_cost_micros  bigint      NOT NULL,
    PRIMARY KEY (cluster, aggregation, hour, kind, name)
);
-- Matching a bill line: by provider ID over a period.
CREATE INDEX cluster_assets_provider ON cluster_assets (provider_id, hour);

-- How many assets the hour's transaction stored: NULL when none were asked for (an OpenCost
-- without the assets API, the Prometheus source, hours stored before this migration), so an hour
-- without assets is visible rather than read as a cluster without nodes.
ALTER TABLE allocation_hours ADD COLUMN asset_count integer;
