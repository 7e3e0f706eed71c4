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

-- name: create_allocation_staging
CREATE TEMPORARY TABLE allocation_staging
    (LIKE provider_allocations INCLUDING DEFAULTS) ON COMMIT DROP;

-- name: merge_allocation_staging
INSERT INTO provider_allocations AS p
SELECT * FROM allocation_staging
ON CONFLICT (cluster, namespace, name, aggregation, hour) DO UPDATE SET
    entry_kind = EXCLUDED.entry_kind, controller_kind = EXCLUDED.controller_kind,
    controller = EXCLUDED.controller, pod = EXCLUDED.pod, container = EXCLUDED.container,
    node = EXCLUDED.node, data_start = EXCLUDED.data_start, data_end = EXCLUDED.data_end,
    minutes = EXCLUDED.minutes, cpu_cores = EXCLUDED.cpu_cores,
    cpu_core_request_avg = EXCLUDED.cpu_core_request_avg, cpu_core_usage_avg = EXCLUDED.cpu_core_usage_avg,
    cpu_core_hours = EXCLUDED.cpu_core_hours, ram_bytes = EXCLUDED.ram_bytes,
    ram_byte_request_avg = EXCLUDED.ram_byte_request_avg, ram_byte_usage_avg = EXCLUDED.ram_byte_usage_avg,
    ram_byte_hours = EXCLUDED.ram_byte_hours, gpu_count = EXCLUDED.gpu_count, gpu_hours = EXCLUDED.gpu_hours,
    pv_bytes = EXCLUDED.pv_bytes, pv_byte_hours = EXCLUDED.pv_byte_hours,
    network_transfer_bytes = EXCLUDED.network_transfer_bytes,
    network_receive_bytes = EXCLUDED.network_receive_bytes,
    cpu_cost_micros = EXCLUDED.cpu_cost_micros, gpu_cost_micros = EXCLUDED.gpu_cost_micros,
    ram_cost_micros = EXCLUDED.ram_cost_micros, pv_cost_micros = EXCLUDED.pv_cost_micros,
    network_cost_micros = EXCLUDED.network_cost_micros, lb_cost_micros = EXCLUDED.lb_cost_micros,
    shared_cost_micros = EXCLUDED.shared_cost_micros, external_cost_micros = EXCLUDED.external_cost_micros,
    total_cost_micros = EXCLUDED.total_cost_micros, team = EXCLUDED.team, cost_center = EXCLUDED.cost_center,
    pricebook_id = EXCLUDED.pricebook_id, currency = EXCLUDED.currency,
    is_finalized = EXCLUDED.is_finalized, collected_at = EXCLUDED.collected_at;

-- name: delete_vanished_allocations
-- Rows of the hour that OpenCost no longer reports (the hour is replaced, never half-merged).
DELETE FROM provider_allocations p
WHERE p.cluster = %(cluster)s AND p.aggregation = %(aggregation)s AND p.hour = %(hour)s
  AND NOT EXISTS (SELECT 1 FROM allocation_staging s
                  WHERE s.namespace = p.namespace AND s.name = p.name);

-- name: record_allocation_hour
INSERT INTO allocation_hours (cluster, aggregation, hour, is_finalized, row_count, pricebook_id, run_id)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, %(is_finalized)s, %(row_count)s, %(pricebook_id)s, %(run_id)s)
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET
    is_finalized = EXCLUDED.is_finalized, row_count = EXCLUDED.row_count,
    pricebook_id = EXCLUDED.pricebook_id, run_id = EXCLUDED.run_id, collected_at = now();

-- name: allocation_partitions
SELECT c.relname AS partition
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'provider_allocations'::regclass
ORDER BY c.relname;

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
