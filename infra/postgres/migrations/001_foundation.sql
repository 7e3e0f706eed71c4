-- The foundation: run history, PriceBook versions and hourly OpenCost allocations.
-- Money is integer micros (bigint); quantities are numeric (exact). Time is UTC timestamptz.

CREATE TABLE job_runs (
    run_id       uuid PRIMARY KEY,
    function     text        NOT NULL,
    cluster      text        NOT NULL,
    trigger      text        NOT NULL,
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz NOT NULL,
    duration_ms  integer     NOT NULL,
    outcome      text        NOT NULL CHECK (outcome IN ('success', 'partial', 'skipped', 'failed')),
    http_status  integer     NOT NULL,
    counts       jsonb       NOT NULL DEFAULT '{}',
    error        text
);
CREATE INDEX job_runs_function_started ON job_runs (function, started_at DESC);

-- One row per distinct content of a PriceBook: a rate change is a new version (a new id).
CREATE TABLE pricebooks (
    id                      bigserial PRIMARY KEY,
    cluster                 text        NOT NULL,
    namespace               text        NOT NULL,
    name                    text        NOT NULL,
    uid                     text        NOT NULL,
    fingerprint             text        NOT NULL,
    currency                char(3)     NOT NULL,
    valuation_mode          text        NOT NULL,
    cpu_hour_micros         bigint      NOT NULL,
    spot_cpu_hour_micros    bigint      NOT NULL,
    ram_gb_hour_micros      bigint      NOT NULL,
    spot_ram_gb_hour_micros bigint      NOT NULL,
    pv_gb_hour_micros       bigint      NOT NULL,
    gpu_hour_micros         bigint      NOT NULL,
    network_gib_micros      bigint      NOT NULL,
    first_seen_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (cluster, namespace, name, fingerprint)
);

-- Hourly allocations, partitioned by month (partitions are created on demand by the collector).
CREATE TABLE provider_allocations (
    cluster                text        NOT NULL,
    namespace              text        NOT NULL,  -- '' for the cluster's __idle__ row
    name                   text        NOT NULL,  -- OpenCost's aggregation key
    aggregation            text        NOT NULL,
    hour                   timestamptz NOT NULL,  -- window [hour, hour + 1h)
    entry_kind             text        NOT NULL CHECK (entry_kind IN ('workload', 'idle', 'unmounted')),
    controller_kind        text,
    controller             text,
    pod                    text,
    container              text,
    node                   text,
    data_start             timestamptz,           -- OpenCost's actual coverage inside the hour
    data_end               timestamptz,
    minutes                numeric,
    cpu_cores              numeric,
    cpu_core_request_avg   numeric,
    cpu_core_usage_avg     numeric,
    cpu_core_hours         numeric,
    ram_bytes              numeric,
    ram_byte_request_avg   numeric,
    ram_byte_usage_avg     numeric,
    ram_byte_hours         numeric,
    gpu_count              numeric,
    gpu_hours              numeric,
    pv_bytes               numeric,
    pv_byte_hours          numeric,
    network_transfer_bytes numeric,
    network_receive_bytes  numeric,
    cpu_cost_micros        bigint,
    gpu_cost_micros        bigint,
    ram_cost_micros        bigint,
    pv_cost_micros         bigint,
    network_cost_micros    bigint,
    lb_cost_micros         bigint,
    shared_cost_micros     bigint,
    external_cost_micros   bigint,
    total_cost_micros      bigint,
    team                   text,
    cost_center            text,
    pricebook_id           bigint REFERENCES pricebooks (id),
    currency               char(3),
    is_finalized           boolean     NOT NULL,
    collected_at           timestamptz NOT NULL DEFAULT now(),
    -- The natural key, ordered so one hour of one cluster is a single index range.
    PRIMARY KEY (cluster, aggregation, hour, namespace, name)
) PARTITION BY RANGE (hour);

-- The collector's ledger: which hours are stored, and whether they are final.
CREATE TABLE allocation_hours (
    cluster      text        NOT NULL,
    aggregation  text        NOT NULL,
    hour         timestamptz NOT NULL,
    is_finalized boolean     NOT NULL,
    row_count    integer     NOT NULL,
    pricebook_id bigint REFERENCES pricebooks (id),
    run_id       uuid        NOT NULL,
    collected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, aggregation, hour)
);

-- Creates the month's partition of provider_allocations if it is missing. Replicas racing on a
-- new month serialise on an advisory lock; the loser's duplicate is caught, not raised.
CREATE FUNCTION finops_ensure_allocation_partition(moment timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    month_start timestamptz := date_trunc('month', moment AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    partition   text := 'provider_allocations_' || to_char(month_start AT TIME ZONE 'UTC', 'YYYYMM');
BEGIN
    IF to_regclass(partition) IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtext('finops_ensure_allocation_partition'));
        BEGIN
            EXECUTE format(
                'CREATE TABLE IF NOT EXISTS %I PARTITION OF provider_allocations FOR VALUES FROM (%L) TO (%L)',
                partition, month_start, month_start + interval '1 month');
        EXCEPTION WHEN duplicate_table OR unique_violation THEN
            NULL;  -- created by a concurrent transaction meanwhile
        END;
    END IF;
    RETURN partition;
END;
$$;

-- Drops the monthly partitions that end at or before ``cutoff`` (retention); returns their names.
CREATE FUNCTION finops_drop_allocation_partitions(cutoff timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    part record;
BEGIN
    FOR part IN
        SELECT c.relname
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'provider_allocations'::regclass
          AND c.relname ~ '^provider_allocations_[0-9]{6}$'
          AND (to_timestamp(substr(c.relname, 22, 6), 'YYYYMM') AT TIME ZONE 'UTC') + interval '1 month' <= cutoff
    LOOP
        EXECUTE format('DROP TABLE %I', part.relname);
        RETURN NEXT part.relname;
    END LOOP;
END;
$$;
