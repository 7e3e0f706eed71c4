-- Named queries of cost api: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: latest_cost_actuals
-- The application's newest records, newest first (the actual is the first; the trend compares).
SELECT * FROM cost_actuals
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
ORDER BY measured_at DESC, id DESC
LIMIT %(limit)s;

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
-- The pricing version (a PriceBook's, or OpenCost's own prices) the newest stored hour was priced
-- with, else the newest version seen.
SELECT p.source, p.namespace, p.name, p.uid, p.fingerprint, p.id, p.currency, p.first_seen_at, h.hour AS priced_hour,
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
