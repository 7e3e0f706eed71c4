-- Incremental daily rollups: each hour written is folded into its day's rollup in the hour's own
-- transaction (its old rows subtracted, its new rows added) instead of the day being rebuilt from
-- all its hours (functions/rollups.py). The fold and the rebuild must agree to the last digit, so
-- every figure of allocation_daily is now additive over hours:
--   hours          the hours with rows in the group: one hour adds 1 to each group it has rows in;
--                  a rollup row falls to 0 exactly when its last hour's rows leave (it is deleted)
--   *_cost_micros  sums of integers
--   *_core_hours   sums (a row's request or usage x minutes / 60 is computed per row, alike in both)
--   *_gib_hours    sums of byte-hours x 2^-30, written as the exact decimal 0.000000000931322574615478515625:
--                  it was sum / 1073741824, a numeric division rounded to about 16 digits, and a
--                  sum of rounded quotients is not the rounded quotient of the sum
--   currency       max(currency) is not additive (removing an hour can lower it): a day is folded
--                  only while every hour of it with rows is in one currency (or none), which the
--                  ledger tells; a day that mixes currencies is marked and rebuilt whole.

-- The rollup of the hours in [p_start, p_end), by UTC day: one hour for a fold, whole days for a
-- rebuild or `finops verify`, so the aggregation exists once. Aggregated per hour first, then per
-- day: `hours` is then a plain count (count(DISTINCT hour) cannot be hashed and sorted an hour of
-- 20,000 rows to disk), and every figure a sum of per-hour sums, exactly as the fold adds them.
CREATE FUNCTION finops_allocation_rollup_hours(p_cluster text, p_aggregation text, p_start timestamptz, p_end timestamptz)
RETURNS SETOF allocation_daily
LANGUAGE sql STABLE AS $$
    SELECT cluster, aggregation, day, namespace, entry_kind, team, cost_center,
           max(currency), count(*)::integer,
           sum(cpu)::bigint, sum(gpu)::bigint, sum(ram)::bigint, sum(pv)::bigint, sum(lb)::bigint,
           sum(network)::bigint, sum(total)::bigint,
           sum(billed_cores), sum(requested_cores), sum(used_cores),
           sum(billed_bytes) * 0.000000000931322574615478515625,
           sum(requested_bytes) * 0.000000000931322574615478515625,
           sum(used_bytes) * 0.000000000931322574615478515625
    FROM (
        SELECT cluster, aggregation, (hour AT TIME ZONE 'UTC')::date AS day, namespace, entry_kind,
               coalesce(team, '') AS team, coalesce(cost_center, '') AS cost_center, max(currency) AS currency,
               coalesce(sum(cpu_cost_micros), 0) AS cpu, coalesce(sum(gpu_cost_micros), 0) AS gpu,
               coalesce(sum(ram_cost_micros), 0) AS ram, coalesce(sum(pv_cost_micros), 0) AS pv,
               coalesce(sum(lb_cost_micros), 0) AS lb, coalesce(sum(network_cost_micros), 0) AS network,
               coalesce(sum(total_cost_micros), 0) AS total,
               coalesce(sum(cpu_core_hours), 0) AS billed_cores,
               coalesce(sum(cpu_core_request_avg * minutes / 60), 0) AS requested_cores,
               coalesce(sum(cpu_core_usage_avg * minutes / 60), 0) AS used_cores,
               coalesce(sum(ram_byte_hours), 0) AS billed_bytes,
               coalesce(sum(ram_byte_request_avg * minutes / 60), 0) AS requested_bytes,
               coalesce(sum(ram_byte_usage_avg * minutes / 60), 0) AS used_bytes
        FROM provider_allocations
        WHERE cluster = p_cluster AND aggregation = p_aggregation AND hour >= p_start AND hour < p_end
        GROUP BY cluster, aggregation, hour, namespace, entry_kind, coalesce(team, ''), coalesce(cost_center, '')
    ) per_hour
    GROUP BY cluster, aggregation, day, namespace, entry_kind, team, cost_center
$$;

CREATE OR REPLACE FUNCTION finops_allocation_rollup(p_cluster text, p_aggregation text, first_day date, end_day date)
RETURNS SETOF allocation_daily
LANGUAGE sql STABLE AS $$
    SELECT * FROM finops_allocation_rollup_hours(
        p_cluster, p_aggregation, first_day::timestamp AT TIME ZONE 'UTC', end_day::timestamp AT TIME ZONE 'UTC')
$$;

-- The GiB-hours stored so far were rounded quotients: every day that still has hourly rows is
-- rebuilt once, exactly, by the next run (or report). Days whose rows retention dropped keep
-- their rollups as they are (a rebuild would find no rows and empty them).
INSERT INTO allocation_dirty_days (cluster, aggregation, day)
SELECT d.cluster, d.aggregation, d.day
FROM (SELECT DISTINCT cluster, aggregation, day FROM allocation_daily) d
WHERE EXISTS (
    SELECT 1 FROM provider_allocations p
    WHERE p.cluster = d.cluster AND p.aggregation = d.aggregation
      AND p.hour >= d.day::timestamp AT TIME ZONE 'UTC' AND p.hour < (d.day + 1)::timestamp AT TIME ZONE 'UTC')
ON CONFLICT DO NOTHING;
