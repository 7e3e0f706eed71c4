-- Named queries of collect allocations: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: upsert_pricebook
-- A pricing version: a PriceBook's rates, or (source 'opencost') OpenCost's figures in a currency.
INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode, source,
                        cpu_hour, spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour,
                        network_gib, lb_hour)
VALUES (%(cluster)s, %(namespace)s, %(name)s, %(uid)s, %(fingerprint)s, %(currency)s, %(valuation_mode)s,
        %(source)s, %(cpuHour)s, %(spotCPUHour)s, %(ramGbHour)s, %(spotRAMGbHour)s, %(pvGbHour)s, %(gpuHour)s,
        %(networkGiB)s, %(lbHour)s)
ON CONFLICT (cluster, namespace, name, fingerprint) DO UPDATE SET uid = EXCLUDED.uid
RETURNING id;

-- name: ledger_hours
-- The ledger from ``start`` on (an hour without a row is missing).
SELECT hour, state, empty_since FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s;

-- name: ledger_start
-- The first hour the collector ever stored or gave up (hours before it were never asked for).
SELECT min(hour) AS hour FROM allocation_hours WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s;

-- name: give_up_before
-- Gives up, in one statement, every hour in [start, horizon) that is neither final nor lost
-- (missing: no row; or still open): OpenCost no longer answers for them. Rows stored before (an
-- open hour) are kept as they are. Returns the hours given up.
INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, reason)
SELECT %(cluster)s, %(aggregation)s, h, 'lost', 0, %(reason)s
FROM generate_series(%(start)s::timestamptz, %(horizon)s::timestamptz - interval '1 hour', interval '1 hour') h
LEFT JOIN allocation_hours l ON l.cluster = %(cluster)s AND l.aggregation = %(aggregation)s AND l.hour = h
WHERE l.state IS NULL OR l.state = 'open'
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET state = 'lost', reason = EXCLUDED.reason, collected_at = now()
WHERE allocation_hours.state = 'open'
RETURNING hour;

-- name: set_statement_timeout
-- For the rest of the current transaction only.
SELECT set_config('statement_timeout', %(milliseconds)s::text, true);

-- name: ensure_allocation_partition
SELECT finops_ensure_allocation_partition(%(hour)s);

-- name: lock_allocation_hour
SELECT pg_advisory_xact_lock(hashtext('provider_allocations'), hashtext(%(cluster)s || '|' || %(aggregation)s || '|' || %(hour)s::text));

-- name: hour_state
SELECT state, empty_since, row_count FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;

-- name: delete_allocation_hour
-- The hour is replaced whole (under its advisory lock): rows OpenCost no longer reports go too.
DELETE FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;

-- name: fill_hour_owners
-- A streamed hour's rows written before their namespace's labels arrived (e.g. its unmounted
-- volumes, sorted first) take the namespace's owner, in the hour's transaction (primary key scan).
UPDATE provider_allocations pa SET team = o.team, cost_center = o.cost_center
FROM unnest(%(namespaces)s::text[], %(teams)s::text[], %(cost_centers)s::text[]) AS o (namespace, team, cost_center)
WHERE pa.cluster = %(cluster)s AND pa.aggregation = %(aggregation)s AND pa.hour = %(hour)s
  AND pa.namespace = o.namespace AND pa.team IS NULL AND pa.cost_center IS NULL;

-- name: record_allocation_hour
INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, pricebook_id, currency, run_id, reason,
                              empty_since, source)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, %(state)s, %(row_count)s, %(pricebook_id)s, %(currency)s, %(run_id)s,
        %(reason)s, %(empty_since)s, %(source)s)
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET
    state = EXCLUDED.state, row_count = EXCLUDED.row_count, pricebook_id = EXCLUDED.pricebook_id,
    currency = EXCLUDED.currency, run_id = EXCLUDED.run_id, reason = EXCLUDED.reason,
    empty_since = EXCLUDED.empty_since, source = EXCLUDED.source, collected_at = now(), fleet_uploaded_at = NULL;

-- name: record_empty_hour
-- OpenCost answered the hour with no allocations: its rows (if any) are kept, it stays open (or
-- is given up) with the reason, and the first empty answer is remembered.
INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, run_id, reason, empty_since, source)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, %(state)s, 0, %(run_id)s, %(reason)s, %(empty_since)s, %(source)s)
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET
    state = EXCLUDED.state, run_id = EXCLUDED.run_id, reason = EXCLUDED.reason,
    empty_since = coalesce(allocation_hours.empty_since, EXCLUDED.empty_since), collected_at = now();

-- name: drop_allocation_partitions
SELECT finops_drop_allocation_partitions(%(cutoff)s) AS partition;

-- name: delete_hour_assets
-- The hour's assets are replaced with its rows, in its transaction (usecases.collect_allocations.assets).
DELETE FROM cluster_assets
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;

-- name: record_hour_assets
-- How many assets the hour stored; NULL when none were fetched (no assets API, Prometheus source).
UPDATE allocation_hours SET asset_count = %(asset_count)s
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;

-- name: delete_expired_cluster_assets
-- With the allocations' monthly partitions (ALLOCATION_RETENTION_MONTHS): the same cutoff.
DELETE FROM cluster_assets WHERE hour < %(cutoff)s;

-- name: delete_expired_node_days
WITH rows AS (DELETE FROM allocation_node_daily WHERE day < %(cutoff)s)
DELETE FROM allocation_node_days WHERE day < %(cutoff)s;

-- name: ledger_scopes
-- Every (cluster, aggregation) with allocation data, with the days it spans.
SELECT cluster, aggregation, min(day) AS first_day, max(day) AS last_day FROM (
    SELECT cluster, aggregation, (hour AT TIME ZONE 'UTC')::date AS day FROM allocation_hours
    UNION ALL SELECT cluster, aggregation, (hour AT TIME ZONE 'UTC')::date FROM provider_allocations
    UNION ALL SELECT cluster, aggregation, day FROM allocation_daily
) days
WHERE %(cluster)s::text IS NULL OR cluster = %(cluster)s
GROUP BY cluster, aggregation
ORDER BY cluster, aggregation;

-- name: verify_ledger
-- Hours where the ledger and the rows disagree: rows without a ledger hour, a row count that
-- differs, rows whose finality is not the hour's.
SELECT coalesce(l.hour, r.hour) AS hour, l.state, l.row_count, coalesce(r.rows, 0) AS rows,
       coalesce(r.final_rows, 0) AS final_rows
FROM (SELECT hour, state, row_count FROM allocation_hours
      WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s) l
FULL JOIN (SELECT hour, count(*) AS rows, count(*) FILTER (WHERE is_finalized) AS final_rows
           FROM provider_allocations WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s
           GROUP BY hour) r ON r.hour = l.hour
WHERE l.hour IS NULL
   OR l.row_count <> coalesce(r.rows, 0)
   OR (l.state = 'final' AND coalesce(r.final_rows, 0) <> coalesce(r.rows, 0))
   OR (l.state <> 'final' AND coalesce(r.final_rows, 0) > 0)
ORDER BY 1;

-- name: verify_rollups
-- Rollup rows that differ from the rollup of the hourly rows (both ways), per day.
SELECT problem, day, namespace, entry_kind, team, total_cost_micros FROM (
    (SELECT 'missing or wrong in allocation_daily' AS problem, * FROM (
        SELECT * FROM finops_allocation_rollup(%(cluster)s, %(aggregation)s, %(first_day)s, %(end_day)s)
        EXCEPT SELECT * FROM allocation_daily
        WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(first_day)s AND day < %(end_day)s
    ) a)
    UNION ALL
    (SELECT 'stale in allocation_daily', * FROM (
        SELECT * FROM allocation_daily
        WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(first_day)s AND day < %(end_day)s
        EXCEPT SELECT * FROM finops_allocation_rollup(%(cluster)s, %(aggregation)s, %(first_day)s, %(end_day)s)
    ) b)
) found
ORDER BY day, namespace, problem;

-- name: verify_app_days
-- Each application's recorded days against its own rows summed again now: a day recorded in a
-- scope that is no longer the application's (the recorder rebuilds the series on its next run),
-- or whose hours, any cost or currency differ from its rows (rows changed after it was recorded).
-- Workload idle is not summed again (it needs the rows' requests and usage).
WITH recorded AS (
    SELECT d.* FROM app_daily_costs d WHERE d.cluster = %(cluster)s AND d.aggregation = %(aggregation)s
),
span AS (
    SELECT min(day)::timestamp AT TIME ZONE 'UTC' AS start, (max(day) + 1)::timestamp AT TIME ZONE 'UTC' AS "end"
    FROM recorded
),
summed AS (
    SELECT a.app_namespace, a.app_name, (a.hour AT TIME ZONE 'UTC')::date AS day, count(DISTINCT a.hour) AS hours,
           coalesce(sum(a.cpu_cost_micros), 0) AS cpu, coalesce(sum(a.gpu_cost_micros), 0) AS gpu,
           coalesce(sum(a.ram_cost_micros), 0) AS ram, coalesce(sum(a.pv_cost_micros), 0) AS pv,
           coalesce(sum(a.network_cost_micros), 0) AS network, coalesce(sum(a.lb_cost_micros), 0) AS lb,
           coalesce(sum(a.shared_cost_micros), 0) AS shared, coalesce(sum(a.external_cost_micros), 0) AS external,
           coalesce(sum(a.total_cost_micros), 0) AS total, max(a.currency) AS currency
    FROM span, finops_app_allocations(%(cluster)s, %(aggregation)s, span.start, span."end") a
    GROUP BY 1, 2, 3
)
SELECT r.day, r.app_namespace, r.app_name,
       CASE WHEN s.fingerprint IS DISTINCT FROM r.scope_fingerprint
            THEN 'recorded in a scope that is no longer the application''s (the next collect_allocations run rebuilds it)'
            ELSE 'differs from its rows summed again' END AS problem,
       r.hours, coalesce(n.hours, 0) AS hours_now, r.total_cost_micros, coalesce(n.total, 0) AS total_now
FROM recorded r
LEFT JOIN finops_app_scopes(%(cluster)s) s ON s.app_namespace = r.app_namespace AND s.app_name = r.app_name
LEFT JOIN summed n ON n.app_namespace = r.app_namespace AND n.app_name = r.app_name AND n.day = r.day
WHERE s.fingerprint IS DISTINCT FROM r.scope_fingerprint
   OR (r.hours, r.cpu_cost_micros, r.gpu_cost_micros, r.ram_cost_micros, r.pv_cost_micros, r.network_cost_micros,
       r.lb_cost_micros, r.shared_cost_micros, r.external_cost_micros, r.total_cost_micros, r.currency)
      IS DISTINCT FROM
      (coalesce(n.hours, 0), coalesce(n.cpu, 0), coalesce(n.gpu, 0), coalesce(n.ram, 0), coalesce(n.pv, 0),
       coalesce(n.network, 0), coalesce(n.lb, 0), coalesce(n.shared, 0), coalesce(n.external, 0), coalesce(n.total, 0),
       n.currency)
ORDER BY r.day, r.app_namespace, r.app_name;

-- ==== Leases and retention (locks that survive PgBouncer's transaction pooling; bounded deletes) ====

-- name: delete_expired_job_runs
DELETE FROM job_runs WHERE run_id IN (
    SELECT run_id FROM job_runs WHERE cluster = %(cluster)s AND started_at < %(cutoff)s LIMIT %(limit)s
);

-- name: delete_expired_cost_actuals
-- Never an application's latest record (its current actual, and what tells the backfill it is known).
DELETE FROM cost_actuals WHERE id IN (
    SELECT a.id FROM cost_actuals a
    WHERE a.cluster = %(cluster)s AND a.measured_at < %(cutoff)s
      AND EXISTS (SELECT 1 FROM cost_actuals n
                  WHERE n.cluster = a.cluster AND n.app_namespace = a.app_namespace AND n.app_name = a.app_name
                    AND (n.measured_at, n.id) > (a.measured_at, a.id))
    LIMIT %(limit)s
);

-- name: delete_expired_sync_events
-- Closed events only (a pending or measuring one is still to be measured), and never one a kept
-- record points to.
DELETE FROM sync_events WHERE id IN (
    SELECT e.id FROM sync_events e
    WHERE e.cluster = %(cluster)s AND e.status IN ('measured', 'failed') AND e.received_at < %(cutoff)s
      AND NOT EXISTS (SELECT 1 FROM cost_actuals a WHERE a.sync_event_id = e.id)
    LIMIT %(limit)s
);

-- ==== The fleet bucket (usecases.collect_allocations.fleet) ====

-- name: fleet_pending_hours
-- Final hours not yet written to the fleet bucket, oldest first; only those whose rows are still
-- stored (retention may have dropped an old month's partition: its hours have nothing to write).
SELECT h.hour, h.collected_at FROM allocation_hours h
WHERE h.cluster = %(cluster)s AND h.aggregation = %(aggregation)s AND h.state = 'final' AND h.fleet_uploaded_at IS NULL
  AND EXISTS (SELECT 1 FROM provider_allocations p
              WHERE p.cluster = h.cluster AND p.aggregation = h.aggregation AND p.hour = h.hour)
ORDER BY h.hour;

-- name: fleet_hour_rows
-- One hour's stored rows, in the order of the natural key (the same bytes for the same rows), their
-- columns in infra.fleet.COLUMNS' order.
SELECT cluster, namespace, name, aggregation, entry_kind, controller_kind, controller, pod, container, node,
       hour, data_start, data_end,
       minutes::text, cpu_cores::text, cpu_core_request_avg::text, cpu_core_usage_avg::text, cpu_core_hours::text,
       ram_bytes::text, ram_byte_request_avg::text, ram_byte_usage_avg::text, ram_byte_hours::text,
       gpu_count::text, gpu_hours::text, pv_bytes::text, pv_byte_hours::text,
       network_transfer_bytes::text, network_receive_bytes::text,
       cpu_cost_micros, gpu_cost_micros, ram_cost_micros, pv_cost_micros, network_cost_micros, lb_cost_micros,
       shared_cost_micros, external_cost_micros, total_cost_micros,
       team, cost_center, pricebook_id, currency, source
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s
ORDER BY namespace, name;

-- name: mark_fleet_uploaded
-- The hour's file is in the bucket; only while the hour is still the one read (not rewritten since).
UPDATE allocation_hours SET fleet_uploaded_at = now()
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s AND state = 'final'
  AND collected_at = %(collected_at)s;

-- name: insert_gpu_idle
-- One idle row per GPU model: the unused part of its GPUs' cost and GPU-hours.
INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind, minutes, gpu_count,
                                  gpu_hours, cpu_cost_micros, gpu_cost_micros, ram_cost_micros, pv_cost_micros,
                                  network_cost_micros, lb_cost_micros, shared_cost_micros, external_cost_micros,
                                  total_cost_micros, pricebook_id, currency, is_finalized, collected_at, source,
                                  gpu_model)
SELECT %(cluster)s, '', i.name, %(aggregation)s, %(hour)s, 'idle', 60, i.hours, i.hours, 0, i.micros, 0, 0, 0, 0, 0, 0,
       i.micros, %(pricebook_id)s, %(currency)s, %(finalized)s, %(collected_at)s, %(source)s, i.model
FROM unnest(%(names)s::text[], %(models)s::text[], %(micros)s::bigint[], %(hours)s::numeric[])
    AS i (name, model, micros, hours);

-- name: record_hour_gpus
-- The basis and MIG rule the hour's GPUs were split by (NULL: not split).
UPDATE allocation_hours SET gpu_basis = %(gpu_basis)s, gpu_mig_by = %(gpu_mig_by)s
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;
