-- Named queries of reports: each under a "-- name: <name>" header; parameters are %(name)s.

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
-- hours of one cluster alike in state, reason, currency and pricing (unpriced: rows, no currency),
-- with the pricing version they were stamped with (its source and name; none when unpriced).
SELECT ledger.cluster, state, reason, ledger.currency, unpriced, min(hour) AS first, max(hour) AS last,
       sum(row_count)::bigint AS row_count, p.source AS pricing_source,
       CASE WHEN p.namespace = '' THEN p.name ELSE p.namespace || '/' || p.name END AS pricing_name
FROM (
    SELECT cluster, state, reason, btrim(currency) AS currency, row_count, hour, pricebook_id,
           (row_count > 0 AND currency IS NULL) AS unpriced,
           hour - interval '1 hour' * row_number() OVER (
               PARTITION BY cluster, state, reason, currency, pricebook_id, (row_count > 0 AND currency IS NULL)
               ORDER BY hour
           ) AS run
    FROM allocation_hours
    WHERE aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
      AND (%(cluster)s::text IS NULL OR cluster = %(cluster)s)
) ledger
LEFT JOIN pricebooks p ON p.id = ledger.pricebook_id
GROUP BY ledger.cluster, state, reason, ledger.currency, unpriced, run, ledger.pricebook_id, p.source, p.namespace,
         p.name
ORDER BY ledger.cluster, first;

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

-- name: lock_cloud_source
-- Cloud cost imports: one import of a source at a time (its rows are replaced whole).
SELECT pg_advisory_xact_lock(hashtext('cloud_costs'), hashtext(%(source)s));

-- name: delete_cloud_source
DELETE FROM cloud_costs WHERE source = %(source)s;

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

-- name: bill_lines
-- Every imported bill line whose charge period overlaps [start, end) (a moment inside it counts);
-- the domain gives each to a cluster or leaves it a direct cost (finops.reconciliation).
SELECT source, row_number, charge_start, charge_end, billed_cost_micros, effective_cost_micros, currency,
       charge_category, service, resource_id, account, team, cost_center, tags, commitment_id
FROM cloud_costs
WHERE charge_start < %(end)s
  AND (charge_end > %(start)s OR (charge_end = charge_start AND charge_start >= %(start)s))
ORDER BY source, row_number;

-- name: asset_provider_ids
-- The provider ids of every cluster's nodes, disks and load balancers in [start, end).
SELECT DISTINCT cluster, kind, name, provider_id
FROM cluster_assets
WHERE hour >= %(start)s AND hour < %(end)s;

-- name: reconcile_rows
-- One cluster's estimated cost per UTC day, node and namespace over [start, end), read from the
-- hourly rows: for the days not stored in allocation_node_daily (the caller asks per range).
SELECT (hour AT TIME ZONE 'UTC')::date AS day, coalesce(node, '') AS node, namespace, entry_kind,
       nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       sum(coalesce(total_cost_micros, 0)) AS total, sum(coalesce(pv_cost_micros, 0)) AS pv,
       sum(coalesce(lb_cost_micros, 0)) AS lb,
       sum(coalesce(network_cost_micros, 0) + coalesce(shared_cost_micros, 0) + coalesce(external_cost_micros, 0)) AS other
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
GROUP BY 1, 2, 3, 4, 5, 6;

-- name: stored_node_rows
-- The same, for the days [first, last) allocation_node_daily holds.
SELECT day, node, namespace, entry_kind, nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       total_micros AS total, pv_micros AS pv, lb_micros AS lb, other_micros AS other
FROM allocation_node_daily
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND day >= %(first)s AND day < %(last)s;

-- name: node_days
-- Of the days [first, last): whether allocation_node_daily holds it, and whether it may now (its 24
-- hours are all final or lost in the ledger, so its rows will not change). Dates are UTC days.
SELECT d::date AS day,
       EXISTS (SELECT 1 FROM allocation_node_days n
               WHERE n.cluster = %(cluster)s AND n.aggregation = %(aggregation)s AND n.day = d::date) AS stored,
       (SELECT count(*) FROM allocation_hours h
        WHERE h.cluster = %(cluster)s AND h.aggregation = %(aggregation)s AND h.state IN ('final', 'lost')
          AND h.hour >= d AT TIME ZONE 'UTC' AND h.hour < (d + interval '1 day') AT TIME ZONE 'UTC') = 24 AS settled
FROM generate_series(%(first)s::date, %(last)s::date - 1, interval '1 day') AS d
ORDER BY 1;

-- name: store_node_day
-- A settled day's cost per node and namespace, stored once (a concurrent report storing the same
-- day first makes this one a no-op).
WITH marked AS (
    INSERT INTO allocation_node_days (cluster, aggregation, day) VALUES (%(cluster)s, %(aggregation)s, %(day)s)
    ON CONFLICT DO NOTHING RETURNING day
)
INSERT INTO allocation_node_daily
SELECT %(cluster)s, %(aggregation)s, (hour AT TIME ZONE 'UTC')::date, coalesce(node, ''), namespace, entry_kind,
       coalesce(team, ''), coalesce(cost_center, ''), sum(coalesce(total_cost_micros, 0)),
       sum(coalesce(pv_cost_micros, 0)), sum(coalesce(lb_cost_micros, 0)),
       sum(coalesce(network_cost_micros, 0) + coalesce(shared_cost_micros, 0) + coalesce(external_cost_micros, 0))
FROM provider_allocations
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND EXISTS (SELECT 1 FROM marked)
  AND hour >= %(day)s::date::timestamp AT TIME ZONE 'UTC'
  AND hour < (%(day)s::date + 1)::timestamp AT TIME ZONE 'UTC'
GROUP BY 3, 4, 5, 6, 7, 8;

-- name: reconcile_assets
-- One cluster's assets per UTC day: a node's estimate is its CPU, RAM and GPU cost and adjustment (what its
-- allocations and idle share), a disk's or load balancer's its total.
SELECT (hour AT TIME ZONE 'UTC')::date AS day, kind, name, max(provider_id) AS provider_id,
       sum(CASE WHEN kind = 'node' THEN cpu_cost_micros + ram_cost_micros + gpu_cost_micros + adjustment_micros
                ELSE total_cost_micros END) AS estimate
FROM cluster_assets
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;  -- day order: a node's provider ID is its last day's

-- name: known_clusters
-- Every cluster the hour ledger or the daily rollups hold: what a command's --cluster may name.
SELECT cluster FROM allocation_hours UNION SELECT cluster FROM allocation_daily ORDER BY cluster;
