-- The hour ledger is the authority: every (cluster, aggregation, hour) the collector knows of has
-- one state, written in the same transaction as the hour's rows. An hour with no ledger row is
-- missing.
--   open   stored, may still change (the run's pinned hour, or an empty answer within its grace)
--   final  stored for good; never rewritten
--   lost   given up (OpenCost no longer has it, or it stayed empty past the grace), with the reason
ALTER TABLE allocation_hours ADD COLUMN state text;
UPDATE allocation_hours SET state = CASE WHEN is_finalized THEN 'final' ELSE 'open' END;
ALTER TABLE allocation_hours
    ALTER COLUMN state SET NOT NULL,
    ADD CONSTRAINT allocation_hours_state CHECK (state IN ('open', 'final', 'lost')),
    DROP COLUMN is_finalized,
    ALTER COLUMN run_id DROP NOT NULL,                    -- NULL for an hour given up without a fetch
    ADD COLUMN reason      text,                          -- why lost, or why still open (empty answer)
    ADD COLUMN empty_since timestamptz,                   -- when OpenCost first answered the hour empty
    ADD COLUMN currency    char(3);                       -- what its rows are priced in; NULL = unpriced
UPDATE allocation_hours h SET currency = p.currency FROM pricebooks p WHERE p.id = h.pricebook_id;
CREATE INDEX allocation_hours_not_final ON allocation_hours (cluster, aggregation, hour) WHERE state <> 'final';

-- Days whose rollup must be rebuilt: marked in the transaction that changes one of their hours,
-- cleared in the transaction that rebuilds the rollup. A failure between the two leaves the mark,
-- and the next run (or report) rebuilds the day, so rows and rollups never disagree for long.
CREATE TABLE allocation_dirty_days (
    cluster     text        NOT NULL,
    aggregation text        NOT NULL,
    day         date        NOT NULL,  -- UTC
    marked_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, aggregation, day)
);

-- Repair what earlier versions left: every stored day is rebuilt once by the next run.
INSERT INTO allocation_dirty_days (cluster, aggregation, day)
SELECT DISTINCT cluster, aggregation, (hour AT TIME ZONE 'UTC')::date FROM allocation_hours
ON CONFLICT DO NOTHING;

-- The daily rollup of [first_day, end_day) computed from the hourly rows: written by the
-- collector (one day at a time) and compared with allocation_daily by `finops verify`, so the
-- aggregation exists once.
CREATE FUNCTION finops_allocation_rollup(p_cluster text, p_aggregation text, first_day date, end_day date)
RETURNS SETOF allocation_daily
LANGUAGE sql STABLE AS $$
    SELECT cluster, aggregation, (hour AT TIME ZONE 'UTC')::date, namespace, entry_kind,
           coalesce(team, ''), coalesce(cost_center, ''),
           max(currency), count(DISTINCT hour)::integer,
           coalesce(sum(cpu_cost_micros), 0)::bigint, coalesce(sum(gpu_cost_micros), 0)::bigint,
           coalesce(sum(ram_cost_micros), 0)::bigint, coalesce(sum(pv_cost_micros), 0)::bigint,
           coalesce(sum(lb_cost_micros), 0)::bigint, coalesce(sum(network_cost_micros), 0)::bigint,
           coalesce(sum(total_cost_micros), 0)::bigint,
           coalesce(sum(cpu_core_hours), 0),
           coalesce(sum(cpu_core_request_avg * minutes / 60), 0),
           coalesce(sum(cpu_core_usage_avg * minutes / 60), 0),
           coalesce(sum(ram_byte_hours) / 1073741824, 0),
           coalesce(sum(ram_byte_request_avg * minutes / 60) / 1073741824, 0),
           coalesce(sum(ram_byte_usage_avg * minutes / 60) / 1073741824, 0)
    FROM provider_allocations
    WHERE cluster = p_cluster AND aggregation = p_aggregation
      AND hour >= first_day::timestamp AT TIME ZONE 'UTC' AND hour < end_day::timestamp AT TIME ZONE 'UTC'
    GROUP BY cluster, aggregation, (hour AT TIME ZONE 'UTC')::date, namespace, entry_kind,
             coalesce(team, ''), coalesce(cost_center, '')
$$;
