-- Named queries of emissions beside cost (usecases/collect_allocations/carbon.py,
-- usecases/reports/carbon.py): each under a "-- name: <name>" header; parameters are %(name)s.

-- name: delete_hour_emissions
-- The hour's emissions are replaced with its rows, in its transaction.
WITH a AS (
    DELETE FROM allocation_emissions
    WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s
), n AS (
    DELETE FROM asset_emissions
    WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s
)
DELETE FROM emission_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;

-- name: hour_rows_for_emissions
-- The hour's stored rows with what their grams are split by: CPU + RAM + GPU cost (a node's) and
-- volume cost (the disks'), in micros as stored (with their adjustments).
SELECT namespace, name, coalesce(node, '') AS node, entry_kind, controller_kind, controller, pod,
       coalesce(team, '') AS team, coalesce(cost_center, '') AS cost_center,
       (coalesce(cpu_cost_micros, 0) + coalesce(ram_cost_micros, 0) + coalesce(gpu_cost_micros, 0))::bigint AS compute_micros,
       coalesce(pv_cost_micros, 0)::bigint AS pv_micros
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s
ORDER BY namespace, name;

-- name: record_emission_hour
INSERT INTO emission_hours (cluster, aggregation, hour, factor_source, asset_count, grams)
VALUES (%(cluster)s, %(aggregation)s, %(hour)s, %(factor_source)s, %(asset_count)s, %(grams)s);

-- name: delete_expired_emissions
-- With the allocations' monthly partitions (ALLOCATION_RETENTION_MONTHS): the same cutoff.
WITH a AS (DELETE FROM allocation_emissions WHERE hour < %(cutoff)s),
     n AS (DELETE FROM asset_emissions WHERE hour < %(cutoff)s)
DELETE FROM emission_hours WHERE hour < %(cutoff)s;

-- name: carbon_lines
-- Grams CO2e per cluster and line over [start, end): by team, cost centre, namespace or Argo CD
-- application (finops_row_application). A NULL line has no owner (__unallocated__); idle
-- lines are '__idle__'.
WITH e AS (
    SELECT cluster, namespace, entry_kind, team, cost_center, controller_kind, controller, pod,
           sum(grams)::bigint AS grams
    FROM allocation_emissions
    WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
      AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
    GROUP BY cluster, namespace, entry_kind, team, cost_center, controller_kind, controller, pod
)
SELECT e.cluster,
       CASE WHEN e.entry_kind = 'idle' THEN '__idle__'
            WHEN %(by)s = 'team' THEN nullif(e.team, '')
            WHEN %(by)s = 'cost-center' THEN nullif(e.cost_center, '')
            WHEN %(by)s = 'namespace' THEN nullif(e.namespace, '')
            ELSE finops_row_application(e.cluster, e.namespace, e.entry_kind, e.controller_kind,
                                        e.controller, e.pod) END AS line,
       sum(e.grams)::bigint AS grams
FROM e
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: carbon_assets
-- Grams CO2e per cluster, factor source, region and kind of asset over [start, end): what the
-- report's lines add up to.
SELECT cluster, factor_source, region, kind, sum(grams)::bigint AS grams, count(DISTINCT hour)::int AS hours
FROM asset_emissions
WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
GROUP BY cluster, factor_source, region, kind
ORDER BY cluster, factor_source, region NULLS FIRST, kind;

-- name: carbon_hours
-- Per cluster, the stored hours of [start, end) (final or open in the ledger) and those of them
-- stored without emissions (an OpenCost without carbon estimates, the Prometheus source).
SELECT h.cluster, count(*)::int AS stored,
       coalesce(array_agg(h.hour ORDER BY h.hour) FILTER (WHERE e.hour IS NULL), '{}') AS without
FROM allocation_hours h
LEFT JOIN emission_hours e ON e.cluster = h.cluster AND e.aggregation = h.aggregation AND e.hour = h.hour
WHERE h.aggregation = %(aggregation)s AND h.hour >= %(start)s AND h.hour < %(end)s
  AND (%(cluster)s::text IS NULL OR h.cluster = %(cluster)s) AND h.state IN ('final', 'open')
GROUP BY h.cluster
ORDER BY h.cluster;

-- name: chargeback_grams
-- Grams CO2e per cluster, namespace, owner and cost centre over [start, end), idle apart (namespace
-- ''): the chargeback's carbon column (finops.chargeback_carbon splits them as the money).
SELECT cluster, namespace, entry_kind = 'idle' AS is_idle, nullif(team, '') AS owner,
       nullif(cost_center, '') AS cost_center, sum(grams)::bigint AS grams
FROM allocation_emissions
WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
GROUP BY cluster, namespace, entry_kind = 'idle', team, cost_center
ORDER BY cluster, namespace, is_idle, owner NULLS FIRST, cost_center NULLS FIRST;

-- name: focus_daily_extras
-- Per UTC day, cluster, namespace, owner and cost centre over [start, end): the GPU-hours and the
-- grams CO2e of the FOCUS export's rows (finops.focus), from the hourly rows (the daily rollups
-- hold neither). Idle apart (namespace ''), per GPU model: gpu_model set on a GPU model's idle
-- (its cost and GPU-hours), NULL on the rest of the idle (the nodes' idle grams).
WITH gpu AS (
    SELECT (hour AT TIME ZONE 'UTC')::date AS day, cluster, namespace, entry_kind = 'idle' AS is_idle,
           nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
           CASE WHEN entry_kind = 'idle' THEN gpu_model END AS gpu_model,
           sum(coalesce(gpu_hours, 0)) AS gpu_hours,
           sum(CASE WHEN entry_kind = 'idle' THEN coalesce(gpu_cost_micros, 0) ELSE 0 END)::bigint AS idle_micros
    FROM provider_allocations
    WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
      AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
      AND (coalesce(gpu_hours, 0) <> 0 OR name LIKE '\_\_idle\_\_/gpu:%%')
    GROUP BY 1, 2, 3, 4, 5, 6, 7
), grams AS (
    SELECT (hour AT TIME ZONE 'UTC')::date AS day, cluster, namespace, entry_kind = 'idle' AS is_idle,
           nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center, NULL::text AS gpu_model,
           sum(grams)::bigint AS grams
    FROM allocation_emissions
    WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
      AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
    GROUP BY 1, 2, 3, 4, 5, 6
)
SELECT day, cluster, namespace, is_idle, owner, cost_center, gpu_model,
       sum(gpu_hours) AS gpu_hours, sum(idle_micros)::bigint AS idle_micros, sum(grams)::bigint AS grams
FROM (
    SELECT day, cluster, namespace, is_idle, owner, cost_center, gpu_model, gpu_hours, idle_micros, NULL::bigint AS grams
    FROM gpu
    UNION ALL
    SELECT day, cluster, namespace, is_idle, owner, cost_center, gpu_model, NULL, NULL, grams FROM grams
) both_
GROUP BY 1, 2, 3, 4, 5, 6, 7
ORDER BY 1, 2, 3, 4, 5 NULLS FIRST, 6 NULLS FIRST, 7 NULLS FIRST;
