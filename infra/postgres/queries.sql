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
                        cpu_hour, spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour,
                        network_gib)
VALUES (%(cluster)s, %(namespace)s, %(name)s, %(uid)s, %(fingerprint)s, %(currency)s, %(valuation_mode)s,
        %(cpuHour)s, %(spotCPUHour)s, %(ramGbHour)s, %(spotRAMGbHour)s, %(pvGbHour)s, %(gpuHour)s,
        %(networkGiB)s)
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

-- name: record_allocation_hour
INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, pricebook_id, currency, run_id, reason,
                              empty_since)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, %(state)s, %(row_count)s, %(pricebook_id)s, %(currency)s, %(run_id)s,
        %(reason)s, %(empty_since)s)
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET
    state = EXCLUDED.state, row_count = EXCLUDED.row_count, pricebook_id = EXCLUDED.pricebook_id,
    currency = EXCLUDED.currency, run_id = EXCLUDED.run_id, reason = EXCLUDED.reason,
    empty_since = EXCLUDED.empty_since, collected_at = now();

-- name: record_empty_hour
-- OpenCost answered the hour with no allocations: its rows (if any) are kept, it stays open (or
-- is given up) with the reason, and the first empty answer is remembered.
INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, run_id, reason, empty_since)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, %(state)s, 0, %(run_id)s, %(reason)s, %(empty_since)s)
ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET
    state = EXCLUDED.state, run_id = EXCLUDED.run_id, reason = EXCLUDED.reason,
    empty_since = coalesce(allocation_hours.empty_since, EXCLUDED.empty_since), collected_at = now();

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

-- name: lock_cloud_source
-- Cloud cost imports: one import of a source at a time (its rows are replaced whole).
SELECT pg_advisory_xact_lock(hashtext('cloud_costs'), hashtext(%(source)s));

-- name: delete_cloud_source
DELETE FROM cloud_costs WHERE source = %(source)s;

-- name: cloud_direct_costs
-- Cloud spend whose charge period overlaps [start, end), per owner, cost centre, currency, charge
-- period and service; the effective cost when known, else the billed cost. Partial overlaps are
-- prorated exactly by the domain (finops.chargeback.DirectCost), not here.
SELECT team AS owner, cost_center, currency, charge_start, charge_end, coalesce(service, '') AS service,
       sum(coalesce(effective_cost_micros, billed_cost_micros)) AS micros, min(source) AS source
FROM cloud_costs
WHERE charge_start < %(end)s
  AND (charge_end > %(start)s OR (charge_end = charge_start AND charge_start >= %(start)s))
GROUP BY team, cost_center, currency, charge_start, charge_end, service
ORDER BY charge_start, charge_end, team, cost_center, service;

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
