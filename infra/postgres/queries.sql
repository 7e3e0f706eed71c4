-- Named queries, each under a "-- name: <name>" header. Parameters are %(name)s.

-- name: schema_migrations_present
SELECT to_regclass('schema_migrations') IS NOT NULL AS present;

-- name: schema_migrations_applied
SELECT version, checksum FROM schema_migrations;

-- name: insert_job_run
-- A run recorded early (the webhook's, with its event) that failed afterwards is replaced.
INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms,
                      outcome, http_status, counts, error)
VALUES (%(run_id)s, %(function)s, %(cluster)s, %(trigger)s, %(started_at)s, %(finished_at)s,
        %(duration_ms)s, %(outcome)s, %(http_status)s, %(counts)s, %(error)s)
ON CONFLICT (run_id) DO UPDATE
SET finished_at = EXCLUDED.finished_at, duration_ms = EXCLUDED.duration_ms, outcome = EXCLUDED.outcome,
    http_status = EXCLUDED.http_status, counts = EXCLUDED.counts, error = EXCLUDED.error;

-- name: recent_job_runs
SELECT run_id, function, cluster, trigger, started_at, duration_ms, outcome, http_status, counts, error
FROM job_runs
WHERE (%(function)s::text IS NULL OR function = %(function)s)
ORDER BY started_at DESC
LIMIT %(limit)s;

-- name: upsert_pricebook
INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode,
                        cpu_hour, spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour,
                        network_gib, lb_hour)
VALUES (%(cluster)s, %(namespace)s, %(name)s, %(uid)s, %(fingerprint)s, %(currency)s, %(valuation_mode)s,
        %(cpuHour)s, %(spotCPUHour)s, %(ramGbHour)s, %(spotRAMGbHour)s, %(pvGbHour)s, %(gpuHour)s,
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

-- name: mark_dirty_day
INSERT INTO allocation_dirty_days (cluster, aggregation, day)
VALUES (%(cluster)s, %(aggregation)s, (%(hour)s::timestamptz AT TIME ZONE 'UTC')::date)
ON CONFLICT (cluster, aggregation, day) DO UPDATE SET marked_at = now();

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
    empty_since = EXCLUDED.empty_since, source = EXCLUDED.source, collected_at = now();

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
-- The hour's assets are replaced with its rows, in its transaction (functions.collect_allocations.assets).
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

-- name: insert_sync_event
INSERT INTO sync_events (cluster, app_namespace, app_name, project, destination_namespace, revision,
                         finished_at, resources)
VALUES (%(cluster)s, %(app_namespace)s, %(app_name)s, %(project)s, %(destination_namespace)s, %(revision)s,
        %(finished_at)s, %(resources)s)
ON CONFLICT (cluster, app_namespace, app_name, revision, finished_at) DO NOTHING
RETURNING id, status;

-- name: find_sync_event
SELECT id, status FROM sync_events
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
  AND revision = %(revision)s AND finished_at = %(finished_at)s;

-- name: accept_sync_webhook
-- A webhook's 202 in one statement (functions.appcost.syncs.accept_recorded): its event inserted
-- (a replay finds the stored one by the unique key's index) and its run's job_runs row (%(run)s,
-- the row as a JSON object), whose counts gain the event's id and whether it was a replay. No row
-- when a concurrent statement committed the same event after this one's snapshot was taken: the
-- caller then reads the event with find_sync_event and records its run itself.
WITH inserted AS (
    INSERT INTO sync_events (cluster, app_namespace, app_name, project, destination_namespace, revision,
                             finished_at, resources)
    VALUES (%(cluster)s, %(app_namespace)s, %(app_name)s, %(project)s, %(destination_namespace)s, %(revision)s,
            %(finished_at)s, %(resources)s)
    ON CONFLICT (cluster, app_namespace, app_name, revision, finished_at) DO NOTHING
    RETURNING id, status
), event AS (
    SELECT id, status, true AS new FROM inserted
    UNION ALL
    SELECT id, status, false AS new FROM sync_events
    WHERE NOT EXISTS (SELECT FROM inserted)
      AND cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
      AND revision = %(revision)s AND finished_at = %(finished_at)s
), recorded AS (
    INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms,
                          outcome, http_status, counts, error)
    SELECT r.run_id, r.function, r.cluster, r.trigger, r.started_at, r.finished_at, r.duration_ms, r.outcome,
           r.http_status, coalesce(r.counts, '{}') || jsonb_build_object('sync_event', e.id, 'replay', NOT e.new),
           r.error
    FROM jsonb_populate_record(NULL::job_runs, %(run)s::jsonb) r, event e
    ON CONFLICT (run_id) DO NOTHING
)
SELECT id, status, new FROM event;

-- name: claim_sync_event
-- Take an accepted event for measurement: pending, or claimed by a measurement that died.
UPDATE sync_events
SET status = 'measuring', claimed_at = now(), attempts = attempts + 1
WHERE id = %(id)s
  AND (status = 'pending' OR (status = 'measuring' AND claimed_at < now() - make_interval(secs => %(stale_seconds)s)))
RETURNING *;

-- name: release_sync_event
-- A measurement that failed: back to pending for the next delivery or re-drive; given up only
-- after many attempts over a whole day (retries cannot exhaust an event in minutes).
UPDATE sync_events
SET status = CASE WHEN attempts >= %(max_attempts)s AND received_at < now() - interval '24 hours'
                  THEN 'failed' ELSE 'pending' END,
    claimed_at = NULL, last_error = %(error)s
WHERE id = %(id)s AND status = 'measuring';

-- name: complete_sync_event
UPDATE sync_events SET status = 'measured', measured_at = now(), last_error = NULL WHERE id = %(id)s;

-- name: overdue_sync_events
-- Accepted but not measured after the grace period (a lost delivery, a killed pod).
SELECT id FROM sync_events
WHERE cluster = %(cluster)s
  AND ((status = 'pending' AND received_at < now() - make_interval(secs => %(older_than_seconds)s))
    OR (status = 'measuring' AND claimed_at < now() - make_interval(secs => %(older_than_seconds)s)))
ORDER BY received_at
LIMIT %(limit)s;

-- name: insert_cost_actual
INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,
                          sync_event_id, revision, measured_at, window_start, window_end, measured_hours,
                          cost_micros, monthly_micros, breakdown, idle_micros, idle_monthly_micros,
                          efficiency, pod_count, share)
VALUES (%(cluster)s, %(app_namespace)s, %(app_name)s, %(destination_namespace)s, %(measured_on)s, %(scope)s,
        %(sync_event_id)s, %(revision)s, %(measured_at)s, %(window_start)s, %(window_end)s, %(measured_hours)s,
        %(cost_micros)s, %(monthly_micros)s, %(breakdown)s, %(idle_micros)s, %(idle_monthly_micros)s,
        %(efficiency)s, %(pod_count)s, %(share)s)
ON CONFLICT (sync_event_id) DO NOTHING
RETURNING id;

-- name: lock_application
SELECT pg_advisory_xact_lock(hashtext('cost_actuals'), hashtext(%(cluster)s || '|' || %(app_namespace)s || '/' || %(app_name)s));

-- name: insert_install_cost_actual
-- Backfill's conditional insert: only while the application still has no record at all, so a
-- sync that landed meanwhile is never overwritten (callers hold lock_application).
INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,
                          sync_event_id, revision, measured_at, window_start, window_end, measured_hours,
                          cost_micros, monthly_micros, breakdown, idle_micros, idle_monthly_micros,
                          efficiency, pod_count, share)
SELECT %(cluster)s, %(app_namespace)s, %(app_name)s, %(destination_namespace)s, 'install', %(scope)s,
       NULL, %(revision)s, %(measured_at)s, %(window_start)s, %(window_end)s, %(measured_hours)s,
       %(cost_micros)s, %(monthly_micros)s, %(breakdown)s, %(idle_micros)s, %(idle_monthly_micros)s,
       %(efficiency)s, %(pod_count)s, %(share)s
WHERE NOT EXISTS (SELECT 1 FROM cost_actuals
                  WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s)
RETURNING id;

-- name: applications_with_records
SELECT DISTINCT app_namespace, app_name FROM cost_actuals WHERE cluster = %(cluster)s;

-- name: delete_application_records
DELETE FROM cost_actuals WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s;

-- name: latest_cost_actuals
-- The application's newest records, newest first (the actual is the first; the trend compares).
SELECT * FROM cost_actuals
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
ORDER BY measured_at DESC, id DESC
LIMIT %(limit)s;


-- name: backfill_progress
SELECT started_at, finished_at FROM backfill_progress WHERE cluster = %(cluster)s;

-- name: start_backfill
INSERT INTO backfill_progress (cluster, started_at, finished_at) VALUES (%(cluster)s, %(now)s, NULL)
ON CONFLICT (cluster) DO UPDATE SET started_at = EXCLUDED.started_at, finished_at = NULL;

-- name: reset_backfill_namespaces
DELETE FROM backfill_namespaces WHERE cluster = %(cluster)s;

-- name: finish_backfill
UPDATE backfill_progress SET finished_at = %(now)s WHERE cluster = %(cluster)s;

-- name: backfill_namespace_states
SELECT namespace, attempts, next_attempt_at, status, last_error FROM backfill_namespaces WHERE cluster = %(cluster)s;

-- name: upsert_backfill_namespace
INSERT INTO backfill_namespaces (cluster, namespace, attempts, next_attempt_at, status, last_error)
VALUES (%(cluster)s, %(namespace)s, %(attempts)s, %(next_attempt_at)s, %(status)s, %(last_error)s)
ON CONFLICT (cluster, namespace) DO UPDATE SET
    attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at,
    status = EXCLUDED.status, last_error = EXCLUDED.last_error;

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

-- name: chargeback_rows
-- A period's cost per cluster, namespace and owner, from the daily rollups (one SQL aggregation).
SELECT cluster, namespace, entry_kind, nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       sum(total_cost_micros) AS micros, max(currency) AS currency, min(currency) AS min_currency
FROM allocation_daily
WHERE aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
GROUP BY cluster, namespace, entry_kind, team, cost_center;

-- name: owner_namespaces
-- A period's namespaces with their owner, cost and requests against usage (the team report).
SELECT cluster, namespace, nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       sum(total_cost_micros) AS micros,
       sum(billed_core_hours) AS billed_core_hours, sum(used_core_hours) AS used_core_hours,
       sum(requested_core_hours) AS requested_core_hours,
       sum(billed_gib_hours) AS billed_gib_hours, sum(used_gib_hours) AS used_gib_hours,
       sum(requested_gib_hours) AS requested_gib_hours
FROM allocation_daily
WHERE aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s AND entry_kind <> 'idle'
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
GROUP BY cluster, namespace, team, cost_center
ORDER BY micros DESC;

-- name: daily_owner_costs
SELECT day, nullif(team, '') AS owner, entry_kind, sum(total_cost_micros) AS micros
FROM allocation_daily
WHERE aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
GROUP BY day, team, entry_kind
ORDER BY day, owner;

-- name: report_hour_ledger
-- A report's coverage (finops.coverage): the hour ledger over [start, end) as runs of consecutive
-- hours of one cluster alike in state, reason, currency and pricing (unpriced: rows, no currency).
SELECT cluster, state, reason, currency, unpriced, min(hour) AS first, max(hour) AS last,
       sum(row_count)::bigint AS row_count
FROM (
    SELECT cluster, state, reason, btrim(currency) AS currency, row_count, hour,
           (row_count > 0 AND currency IS NULL) AS unpriced,
           hour - interval '1 hour' * row_number() OVER (
               PARTITION BY cluster, state, reason, currency, (row_count > 0 AND currency IS NULL) ORDER BY hour
           ) AS run
    FROM allocation_hours
    WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
      AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
) ledger
GROUP BY cluster, state, reason, currency, unpriced, run
ORDER BY cluster, first;

-- name: report_rollup_clusters
-- The clusters with daily rollups over [start, end) (days), the currencies their rows are priced
-- in, and the days holding cost in no currency (collected while no PriceBook was active).
SELECT cluster,
       coalesce(array_agg(DISTINCT btrim(currency)) FILTER (WHERE currency IS NOT NULL), '{}') AS currencies,
       coalesce(array_agg(DISTINCT day) FILTER (WHERE currency IS NULL AND total_cost_micros <> 0), '{}')
           AS unpriced_days
FROM allocation_daily
WHERE aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
GROUP BY cluster
ORDER BY cluster;

-- name: namespace_costs
-- Namespaces with their owner and cost over [start, end), from the daily rollups.
SELECT cluster, namespace, max(nullif(team, '')) AS owner, max(nullif(cost_center, '')) AS cost_center,
       sum(total_cost_micros) AS micros, count(DISTINCT day) AS days
FROM allocation_daily
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s
  AND entry_kind <> 'idle' AND namespace <> ''
  AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
GROUP BY cluster, namespace
ORDER BY micros DESC;

-- name: namespace_apps
-- The latest record of each application deploying to a namespace.
SELECT DISTINCT ON (app_namespace, app_name) *
FROM cost_actuals
WHERE cluster = %(cluster)s AND destination_namespace = %(namespace)s
ORDER BY app_namespace, app_name, measured_at DESC, id DESC;

-- name: idle_ranking
-- Applications ranked by the workload idle of their own pods (latest record each; namespace-only
-- records are not ranked).
SELECT * FROM (
    SELECT DISTINCT ON (app_namespace, app_name) *
    FROM cost_actuals
    WHERE cluster = %(cluster)s
    ORDER BY app_namespace, app_name, measured_at DESC, id DESC
) latest
WHERE scope = 'application'
ORDER BY (share ->> 'idle_monthly_micros')::bigint DESC, app_namespace, app_name
LIMIT %(limit)s;

-- name: rightsizing_rows
-- The stored rows of a VPA target's containers over [start, end): its current pods by name, and
-- its earlier ones by the controller OpenCost reported (functions/insights/rightsizing.py).
SELECT container, hour, minutes, currency,
       cpu_core_request_avg, cpu_core_usage_avg, cpu_core_hours, cpu_cost_micros,
       ram_byte_request_avg, ram_byte_usage_avg, ram_byte_hours, ram_cost_micros
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND namespace = %(namespace)s AND entry_kind = 'workload' AND container = ANY(%(containers)s)
  AND (pod = ANY(%(pods)s) OR (lower(controller_kind) = %(controller_kind)s AND controller = %(controller)s))
ORDER BY container, hour, pod;

-- name: pod_costs
-- Cost of the named pods of the named namespaces over [start, end) (orphaned pods); the caller
-- keeps the (namespace, pod) pairs it asked for.
SELECT namespace, pod, coalesce(sum(total_cost_micros), 0)::bigint AS cost_micros,
       count(DISTINCT hour) AS hours, min(currency) AS currency
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND entry_kind = 'workload' AND namespace = ANY(%(namespaces)s) AND pod = ANY(%(pods)s)
GROUP BY namespace, pod;

-- name: lock_cloud_source
-- Cloud cost imports: one import of a source at a time (its rows are replaced whole).
SELECT pg_advisory_xact_lock(hashtext('cloud_costs'), hashtext(%(source)s));

-- name: delete_cloud_source
DELETE FROM cloud_costs WHERE source = %(source)s;

-- name: focus_daily_rows
-- A period's cost per day, cluster, namespace and owner (workload and unmounted together; idle
-- apart), with billed core-hours: the rows of the FOCUS export.
SELECT day, cluster, namespace, entry_kind = 'idle' AS is_idle, nullif(team, '') AS owner,
       nullif(cost_center, '') AS cost_center, sum(total_cost_micros) AS micros,
       sum(billed_core_hours) AS core_hours, max(currency) AS currency, min(currency) AS min_currency
FROM allocation_daily
WHERE aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
GROUP BY day, cluster, namespace, entry_kind = 'idle', team, cost_center
ORDER BY day, cluster, namespace, is_idle, owner, cost_center;

-- name: upsert_offering_versions
-- The mirror of many Offerings at once (equal-length arrays): each one's version id. A version
-- already mirrored is not rewritten unless its generation moved (an hourly pass writes nothing).
WITH v AS (
    SELECT * FROM unnest(%(uids)s::text[], %(namespaces)s::text[], %(names)s::text[], %(generations)s::bigint[],
                         %(fingerprints)s::text[], %(specs)s::text[]) AS v(uid, namespace, name, generation, fingerprint, spec)
), written AS (
    INSERT INTO offering_versions AS o (cluster, uid, namespace, name, generation, fingerprint, spec)
    SELECT %(cluster)s, uid, namespace, name, generation, fingerprint, spec::jsonb FROM v
    ON CONFLICT (cluster, uid, fingerprint) DO UPDATE SET generation = EXCLUDED.generation
    WHERE o.generation IS DISTINCT FROM EXCLUDED.generation
    RETURNING o.id, o.uid, o.fingerprint
)
SELECT id, uid FROM written
UNION ALL
SELECT o.id, o.uid FROM offering_versions o JOIN v USING (uid, fingerprint)
WHERE o.cluster = %(cluster)s AND NOT EXISTS (SELECT 1 FROM written w WHERE w.uid = o.uid AND w.fingerprint = o.fingerprint);

-- name: latest_offering_versions
-- The last mirror of Offerings that may be gone (their Subscriptions still settle from them).
SELECT DISTINCT ON (o.namespace, o.name) o.id, o.namespace, o.name, o.spec
FROM offering_versions o
JOIN unnest(%(namespaces)s::text[], %(names)s::text[]) AS r(namespace, name) USING (namespace, name)
WHERE o.cluster = %(cluster)s
ORDER BY o.namespace, o.name, o.id DESC;

-- name: upsert_subscription_versions
-- The mirror of many Subscriptions at once (equal-length arrays): each one's version id. A
-- version already mirrored is not rewritten unless its generation moved (an hourly pass writes
-- nothing, however many Subscriptions).
WITH v AS (
    SELECT * FROM unnest(%(uids)s::text[], %(namespaces)s::text[], %(names)s::text[], %(generations)s::bigint[],
                         %(fingerprints)s::text[], %(specs)s::text[], %(activated)s::timestamptz[],
                         %(deactivated)s::timestamptz[])
         AS v(uid, namespace, name, generation, fingerprint, spec, activated_at, deactivated_at)
), written AS (
    INSERT INTO subscription_versions AS s (cluster, uid, namespace, name, generation, fingerprint, spec,
                                            activated_at, deactivated_at)
    SELECT %(cluster)s, uid, namespace, name, generation, fingerprint, spec::jsonb, activated_at, deactivated_at
    FROM v
    ON CONFLICT (cluster, uid, fingerprint) DO UPDATE SET generation = EXCLUDED.generation
    WHERE s.generation IS DISTINCT FROM EXCLUDED.generation
    RETURNING s.id, s.uid, s.fingerprint
)
SELECT id, uid FROM written
UNION ALL
SELECT s.id, s.uid FROM subscription_versions s JOIN v USING (uid, fingerprint)
WHERE s.cluster = %(cluster)s AND NOT EXISTS (SELECT 1 FROM written w WHERE w.uid = s.uid AND w.fingerprint = s.fingerprint);

-- name: latest_subscription_versions
SELECT DISTINCT ON (uid) uid, id FROM subscription_versions
WHERE cluster = %(cluster)s AND uid = ANY(%(uids)s::text[])
ORDER BY uid, id DESC;

-- name: upsert_subscription_index
-- Subscriptions as reconciled: what other objects' events need to find them.
INSERT INTO subscription_index AS i (cluster, uid, namespace, name, offering_namespace, offering_name,
                                     parent_namespace, parent_name, root_uid)
SELECT %(cluster)s, * FROM unnest(%(uids)s::text[], %(namespaces)s::text[], %(names)s::text[],
                                  %(offering_namespaces)s::text[], %(offering_names)s::text[],
                                  %(parent_namespaces)s::text[], %(parent_names)s::text[], %(roots)s::text[])
ON CONFLICT (cluster, uid) DO UPDATE SET
    namespace = EXCLUDED.namespace, name = EXCLUDED.name, offering_namespace = EXCLUDED.offering_namespace,
    offering_name = EXCLUDED.offering_name, parent_namespace = EXCLUDED.parent_namespace,
    parent_name = EXCLUDED.parent_name, root_uid = EXCLUDED.root_uid
WHERE (i.namespace, i.name, i.offering_namespace, i.offering_name, i.parent_namespace, i.parent_name, i.root_uid)
      IS DISTINCT FROM (EXCLUDED.namespace, EXCLUDED.name, EXCLUDED.offering_namespace, EXCLUDED.offering_name,
                        EXCLUDED.parent_namespace, EXCLUDED.parent_name, EXCLUDED.root_uid);

-- name: prune_subscription_index
-- Subscriptions the API server no longer has (a full pass lists every one that remains).
DELETE FROM subscription_index WHERE cluster = %(cluster)s AND NOT (uid = ANY(%(uids)s::text[]));

-- name: forget_subscription
DELETE FROM subscription_index WHERE cluster = %(cluster)s AND namespace = %(namespace)s AND name = %(name)s;

-- name: subscriptions_of_offering
SELECT namespace, name FROM subscription_index
WHERE cluster = %(cluster)s AND offering_namespace = %(namespace)s AND offering_name = %(name)s
ORDER BY namespace, name;

-- name: subscription_relatives
-- The Subscriptions whose gates read this one: its children and the rest of its family.
SELECT namespace, name FROM subscription_index
WHERE cluster = %(cluster)s AND ((parent_namespace = %(namespace)s AND parent_name = %(name)s) OR root_uid = %(root)s)
  AND uid <> %(uid)s
ORDER BY namespace, name;

-- name: subscription_family
-- Every Subscription under the same top of the parent chain (the compatibility gate reads them).
SELECT namespace, name FROM subscription_index WHERE cluster = %(cluster)s AND root_uid = %(root)s
ORDER BY namespace, name;

-- name: charge_watermarks
-- Per Subscription and source, the last finalized charge hour (kept by a trigger on the charges).
SELECT subscription_uid AS uid, source, hour FROM subscription_charge_watermarks
WHERE cluster = %(cluster)s AND subscription_uid = ANY(%(uids)s::text[]);

-- name: usage_rows
-- Allocation rows of (namespace, [start, end)) windows, disjoint per namespace, with the exact
-- rates (currency units) of the PriceBook version each row was stamped with.
SELECT a.hour, a.namespace, a.controller_kind, a.controller, a.pod, a.data_start, a.data_end,
       a.cpu_core_usage_avg, a.ram_byte_usage_avg, a.pv_byte_hours, a.network_transfer_bytes,
       a.network_receive_bytes, a.gpu_hours, a.minutes, a.currency, a.pricebook_id,
       p.cpu_hour, p.ram_gb_hour, p.pv_gb_hour, p.gpu_hour, p.network_gib
FROM unnest(%(namespaces)s::text[], %(starts)s::timestamptz[], %(ends)s::timestamptz[]) AS w(namespace, first, stop)
JOIN provider_allocations a ON a.namespace = w.namespace AND a.hour >= w.first AND a.hour < w.stop
LEFT JOIN pricebooks p ON p.id = a.pricebook_id
WHERE a.cluster = %(cluster)s AND a.aggregation = %(aggregation)s AND a.entry_kind = 'workload';

-- name: charge_totals
-- Charges per Subscription and source for status.costs: the hour, the day and the month so far.
SELECT subscription_uid AS uid, source,
       coalesce(sum(amount_micros) FILTER (WHERE hour >= %(hour)s), 0)::bigint AS hour_micros,
       coalesce(sum(unpriced_rows) FILTER (WHERE hour >= %(hour)s), 0)::bigint AS hour_unpriced,
       coalesce(sum(amount_micros) FILTER (WHERE hour >= %(day)s), 0)::bigint AS day_micros,
       coalesce(sum(unpriced_rows) FILTER (WHERE hour >= %(day)s), 0)::bigint AS day_unpriced,
       sum(amount_micros)::bigint AS month_micros, sum(unpriced_rows)::bigint AS month_unpriced
FROM subscription_charges
WHERE cluster = %(cluster)s AND subscription_uid = ANY(%(uids)s::text[]) AND hour >= %(month)s AND hour < %(end)s
GROUP BY subscription_uid, source;

-- name: settled_hours
-- Hours in [start, end) whose allocation rows will not change any more (final or lost).
SELECT hour FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND state IN ('final', 'lost');

-- name: create_charge_staging
CREATE TEMPORARY TABLE charge_staging (LIKE subscription_charges INCLUDING DEFAULTS) ON COMMIT DROP;

-- name: merge_charge_staging
-- Finalized charges are never recomputed; open ones are rewritten.
INSERT INTO subscription_charges AS c SELECT * FROM charge_staging
ON CONFLICT (cluster, subscription_uid, hour, source) DO UPDATE SET
    namespace = EXCLUDED.namespace, name = EXCLUDED.name, offering_version_id = EXCLUDED.offering_version_id,
    subscription_version_id = EXCLUDED.subscription_version_id, unit_price_micros = EXCLUDED.unit_price_micros,
    quantity = EXCLUDED.quantity, amount_micros = EXCLUDED.amount_micros, currency = EXCLUDED.currency,
    is_finalized = EXCLUDED.is_finalized, computed_at = EXCLUDED.computed_at, unpriced_rows = EXCLUDED.unpriced_rows
WHERE NOT c.is_finalized;

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

-- name: claim_lease
-- Taken when free, expired, or already ours (a renewal); the row comes back only when it is ours.
-- Two claimants at once: the second waits on the first's row and then sees it held.
INSERT INTO leases (name, holder, acquired_at, expires_at)
VALUES (%(name)s, %(holder)s, now(), now() + make_interval(secs => %(seconds)s))
ON CONFLICT (name) DO UPDATE
    SET holder = EXCLUDED.holder, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
    WHERE leases.expires_at <= now() OR leases.holder = EXCLUDED.holder
RETURNING holder;

-- name: release_lease
DELETE FROM leases WHERE name = %(name)s AND holder = %(holder)s;

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

-- ==== Metrics (cost_api's GET /metrics): read-only, the same answer from every replica ====

-- name: metrics_cost_hour
-- The last complete hour: the newest hour that is over and stored in full, with rows: final, or
-- open but fetched after it ended (the pinned hour's rows hold only the minutes before its run).
SELECT max(hour) AS hour FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND row_count > 0
  AND hour + interval '1 hour' <= now()
  AND (state = 'final' OR (state = 'open' AND collected_at >= hour + interval '1 hour'));

-- name: metrics_namespace_costs
-- One hour's cost per namespace, owner, cost centre and currency as stamped on the rows, with the
-- workload idle of its pods (finops.measurement: cost x (request - usage) / request for CPU and
-- RAM, 0 at or above the request or when not measured; fractional micros). The cluster's idle
-- row comes back with ``idle`` true (namespace '').
SELECT namespace, entry_kind = 'idle' AS idle, nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       coalesce(currency, '') AS currency,
       coalesce(sum(total_cost_micros), 0)::bigint AS cost_micros,
       coalesce(sum(
           CASE WHEN cpu_core_request_avg > 0 AND cpu_core_usage_avg < cpu_core_request_avg
                THEN coalesce(cpu_cost_micros, 0) * (cpu_core_request_avg - greatest(cpu_core_usage_avg, 0))
                     / cpu_core_request_avg
                ELSE 0 END
         + CASE WHEN ram_byte_request_avg > 0 AND ram_byte_usage_avg < ram_byte_request_avg
                THEN coalesce(ram_cost_micros, 0) * (ram_byte_request_avg - greatest(ram_byte_usage_avg, 0))
                     / ram_byte_request_avg
                ELSE 0 END), 0) AS workload_idle_micros
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s
GROUP BY namespace, entry_kind = 'idle', nullif(team, ''), nullif(cost_center, ''), coalesce(currency, '')
ORDER BY namespace, idle;

-- name: metrics_owner_month_to_date
-- The current UTC month's cost per owner, cost centre and currency, idle excluded, from the daily
-- rollups (what reports read; today's hours so far included).
SELECT nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center, coalesce(currency, '') AS currency,
       sum(total_cost_micros)::bigint AS cost_micros
FROM allocation_daily
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND entry_kind <> 'idle'
  AND day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date
GROUP BY nullif(team, ''), nullif(cost_center, ''), coalesce(currency, '');

-- name: metrics_job_runs
-- Runs kept in job_runs (JOB_RUNS_RETENTION_DAYS) per function and outcome, with the newest.
SELECT function, outcome, count(*) AS runs, max(finished_at) AS last_finished
FROM job_runs WHERE cluster = %(cluster)s
GROUP BY function, outcome ORDER BY function, outcome;

-- name: metrics_ledger
-- The hour ledger's hours per state, with the newest hour of each.
SELECT state, count(*) AS hours, max(hour) AS newest
FROM allocation_hours WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s
GROUP BY state ORDER BY state;

-- name: metrics_sync_events
-- Accepted syncs not measured yet, per status, with the oldest's arrival.
SELECT status, count(*) AS events, min(received_at) AS oldest
FROM sync_events WHERE cluster = %(cluster)s AND status IN ('pending', 'measuring')
GROUP BY status ORDER BY status;

-- name: metrics_subscriptions
-- Activated Subscriptions (latest mirrored version, still in the index, not deactivated), how
-- many have final charges, and the oldest hour through which every source of each is final.
WITH latest AS (
    SELECT DISTINCT ON (v.uid) v.uid, v.activated_at, v.deactivated_at
    FROM subscription_versions v
    JOIN subscription_index i ON i.cluster = v.cluster AND i.uid = v.uid
    WHERE v.cluster = %(cluster)s
    ORDER BY v.uid, v.id DESC
), active AS (
    SELECT uid FROM latest WHERE activated_at IS NOT NULL AND deactivated_at IS NULL
), priced AS (
    SELECT a.uid, min(w.hour) AS through
    FROM active a JOIN subscription_charge_watermarks w ON w.cluster = %(cluster)s AND w.subscription_uid = a.uid
    GROUP BY a.uid
)
SELECT (SELECT count(*) FROM active) AS active, (SELECT count(*) FROM priced) AS priced,
       (SELECT min(through) FROM priced) AS oldest_through;

-- ==== Daily cost history per application (migration 013; functions/app_history) ====

-- name: app_scopes
-- Each application's scope from its latest record (finops_app_scopes): kind, destination
-- namespace, selector (controllers, pods) and fingerprint; one application when both names are given.
SELECT * FROM finops_app_scopes(%(cluster)s)
WHERE (%(app_namespace)s::text IS NULL OR app_namespace = %(app_namespace)s)
  AND (%(app_name)s::text IS NULL OR app_name = %(app_name)s)
ORDER BY app_namespace, app_name;

-- name: app_hourly_costs
-- Each application's own cost per hour over [start, end), in its latest record's scope.
SELECT app_namespace, app_name, scope, hour, sum(total_cost_micros)::bigint AS micros, max(currency) AS currency,
       bool_and(is_finalized) AS final
FROM finops_app_allocations(%(cluster)s, %(aggregation)s, %(start)s, %(end)s)
GROUP BY app_namespace, app_name, scope, hour
ORDER BY app_namespace, app_name, hour;

-- name: lock_app_daily
-- The recorder of one cluster, one batch at a time (two recorders at once serialise, the second
-- finding the days written).
SELECT pg_advisory_xact_lock(hashtext('app_daily_costs'), hashtext(%(cluster)s));

-- name: upsert_app_daily_scopes
-- Every application's current scope; a changed scope (or aggregation) starts over: first_day is
-- found again. Returns the applications whose scope is new or changed.
INSERT INTO app_daily_scopes AS k (cluster, app_namespace, app_name, destination_namespace, scope, controllers,
                                   pods, fingerprint, aggregation, first_day)
SELECT s.cluster, s.app_namespace, s.app_name, s.destination_namespace, s.scope, s.controllers, s.pods,
       s.fingerprint, %(aggregation)s, NULL
FROM finops_app_scopes(%(cluster)s) s
ON CONFLICT (cluster, app_namespace, app_name) DO UPDATE SET
    destination_namespace = EXCLUDED.destination_namespace, scope = EXCLUDED.scope,
    controllers = EXCLUDED.controllers, pods = EXCLUDED.pods, fingerprint = EXCLUDED.fingerprint,
    aggregation = EXCLUDED.aggregation, first_day = NULL, searched_from = NULL, updated_at = now()
WHERE k.fingerprint <> EXCLUDED.fingerprint OR k.aggregation <> EXCLUDED.aggregation
RETURNING k.app_namespace, k.app_name, (xmax = 0) AS new;

-- name: delete_vanished_app_daily_scopes
-- Applications without any record any more (pruned): no scope, so no series.
DELETE FROM app_daily_scopes k
WHERE k.cluster = %(cluster)s
  AND NOT EXISTS (SELECT 1 FROM cost_actuals a
                  WHERE a.cluster = k.cluster AND a.app_namespace = k.app_namespace AND a.app_name = k.app_name);

-- name: delete_app_days_out_of_scope
-- Days stored in another scope than the application's current one (or of an application gone):
-- a series is never mixed, it is rebuilt.
DELETE FROM app_daily_costs d
WHERE d.cluster = %(cluster)s
  AND NOT EXISTS (SELECT 1 FROM app_daily_scopes k
                  WHERE k.cluster = d.cluster AND k.app_namespace = d.app_namespace AND k.app_name = d.app_name
                    AND k.fingerprint = d.scope_fingerprint AND k.aggregation = d.aggregation);

-- name: set_app_first_days
-- Where a series starts: the first day within the history window its destination namespace had
-- cost (from the daily rollups). Searched for a new (or rebuilt) series, and again when the ledger
-- now reaches further back than the last search (a history load), never otherwise.
WITH search AS (
    SELECT app_namespace, app_name, destination_namespace FROM app_daily_scopes
    WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s
      AND (first_day IS NULL OR searched_from IS NULL OR searched_from > %(ledger_day)s)
),
found AS (
    SELECT namespace, min(day) AS first_day FROM allocation_daily
    WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(cutoff)s AND entry_kind <> 'idle'
      AND namespace IN (SELECT destination_namespace FROM search)
    GROUP BY namespace
)
UPDATE app_daily_scopes k
SET first_day = CASE WHEN k.first_day IS NULL OR f.first_day < k.first_day THEN f.first_day ELSE k.first_day END,
    searched_from = %(ledger_day)s
FROM search s LEFT JOIN found f ON f.namespace = s.destination_namespace
WHERE k.cluster = %(cluster)s AND k.app_namespace = s.app_namespace AND k.app_name = s.app_name;

-- name: delete_expired_app_days
DELETE FROM app_daily_costs WHERE cluster = %(cluster)s AND day < %(cutoff)s;

-- name: app_days_to_record
-- UTC days in [cutoff, today) that are over and whose 24 hours are all final in the ledger, which
-- some application (from its first day on) has not recorded yet; newest first.
WITH complete AS (
    SELECT (hour AT TIME ZONE 'UTC')::date AS day FROM allocation_hours
    WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND state = 'final'
      AND hour >= %(cutoff)s::timestamp AT TIME ZONE 'UTC' AND hour < %(today)s::timestamp AT TIME ZONE 'UTC'
    GROUP BY 1
    HAVING count(*) = 24
)
SELECT c.day FROM complete c
WHERE EXISTS (SELECT 1 FROM app_daily_scopes k
              WHERE k.cluster = %(cluster)s AND k.aggregation = %(aggregation)s AND k.first_day <= c.day
                AND NOT EXISTS (SELECT 1 FROM app_daily_costs d
                                WHERE d.cluster = k.cluster AND d.app_namespace = k.app_namespace
                                  AND d.app_name = k.app_name AND d.day = c.day))
ORDER BY c.day DESC
LIMIT %(limit)s;

-- name: record_app_days
-- One batch of days for every application at once: the sum of its own rows per day (a day with
-- none is recorded as 0 from its first day on). Workload idle is cost x (request - usage) /
-- request per row and resource, rounded half-even once per day. A day already recorded is kept
-- (its hours are final: recomputing gives the same row).
WITH days AS (SELECT unnest(%(days)s::date[]) AS day),
-- The batch's rows, read once (one range scan), per pod and hour, before they meet the scopes.
hourly AS MATERIALIZED (
    SELECT pa.namespace, pa.entry_kind, pa.controller_kind, pa.controller, pa.pod, pa.hour,
           sum(pa.cpu_cost_micros) AS cpu, sum(pa.gpu_cost_micros) AS gpu, sum(pa.ram_cost_micros) AS ram,
           sum(pa.pv_cost_micros) AS pv, sum(pa.network_cost_micros) AS network, sum(pa.lb_cost_micros) AS lb,
           sum(pa.shared_cost_micros) AS shared, sum(pa.external_cost_micros) AS external,
           sum(pa.total_cost_micros) AS total,
           sum(coalesce(pa.cpu_cost_micros, 0) * CASE
                   WHEN pa.cpu_core_request_avg > 0 AND pa.cpu_core_usage_avg < pa.cpu_core_request_avg
                   THEN (pa.cpu_core_request_avg - greatest(pa.cpu_core_usage_avg, 0)) / pa.cpu_core_request_avg
                   ELSE 0 END
             + coalesce(pa.ram_cost_micros, 0) * CASE
                   WHEN pa.ram_byte_request_avg > 0 AND pa.ram_byte_usage_avg < pa.ram_byte_request_avg
                   THEN (pa.ram_byte_request_avg - greatest(pa.ram_byte_usage_avg, 0)) / pa.ram_byte_request_avg
                   ELSE 0 END) AS idle,
           max(pa.currency) AS currency
    FROM provider_allocations pa
    WHERE pa.cluster = %(cluster)s AND pa.aggregation = %(aggregation)s
      AND pa.hour >= %(start)s AND pa.hour < %(end)s
      AND (pa.hour AT TIME ZONE 'UTC')::date IN (SELECT day FROM days)
      AND pa.namespace IN (SELECT destination_namespace FROM app_daily_scopes
                           WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND first_day IS NOT NULL)
    GROUP BY pa.namespace, pa.entry_kind, pa.controller_kind, pa.controller, pa.pod, pa.hour
),
costs AS (
    SELECT k.app_namespace, k.app_name, (h.hour AT TIME ZONE 'UTC')::date AS day,
           count(DISTINCT h.hour)::integer AS hours,
           coalesce(sum(h.cpu), 0)::bigint AS cpu, coalesce(sum(h.gpu), 0)::bigint AS gpu,
           coalesce(sum(h.ram), 0)::bigint AS ram, coalesce(sum(h.pv), 0)::bigint AS pv,
           coalesce(sum(h.network), 0)::bigint AS network, coalesce(sum(h.lb), 0)::bigint AS lb,
           coalesce(sum(h.shared), 0)::bigint AS shared, coalesce(sum(h.external), 0)::bigint AS external,
           coalesce(sum(h.total), 0)::bigint AS total, coalesce(sum(h.idle), 0) AS idle, max(h.currency) AS currency
    FROM app_daily_scopes k
    JOIN hourly h ON h.namespace = k.destination_namespace
    WHERE k.cluster = %(cluster)s AND k.aggregation = %(aggregation)s AND k.first_day IS NOT NULL
      AND finops_in_app_scope(k.scope, k.controllers, k.pods, h.entry_kind, h.controller_kind, h.controller, h.pod)
    GROUP BY 1, 2, 3
)
INSERT INTO app_daily_costs (cluster, app_namespace, app_name, day, scope, scope_fingerprint, aggregation, hours,
                             cpu_cost_micros, gpu_cost_micros, ram_cost_micros, pv_cost_micros, network_cost_micros,
                             lb_cost_micros, shared_cost_micros, external_cost_micros, total_cost_micros, idle_micros,
                             currency)
SELECT k.cluster, k.app_namespace, k.app_name, days.day, k.scope, k.fingerprint, k.aggregation,
       coalesce(c.hours, 0), coalesce(c.cpu, 0), coalesce(c.gpu, 0), coalesce(c.ram, 0), coalesce(c.pv, 0),
       coalesce(c.network, 0), coalesce(c.lb, 0), coalesce(c.shared, 0), coalesce(c.external, 0),
       coalesce(c.total, 0),
       coalesce(CASE WHEN c.idle - floor(c.idle) = 0.5 THEN floor(c.idle) + mod(floor(c.idle), 2)
                     ELSE round(c.idle) END, 0)::bigint,
       c.currency
FROM app_daily_scopes k
CROSS JOIN days
LEFT JOIN costs c ON c.app_namespace = k.app_namespace AND c.app_name = k.app_name AND c.day = days.day
WHERE k.cluster = %(cluster)s AND k.aggregation = %(aggregation)s AND k.first_day <= days.day
ON CONFLICT (cluster, app_namespace, app_name, day) DO NOTHING;

-- name: app_daily_series
-- One application's stored days of [start, end) in the given scope (fingerprint), with where its
-- series starts when that scope is the one recorded.
SELECT d.day, d.hours, d.total_cost_micros, d.currency
FROM app_daily_costs d
WHERE d.cluster = %(cluster)s AND d.app_namespace = %(app_namespace)s AND d.app_name = %(app_name)s
  AND d.day >= %(start)s AND d.day < %(end)s AND d.scope_fingerprint = %(fingerprint)s
ORDER BY d.day;

-- name: app_daily_scope
SELECT fingerprint, aggregation, first_day FROM app_daily_scopes
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s;

-- name: app_scope_cost
-- One scope's cost over [start, end) from the hourly rows (open or final): today's partial day.
SELECT count(DISTINCT pa.hour)::integer AS hours, coalesce(sum(pa.total_cost_micros), 0)::bigint AS micros,
       max(pa.currency) AS currency
FROM provider_allocations pa
WHERE pa.cluster = %(cluster)s AND pa.aggregation = %(aggregation)s AND pa.namespace = %(namespace)s
  AND pa.hour >= %(start)s AND pa.hour < %(end)s
  AND finops_in_app_scope(%(scope)s, %(controllers)s::text[], %(pods)s::text[], pa.entry_kind,
                          pa.controller_kind, pa.controller, pa.pod);

-- name: namespace_window_currencies
-- The currencies a namespace's stored rows overlapping [start, end) are priced in (the currency of
-- a cost record, which is measured from OpenCost and carries none of its own: /actual, /trend).
-- A row covers [hour, hour + 1 h).
SELECT DISTINCT btrim(currency) AS currency FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND namespace = %(namespace)s
  AND hour > %(start)s::timestamptz - interval '1 hour' AND hour < %(end)s AND currency IS NOT NULL;

-- ==== Cloud estimates pushed by CI (cost_api; migration 014) ====

-- name: lock_cloud_estimate
-- One push of an estimate key at a time (its rows are replaced whole).
SELECT pg_advisory_xact_lock(hashtext('cloud_estimates'),
                             hashtext(%(cluster)s || '/' || %(app_namespace)s || '/' || %(app_name)s || '/' || %(source)s));

-- name: upsert_cloud_estimate
-- The key's estimate, replaced; ``changed_at`` moves only when the content (digest) differs.
INSERT INTO cloud_estimates AS e (cluster, app_namespace, app_name, source, currency, tool_version, generated_at,
                                  monthly, stated_monthly, projects, resource_count, unpriced_count, digest,
                                  received_at, changed_at)
VALUES (%(cluster)s, %(app_namespace)s, %(app_name)s, %(source)s, %(currency)s, %(tool_version)s, %(generated_at)s,
        %(monthly)s, %(stated_monthly)s, %(projects)s, %(resource_count)s, %(unpriced_count)s, %(digest)s,
        %(received_at)s, %(received_at)s)
ON CONFLICT (cluster, app_namespace, app_name, source) DO UPDATE SET
    currency = EXCLUDED.currency, tool_version = EXCLUDED.tool_version, generated_at = EXCLUDED.generated_at,
    monthly = EXCLUDED.monthly, stated_monthly = EXCLUDED.stated_monthly, projects = EXCLUDED.projects,
    resource_count = EXCLUDED.resource_count, unpriced_count = EXCLUDED.unpriced_count,
    digest = EXCLUDED.digest, received_at = EXCLUDED.received_at,
    changed_at = CASE WHEN e.digest = EXCLUDED.digest THEN e.changed_at ELSE EXCLUDED.changed_at END
RETURNING changed_at = received_at AS changed;

-- name: delete_cloud_estimate_resources
DELETE FROM cloud_estimate_resources
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s AND source = %(source)s;

-- name: app_cloud_estimates
-- An application's estimates, one per source, with their age in whole seconds (database clock).
SELECT *, floor(extract(epoch FROM now() - received_at))::bigint AS age_seconds
FROM cloud_estimates
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
ORDER BY source;

-- name: app_cloud_estimate_resources
-- An application's estimated resources, per source in push order.
SELECT source, position, project, path, depth, monthly_cost, hourly_cost, components
FROM cloud_estimate_resources
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
ORDER BY source, position;

-- ==== Data quality (cost_api's GET /api/v1/data-quality): read-only ====

-- name: dq_ledger_summary
-- The hour ledger of one cluster and aggregation: the newest final hour and the count per state.
SELECT max(hour) FILTER (WHERE state = 'final') AS newest_final,
       count(*) FILTER (WHERE state = 'final')::integer AS final,
       count(*) FILTER (WHERE state = 'open')::integer AS open,
       count(*) FILTER (WHERE state = 'lost')::integer AS lost,
       min(hour) AS first_hour
FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s;

-- name: dq_recent_hours
-- The most recent hours in one state, newest first, with why (lost, or open after an empty answer).
SELECT hour, reason, row_count
FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND state = %(state)s
ORDER BY hour DESC
LIMIT %(limit)s;

-- name: dq_unpriced_cost
-- The cost of [start, end) (days) from the daily rollups, and the part of it in no currency
-- (collected while no PriceBook was active).
SELECT coalesce(sum(total_cost_micros), 0)::bigint AS total_micros,
       coalesce(sum(total_cost_micros) FILTER (WHERE currency IS NULL), 0)::bigint AS unpriced_micros
FROM allocation_daily
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s;

-- name: dq_unpriced_hours
-- The hours of [start, end) stored with rows, and those of them priced in no currency.
SELECT count(*) FILTER (WHERE row_count > 0)::integer AS with_rows,
       count(*) FILTER (WHERE row_count > 0 AND currency IS NULL)::integer AS unpriced
FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s;

-- name: dq_unowned_namespaces
-- Namespaces whose rows of [start, end) (days) carry no owner label, with that cost, largest first.
SELECT namespace, sum(total_cost_micros)::bigint AS micros
FROM allocation_daily
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s
  AND entry_kind <> 'idle' AND namespace <> '' AND team = ''
GROUP BY namespace
ORDER BY micros DESC, namespace
LIMIT %(limit)s;

-- name: dq_pricing_source
-- The PriceBook version the newest stored hour was priced with, else the newest version seen.
SELECT p.namespace, p.name, p.uid, p.fingerprint, p.id, p.currency, p.first_seen_at, h.hour AS priced_hour,
       newest.hour AS newest_hour
FROM pricebooks p
LEFT JOIN LATERAL (
    SELECT hour FROM allocation_hours
    WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND row_count > 0
    ORDER BY hour DESC LIMIT 1
) newest ON true
LEFT JOIN allocation_hours h
       ON h.cluster = %(cluster)s AND h.aggregation = %(aggregation)s AND h.hour = newest.hour
      AND h.pricebook_id = p.id
WHERE p.cluster = %(cluster)s
ORDER BY (h.hour IS NOT NULL) DESC, p.first_seen_at DESC, p.id DESC
LIMIT 1;

-- name: metrics_application_costs
-- One hour's cost per Argo CD application by resource, over the application's scope as the
-- application history defines it (finops_app_allocations: its latest record's namespace, or its
-- own controllers' and bare pods' rows when that record is application-scoped).
SELECT app_namespace, app_name, namespace AS destination_namespace, scope, coalesce(currency, '') AS currency,
       coalesce(sum(cpu_cost_micros), 0)::bigint AS cpu, coalesce(sum(ram_cost_micros), 0)::bigint AS ram,
       coalesce(sum(gpu_cost_micros), 0)::bigint AS gpu, coalesce(sum(pv_cost_micros), 0)::bigint AS pv,
       coalesce(sum(network_cost_micros), 0)::bigint AS network, coalesce(sum(lb_cost_micros), 0)::bigint AS lb,
       coalesce(sum(shared_cost_micros), 0)::bigint AS shared,
       coalesce(sum(external_cost_micros), 0)::bigint AS external
FROM finops_app_allocations(%(cluster)s, %(aggregation)s, %(hour)s, %(hour)s + interval '1 hour')
GROUP BY app_namespace, app_name, namespace, scope, coalesce(currency, '')
ORDER BY app_namespace, app_name;

-- ==== Anomaly score per application (cost_api; functions/cost_api/anomalies.py, finops/anomaly.py) ====

-- name: app_anomaly_inputs
-- Per application of the cluster (or one, when both names are given), in its latest record's
-- scope (finops_app_scopes), what its anomaly score is computed from, in one grouped read:
--   baseline: the newest %(baseline_days)s days of [oldest, today) recorded in that scope
--             (fingerprint), from the series' first day with cost in it (days before it are its
--             destination namespace's, before the application ran there);
--   today:    the cost of its own rows (finops_in_app_scope) in today's hours that the ledger
--             has final, and how many such hours there are (the open hour holds only the minutes
--             collected so far).
WITH scopes AS MATERIALIZED (
    SELECT s.app_namespace, s.app_name, s.scope, s.destination_namespace, s.controllers, s.pods, s.fingerprint,
           coalesce(k.aggregation, %(aggregation)s) AS aggregation
    FROM finops_app_scopes(%(cluster)s) s
    LEFT JOIN app_daily_scopes k
           ON k.cluster = s.cluster AND k.app_namespace = s.app_namespace AND k.app_name = s.app_name
    WHERE (%(app_namespace)s::text IS NULL OR s.app_namespace = %(app_namespace)s)
      AND (%(app_name)s::text IS NULL OR s.app_name = %(app_name)s)
),
first_cost AS (
    SELECT s.app_namespace, s.app_name, s.fingerprint, min(f.day) AS day
    FROM scopes s
    JOIN app_daily_costs f
      ON f.cluster = %(cluster)s AND f.app_namespace = s.app_namespace AND f.app_name = s.app_name
     AND f.scope_fingerprint = s.fingerprint AND f.hours > 0
    GROUP BY s.app_namespace, s.app_name, s.fingerprint
),
series AS (
    SELECT d.app_namespace, d.app_name, d.day, d.total_cost_micros, d.hours, d.currency,
           row_number() OVER (PARTITION BY d.app_namespace, d.app_name ORDER BY d.day DESC) AS newest
    FROM first_cost c
    JOIN app_daily_costs d
      ON d.cluster = %(cluster)s AND d.app_namespace = c.app_namespace AND d.app_name = c.app_name
     AND d.scope_fingerprint = c.fingerprint AND d.day >= greatest(c.day, %(oldest)s) AND d.day < %(today)s
),
baseline AS (
    SELECT app_namespace, app_name, array_agg(day ORDER BY day) AS days,
           array_agg(total_cost_micros ORDER BY day) AS micros,
           array_agg(DISTINCT currency) FILTER (WHERE currency IS NOT NULL AND hours > 0) AS currencies
    FROM series WHERE newest <= %(baseline_days)s
    GROUP BY app_namespace, app_name
),
final_hours AS (
    SELECT aggregation, hour FROM allocation_hours
    WHERE cluster = %(cluster)s AND state = 'final' AND hour >= %(start)s AND hour < %(end)s
),
today AS (
    SELECT s.app_namespace, s.app_name, sum(pa.total_cost_micros) AS micros,
           array_agg(DISTINCT pa.currency) FILTER (WHERE pa.currency IS NOT NULL) AS currencies
    FROM scopes s
    JOIN final_hours h ON h.aggregation = s.aggregation
    JOIN provider_allocations pa
      ON pa.cluster = %(cluster)s AND pa.aggregation = s.aggregation AND pa.hour = h.hour
     AND pa.namespace = s.destination_namespace
    WHERE finops_in_app_scope(s.scope, s.controllers, s.pods, pa.entry_kind, pa.controller_kind, pa.controller, pa.pod)
    GROUP BY s.app_namespace, s.app_name
)
SELECT s.app_namespace, s.app_name, s.scope, s.destination_namespace,
       coalesce(b.days, '{}') AS days, coalesce(b.micros, '{}') AS micros,
       coalesce(b.currencies, '{}') AS currencies,
       coalesce(t.micros, 0)::bigint AS today_micros, coalesce(t.currencies, '{}') AS today_currencies,
       (SELECT count(*) FROM final_hours h WHERE h.aggregation = s.aggregation)::integer AS today_hours
FROM scopes s
LEFT JOIN baseline b ON b.app_namespace = s.app_namespace AND b.app_name = s.app_name
LEFT JOIN today t ON t.app_namespace = s.app_namespace AND t.app_name = s.app_name
ORDER BY s.app_namespace, s.app_name;

-- name: bill_lines
-- Every imported bill line whose charge period overlaps [start, end) (a moment inside it counts);
-- the domain gives each to a cluster or leaves it a direct cost (finops.reconciliation).
SELECT source, row_number, charge_start, charge_end, billed_cost_micros, effective_cost_micros, currency,
       charge_category, service, resource_id, account, team, cost_center, tags
FROM cloud_costs
WHERE charge_start < %(end)s
  AND (charge_end > %(start)s OR (charge_end = charge_start AND charge_start >= %(start)s))
ORDER BY source, row_number;

-- name: asset_provider_ids
-- The provider ids of every cluster's nodes, disks and load balancers in [start, end).
SELECT DISTINCT cluster, kind, name, provider_id
FROM cluster_assets
WHERE hour >= %(start)s AND hour < %(end)s;

-- name: reconcile_rows
-- One cluster's estimated cost per UTC day, node and namespace over [start, end), read from the
-- hourly rows: for the days not stored in allocation_node_daily (the caller asks per range).
SELECT (hour AT TIME ZONE 'UTC')::date AS day, coalesce(node, '') AS node, namespace, entry_kind,
       nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       sum(coalesce(total_cost_micros, 0)) AS total, sum(coalesce(pv_cost_micros, 0)) AS pv,
       sum(coalesce(lb_cost_micros, 0)) AS lb,
       sum(coalesce(network_cost_micros, 0) + coalesce(shared_cost_micros, 0) + coalesce(external_cost_micros, 0)) AS other
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
GROUP BY 1, 2, 3, 4, 5, 6;

-- name: stored_node_rows
-- The same, for the days [first, last) allocation_node_daily holds.
SELECT day, node, namespace, entry_kind, nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       total_micros AS total, pv_micros AS pv, lb_micros AS lb, other_micros AS other
FROM allocation_node_daily
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(first)s AND day < %(last)s;

-- name: node_days
-- Of the days [first, last): whether allocation_node_daily holds it, and whether it may now (its 24
-- hours are all final or lost in the ledger, so its rows will not change). Dates are UTC days.
SELECT d::date AS day,
       EXISTS (SELECT 1 FROM allocation_node_days n
               WHERE n.cluster = %(cluster)s AND n.aggregation = %(aggregation)s AND n.day = d::date) AS stored,
       (SELECT count(*) FROM allocation_hours h
        WHERE h.cluster = %(cluster)s AND h.aggregation = %(aggregation)s AND h.state IN ('final', 'lost')
          AND h.hour >= d AT TIME ZONE 'UTC' AND h.hour < (d + interval '1 day') AT TIME ZONE 'UTC') = 24 AS settled
FROM generate_series(%(first)s::date, %(last)s::date - 1, interval '1 day') AS d
ORDER BY 1;

-- name: store_node_day
-- A settled day's cost per node and namespace, stored once (a concurrent report storing the same
-- day first makes this one a no-op).
WITH marked AS (
    INSERT INTO allocation_node_days (cluster, aggregation, day) VALUES (%(cluster)s, %(aggregation)s, %(day)s)
    ON CONFLICT DO NOTHING RETURNING day
)
INSERT INTO allocation_node_daily
SELECT %(cluster)s, %(aggregation)s, (hour AT TIME ZONE 'UTC')::date, coalesce(node, ''), namespace, entry_kind,
       coalesce(team, ''), coalesce(cost_center, ''), sum(coalesce(total_cost_micros, 0)),
       sum(coalesce(pv_cost_micros, 0)), sum(coalesce(lb_cost_micros, 0)),
       sum(coalesce(network_cost_micros, 0) + coalesce(shared_cost_micros, 0) + coalesce(external_cost_micros, 0))
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND EXISTS (SELECT 1 FROM marked)
  AND hour >= %(day)s::date::timestamp AT TIME ZONE 'UTC'
  AND hour < (%(day)s::date + 1)::timestamp AT TIME ZONE 'UTC'
GROUP BY 3, 4, 5, 6, 7, 8;

-- name: reconcile_assets
-- One cluster's assets per UTC day: a node's estimate is its CPU, RAM and GPU cost and adjustment (what its
-- allocations and idle share), a disk's or load balancer's its total.
SELECT (hour AT TIME ZONE 'UTC')::date AS day, kind, name, max(provider_id) AS provider_id,
       sum(CASE WHEN kind = 'node' THEN cpu_cost_micros + ram_cost_micros + gpu_cost_micros + adjustment_micros
                ELSE total_cost_micros END) AS estimate
FROM cluster_assets
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
GROUP BY 1, 2, 3;
