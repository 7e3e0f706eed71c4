-- name: doctor_unowned_share
-- The cost of [start, end) (days) outside idle, and the part of it in namespaces whose rows carry
-- no owner label (the unallocated line of a chargeback), with how many such namespaces.
SELECT coalesce(sum(total_cost_micros), 0)::bigint AS total_micros,
       coalesce(sum(total_cost_micros) FILTER (WHERE namespace <> '' AND team = ''), 0)::bigint AS unowned_micros,
       count(DISTINCT namespace) FILTER (WHERE namespace <> '' AND team = '')::integer AS unowned_namespaces
FROM allocation_daily
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(start)s AND day < %(end)s
  AND entry_kind <> 'idle';
