-- name: gpu_lines
-- GPU-hours, GPU cost and busy GPU-hours per cluster, currency and line over [start, end)
-- (usecases.reports.gpus): by team, namespace or workload (namespace/controller, or the pod when
-- it has none). Idle rows keep their own name: __idle__/gpu:<model> per GPU model, or __idle__
-- for an hour whose GPUs were not split. busy_hours: the split's measured use in GPU-hours (NULL
-- when no row of the line was measured); measured_micros: the GPU cost of the measured rows.
SELECT cluster,
       currency,
       CASE WHEN entry_kind = 'idle' THEN name
            WHEN %(by)s = 'team' THEN nullif(team, '')
            WHEN %(by)s = 'namespace' THEN nullif(namespace, '')
            ELSE namespace || '/' || coalesce(nullif(controller, ''), pod, name) END AS line,
       sum(coalesce(gpu_hours, 0)) AS gpu_hours,
       sum(coalesce(gpu_cost_micros, 0))::bigint AS micros,
       sum(gpu_busy_hours) AS busy_hours,
       sum(gpu_cost_micros) FILTER (WHERE gpu_busy_hours IS NOT NULL)::bigint AS measured_micros
FROM provider_allocations
WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
  AND (coalesce(gpu_cost_micros, 0) <> 0 OR coalesce(gpu_hours, 0) <> 0 OR name LIKE '\_\_idle\_\_/gpu:%%')
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;

-- name: gpu_bases
-- The GPU basis each cluster's hours over [start, end) were split by (NULL: not split).
SELECT cluster, gpu_basis, gpu_mig_by, count(*)::int AS hours
FROM allocation_hours
WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s) AND state <> 'lost'
GROUP BY 1, 2, 3
ORDER BY 1, 2 NULLS FIRST, 3;
