-- Named queries of rollups: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: mark_dirty_day
INSERT INTO allocation_dirty_days (cluster, aggregation, day)
VALUES (%(cluster)s, %(aggregation)s, (%(hour)s::timestamptz AT TIME ZONE 'UTC')::date)
ON CONFLICT (cluster, aggregation, day) DO UPDATE SET marked_at = now();

-- name: lock_allocation_day
SELECT pg_advisory_xact_lock(hashtext('allocation_daily'), hashtext(%(cluster)s || '|' || %(aggregation)s || '|' || %(day)s::text));

-- name: delete_allocation_day
DELETE FROM allocation_daily WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day = %(day)s;

-- name: rollup_allocation_day
-- Recompute one UTC day from its hourly rows (open, final or lost: the rollup follows the rows).
INSERT INTO allocation_daily
SELECT * FROM finops_allocation_rollup(%(cluster)s, %(aggregation)s, %(day)s::date, %(day)s::date + 1);

-- name: clear_dirty_day
DELETE FROM allocation_dirty_days WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day = %(day)s;

-- name: marked_days
-- Days whose rollup must be rebuilt, of one cluster and aggregation or of all.
SELECT cluster, aggregation, day FROM allocation_dirty_days
WHERE (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
  AND (%(aggregation)s::text IS NULL OR aggregation = %(aggregation)s)
ORDER BY cluster, aggregation, day;

-- name: hour_foldable
-- Whether an hour's write can be folded into its day's rollup (asked under the day's lock): the
-- day is not marked for a rebuild, and every hour of it with rows (this hour's old rows included)
-- is priced in the new rows' currency, or all in none, so no rollup row's currency changes.
SELECT NOT EXISTS (
           SELECT 1 FROM allocation_dirty_days
           WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day = %(day)s)
       AND NOT EXISTS (
           SELECT 1 FROM allocation_hours
           WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s
             AND hour >= %(day)s::date::timestamp AT TIME ZONE 'UTC'
             AND hour < (%(day)s::date + 1)::timestamp AT TIME ZONE 'UTC'
             AND row_count > 0 AND currency IS DISTINCT FROM %(currency)s::char(3)) AS foldable;

-- name: unfold_allocation_hour
-- Subtracts an hour's stored rows from its day's rollup, before they are deleted; a rollup row
-- left with no hour is deleted. ``missing``: the hour's groups whose rollup row is absent or holds
-- fewer hours (the rollup disagreed with the rows; the caller marks the day for a rebuild).
WITH part AS (
    SELECT * FROM finops_allocation_rollup_hours(
        %(cluster)s, %(aggregation)s, %(hour)s::timestamptz, %(hour)s::timestamptz + interval '1 hour')
), gone AS (
    DELETE FROM allocation_daily d USING part p
    WHERE d.cluster = p.cluster AND d.aggregation = p.aggregation AND d.day = p.day AND d.namespace = p.namespace
      AND d.entry_kind = p.entry_kind AND d.team = p.team AND d.cost_center = p.cost_center
      AND d.hours = p.hours
    RETURNING 1
), kept AS (
    UPDATE allocation_daily d SET
        hours = d.hours - p.hours,
        cpu_cost_micros = d.cpu_cost_micros - p.cpu_cost_micros,
        gpu_cost_micros = d.gpu_cost_micros - p.gpu_cost_micros,
        ram_cost_micros = d.ram_cost_micros - p.ram_cost_micros,
        pv_cost_micros = d.pv_cost_micros - p.pv_cost_micros,
        lb_cost_micros = d.lb_cost_micros - p.lb_cost_micros,
        network_cost_micros = d.network_cost_micros - p.network_cost_micros,
        total_cost_micros = d.total_cost_micros - p.total_cost_micros,
        billed_core_hours = d.billed_core_hours - p.billed_core_hours,
        requested_core_hours = d.requested_core_hours - p.requested_core_hours,
        used_core_hours = d.used_core_hours - p.used_core_hours,
        billed_gib_hours = d.billed_gib_hours - p.billed_gib_hours,
        requested_gib_hours = d.requested_gib_hours - p.requested_gib_hours,
        used_gib_hours = d.used_gib_hours - p.used_gib_hours
    FROM part p
    WHERE d.cluster = p.cluster AND d.aggregation = p.aggregation AND d.day = p.day AND d.namespace = p.namespace
      AND d.entry_kind = p.entry_kind AND d.team = p.team AND d.cost_center = p.cost_center
      AND d.hours > p.hours
    RETURNING 1
)
SELECT (SELECT count(*) FROM part) - (SELECT count(*) FROM gone) - (SELECT count(*) FROM kept) AS missing;

-- name: fold_allocation_hour
-- Adds an hour's rows, just written, to its day's rollup (the currency is the day's one: see
-- hour_foldable).
INSERT INTO allocation_daily AS d
SELECT * FROM finops_allocation_rollup_hours(
    %(cluster)s, %(aggregation)s, %(hour)s::timestamptz, %(hour)s::timestamptz + interval '1 hour')
ON CONFLICT (cluster, aggregation, day, namespace, entry_kind, team, cost_center) DO UPDATE SET
    hours = d.hours + EXCLUDED.hours,
    cpu_cost_micros = d.cpu_cost_micros + EXCLUDED.cpu_cost_micros,
    gpu_cost_micros = d.gpu_cost_micros + EXCLUDED.gpu_cost_micros,
    ram_cost_micros = d.ram_cost_micros + EXCLUDED.ram_cost_micros,
    pv_cost_micros = d.pv_cost_micros + EXCLUDED.pv_cost_micros,
    lb_cost_micros = d.lb_cost_micros + EXCLUDED.lb_cost_micros,
    network_cost_micros = d.network_cost_micros + EXCLUDED.network_cost_micros,
    total_cost_micros = d.total_cost_micros + EXCLUDED.total_cost_micros,
    billed_core_hours = d.billed_core_hours + EXCLUDED.billed_core_hours,
    requested_core_hours = d.requested_core_hours + EXCLUDED.requested_core_hours,
    used_core_hours = d.used_core_hours + EXCLUDED.used_core_hours,
    billed_gib_hours = d.billed_gib_hours + EXCLUDED.billed_gib_hours,
    requested_gib_hours = d.requested_gib_hours + EXCLUDED.requested_gib_hours,
    used_gib_hours = d.used_gib_hours + EXCLUDED.used_gib_hours;
