-- Named queries of cost_api's GPU and emissions views (usecases/cost_api/gpus_carbon.py): each
-- under a "-- name: <name>" header; parameters are %(name)s.

-- name: app_scope_hours
-- One application's own rows (finops_in_app_scope, as the daily history selects them) per stored
-- hour of [start, end): their cost, GPU-hours, GPU cost and busy GPU-hours (the GPU split's
-- measured use in GPU-hours; NULL when none of the hour's rows was measured) with the GPU cost of
-- the measured rows, their currencies, and
-- whether the hour was stored with emissions.
SELECT pa.hour,
       coalesce(sum(pa.total_cost_micros), 0)::bigint AS micros,
       coalesce(sum(pa.gpu_hours), 0) AS gpu_hours,
       coalesce(sum(pa.gpu_cost_micros), 0)::bigint AS gpu_micros,
       sum(pa.gpu_busy_hours) AS busy_hours,
       sum(pa.gpu_cost_micros) FILTER (WHERE pa.gpu_busy_hours IS NOT NULL)::bigint AS measured_gpu_micros,
       coalesce(array_agg(DISTINCT btrim(pa.currency)) FILTER (WHERE pa.currency IS NOT NULL), '{}') AS currencies,
       EXISTS (SELECT 1 FROM emission_hours e
               WHERE e.cluster = %(cluster)s AND e.aggregation = %(aggregation)s AND e.hour = pa.hour) AS emitted
FROM provider_allocations pa
WHERE pa.cluster = %(cluster)s AND pa.aggregation = %(aggregation)s AND pa.namespace = %(namespace)s
  AND pa.hour >= %(start)s AND pa.hour < %(end)s
  AND finops_in_app_scope(%(scope)s, %(controllers)s::text[], %(pods)s::text[], pa.entry_kind,
                          pa.controller_kind, pa.controller, pa.pod)
GROUP BY pa.hour
ORDER BY pa.hour;

-- name: app_scope_grams
-- One application's grams CO2e over [start, end): its own rows' shares (allocation_emissions
-- carries each row's controller and pod, so the same scope selects them).
SELECT coalesce(sum(e.grams), 0)::bigint AS grams
FROM allocation_emissions e
WHERE e.cluster = %(cluster)s AND e.aggregation = %(aggregation)s AND e.namespace = %(namespace)s
  AND e.hour >= %(start)s AND e.hour < %(end)s
  AND finops_in_app_scope(%(scope)s, %(controllers)s::text[], %(pods)s::text[], e.entry_kind,
                          e.controller_kind, e.controller, e.pod);

-- name: app_scope_factors
-- Where the factors of one application's grams over [start, end) come from: those of the nodes
-- its rows ran on, and of the cluster's disks, in the hours it has grams.
WITH mine AS (
    SELECT DISTINCT e.hour, e.node
    FROM allocation_emissions e
    WHERE e.cluster = %(cluster)s AND e.aggregation = %(aggregation)s AND e.namespace = %(namespace)s
      AND e.hour >= %(start)s AND e.hour < %(end)s
      AND finops_in_app_scope(%(scope)s, %(controllers)s::text[], %(pods)s::text[], e.entry_kind,
                              e.controller_kind, e.controller, e.pod)
)
SELECT a.kind, a.factor_source AS source, a.region, count(DISTINCT a.hour)::integer AS hours
FROM asset_emissions a
JOIN mine m ON a.hour = m.hour AND (a.kind = 'disk' OR a.name = m.node)
WHERE a.cluster = %(cluster)s AND a.aggregation = %(aggregation)s
GROUP BY a.kind, a.factor_source, a.region
ORDER BY a.kind DESC, a.factor_source, a.region NULLS FIRST;

-- name: carbon_line_costs
-- The cost beside each line of the carbon report (queries/carbon.sql, carbon_lines) over
-- [start, end): the stored rows' cost per cluster, line and currency, attributed exactly as the
-- grams are (idle rows, the GPUs' idle included, are '__idle__'; NULL has no owner).
WITH r AS (
    SELECT cluster, namespace, entry_kind, team, cost_center, controller_kind, controller, pod,
           btrim(currency) AS currency, sum(total_cost_micros)::bigint AS micros
    FROM provider_allocations
    WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
      AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
    GROUP BY cluster, namespace, entry_kind, team, cost_center, controller_kind, controller, pod, btrim(currency)
)
SELECT r.cluster,
       CASE WHEN r.entry_kind = 'idle' THEN '__idle__'
            WHEN %(by)s = 'team' THEN nullif(r.team, '')
            WHEN %(by)s = 'cost-center' THEN nullif(r.cost_center, '')
            WHEN %(by)s = 'namespace' THEN nullif(r.namespace, '')
            ELSE finops_row_application(r.cluster, r.namespace, r.entry_kind, r.controller_kind,
                                        r.controller, r.pod) END AS line,
       r.currency,
       coalesce(sum(r.micros), 0)::bigint AS micros
FROM r
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;
