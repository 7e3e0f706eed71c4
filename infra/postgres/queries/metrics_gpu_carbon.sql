-- Named queries of GET /metrics' GPU and emission families (usecases/cost_api/resource_metrics.py):
-- each under a "-- name: <name>" header; parameters are %(name)s.

-- name: metrics_gpu_costs
-- One hour's GPU cost and GPU-hours per namespace, owner, cost centre and currency as stamped on
-- the rows (after the GPU split: each row's share of its GPU), and the GPU idle per model (idle
-- true, namespace ''; gpu_model '' on an hour whose GPUs were not split). Rows without GPU are
-- left out; a GPU model's idle row is kept at 0 (its GPUs fully used).
SELECT namespace, entry_kind = 'idle' AS idle, nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       coalesce(currency, '') AS currency,
       CASE WHEN entry_kind = 'idle' THEN coalesce(gpu_model, '') ELSE '' END AS gpu_model,
       sum(coalesce(gpu_cost_micros, 0))::bigint AS gpu_micros, sum(coalesce(gpu_hours, 0)) AS gpu_hours
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s
  AND (coalesce(gpu_cost_micros, 0) <> 0 OR coalesce(gpu_hours, 0) <> 0
       OR (entry_kind = 'idle' AND name LIKE '\_\_idle\_\_/gpu:%%'))
GROUP BY 1, 2, 3, 4, 5, 6
ORDER BY 1, 2, 3, 4, 5, 6;

-- name: metrics_emissions
-- One hour's grams CO2e per namespace, owner and cost centre (idle true, namespace '', for the
-- nodes' idle).
SELECT e.namespace, e.entry_kind = 'idle' AS idle, nullif(e.team, '') AS owner,
       nullif(e.cost_center, '') AS cost_center, sum(e.grams)::bigint AS grams
FROM allocation_emissions e
WHERE e.cluster = %(cluster)s AND e.aggregation = %(aggregation)s AND e.hour = %(hour)s
GROUP BY 1, 2, 3, 4
ORDER BY 1, 2, 3, 4;

-- name: metrics_emission_hour
-- Whether the hour was stored with emissions, and their grams (the nodes' and disks').
SELECT grams FROM emission_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour = %(hour)s;
