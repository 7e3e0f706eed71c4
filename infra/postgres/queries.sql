-- Named queries, each under a "-- name: <name>" header. Parameters are %(name)s.

-- name: insert_job_run
INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms,
                      outcome, http_status, counts, error)
VALUES (%(run_id)s, %(function)s, %(cluster)s, %(trigger)s, %(started_at)s, %(finished_at)s,
        %(duration_ms)s, %(outcome)s, %(http_status)s, %(counts)s, %(error)s)
ON CONFLICT (run_id) DO NOTHING;

-- name: recent_job_runs
SELECT run_id, function, cluster, trigger, started_at, duration_ms, outcome, http_status, counts, error
FROM job_runs
WHERE (%(function)s::text IS NULL OR function = %(function)s)
ORDER BY started_at DESC
LIMIT %(limit)s;

-- name: upsert_pricebook
INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode,
                        cpu_hour_micros, spot_cpu_hour_micros, ram_gb_hour_micros,
                        spot_ram_gb_hour_micros, pv_gb_hour_micros, gpu_hour_micros, network_gib_micros)
VALUES (%(cluster)s, %(namespace)s, %(name)s, %(uid)s, %(fingerprint)s, %(currency)s, %(valuation_mode)s,
        %(cpuHour)s, %(spotCPUHour)s, %(ramGbHour)s, %(spotRAMGbHour)s, %(pvGbHour)s, %(gpuHour)s,
        %(networkGiB)s)
ON CONFLICT (cluster, namespace, name, fingerprint) DO UPDATE SET uid = EXCLUDED.uid
RETURNING id;

-- name: finalized_hours
SELECT hour FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND is_finalized
  AND hour >= %(start)s AND hour < %(end)s;

-- name: ensure_allocation_partition
SELECT finops_ensure_allocation_partition(%(hour)s);

-- name: lock_allocation_hour
SELECT pg_advisory_xact_lock(hashtext('provider_allocations'), hashtext(%(cluster)s || '|' || %(aggregation)s || '|' || %(hour)s::text));

-- name: hour_is_finalized
SELECT is_finalized FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;

-- name: delete_allocation_hour
-- The hour is replaced whole (under its advisory lock): rows OpenCost no longer reports go too.
DELETE FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;

-- name: record_allocation_hour
INSERT INTO allocation_hours (cluster, aggregation, hour, is_finalized, row_count, pricebook_id, run_id)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, %(is_finalized)s, %(row_count)s, %(pricebook_id)s, %(run_id)s)
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET
    is_finalized = EXCLUDED.is_finalized, row_count = EXCLUDED.row_count,
    pricebook_id = EXCLUDED.pricebook_id, run_id = EXCLUDED.run_id, collected_at = now();

-- name: drop_allocation_partitions
SELECT finops_drop_allocation_partitions(%(cutoff)s) AS partition;

-- name: cost_by_owner
-- The local stack's summary: cost per team and namespace over [start, end), idle on its own line.
SELECT * FROM (
    SELECT CASE WHEN namespace = '' THEN '(' || entry_kind || ')'
                ELSE coalesce(team, '__unallocated__') END AS team,
           CASE WHEN namespace = '' THEN '__' || entry_kind || '__' ELSE namespace END AS namespace,
           max(currency) AS currency,
           count(DISTINCT hour) AS hours,
           sum(coalesce(cpu_cost_micros, 0) + coalesce(gpu_cost_micros, 0))::bigint AS cpu_gpu_micros,
           sum(coalesce(ram_cost_micros, 0))::bigint AS ram_micros,
           sum(coalesce(pv_cost_micros, 0) + coalesce(lb_cost_micros, 0) + coalesce(network_cost_micros, 0))::bigint
               AS other_micros,
           sum(coalesce(total_cost_micros, 0))::bigint AS total_micros
    FROM provider_allocations
    WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
    GROUP BY 1, 2
) owners
ORDER BY team LIKE '(%%', team = '__unallocated__', team, namespace;
