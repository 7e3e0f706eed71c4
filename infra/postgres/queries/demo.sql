-- Named queries of the local demo (make run) and its summary table.

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

-- name: demo_asset_days
-- The demo's generated cloud bill: each node's and disk's cost per day over [start, end).
SELECT (hour AT TIME ZONE 'UTC')::date AS day, kind, name, max(provider_id) AS provider_id,
       sum(CASE WHEN kind = 'node' THEN cpu_cost_micros + ram_cost_micros + gpu_cost_micros + adjustment_micros
                ELSE total_cost_micros END) AS micros
FROM cluster_assets WHERE cluster = %(cluster)s AND hour >= %(start)s AND hour < %(end)s AND kind IN ('node', 'disk')
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;

-- name: demo_sync_records
-- The demo applications' records measured on a sync, per application.
SELECT app_namespace, app_name, count(*) AS n FROM cost_actuals
WHERE cluster = %(cluster)s AND measured_on = 'sync' GROUP BY app_namespace, app_name;
