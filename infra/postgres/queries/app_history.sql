-- Named queries of app history: each under a "-- name: <name>" header; parameters are %(name)s.

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
