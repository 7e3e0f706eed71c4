-- Named queries of insights: each under a "-- name: <name>" header; parameters are %(name)s.

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
