-- Named queries of charges: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: latest_subscription_versions
SELECT DISTINCT ON (uid) uid, id FROM subscription_versions
WHERE cluster = %(cluster)s AND uid = ANY(%(uids)s::text[])
ORDER BY uid, id DESC;

-- name: charge_watermarks
-- Per Subscription and source, the last finalized charge hour (kept by a trigger on the charges).
SELECT subscription_uid AS uid, source, hour FROM subscription_charge_watermarks
WHERE cluster = %(cluster)s AND subscription_uid = ANY(%(uids)s::text[]);

-- name: usage_rows
-- Allocation rows of (namespace, [start, end)) windows, disjoint per namespace, with the exact
-- rates (currency units) of the PriceBook version each row was stamped with. A row priced with
-- OpenCost's own prices has no rates (rates_id NULL): metered usage needs a PriceBook's.
SELECT a.hour, a.namespace, a.controller_kind, a.controller, a.pod, a.data_start, a.data_end,
       a.cpu_core_usage_avg, a.ram_byte_usage_avg, a.pv_byte_hours, a.network_transfer_bytes,
       a.network_receive_bytes, a.gpu_hours, a.minutes, a.currency, a.pricebook_id, p.id AS rates_id,
       p.cpu_hour, p.ram_gb_hour, p.pv_gb_hour, p.gpu_hour, p.network_gib
FROM unnest(%(namespaces)s::text[], %(starts)s::timestamptz[], %(ends)s::timestamptz[]) AS w(namespace, first, stop)
JOIN provider_allocations a ON a.namespace = w.namespace AND a.hour >= w.first AND a.hour < w.stop
LEFT JOIN pricebooks p ON p.id = a.pricebook_id AND p.source = 'pricebook'
WHERE a.cluster = %(cluster)s AND a.aggregation = %(aggregation)s AND a.entry_kind = 'workload';

-- name: charge_totals
-- Charges per Subscription and source for status.costs: the hour, the day and the month so far.
SELECT subscription_uid AS uid, source,
       coalesce(sum(amount_micros) FILTER (WHERE hour >= %(hour)s), 0)::bigint AS hour_micros,
       coalesce(sum(unpriced_rows) FILTER (WHERE hour >= %(hour)s), 0)::bigint AS hour_unpriced,
       coalesce(sum(amount_micros) FILTER (WHERE hour >= %(day)s), 0)::bigint AS day_micros,
       coalesce(sum(unpriced_rows) FILTER (WHERE hour >= %(day)s), 0)::bigint AS day_unpriced,
       sum(amount_micros)::bigint AS month_micros, sum(unpriced_rows)::bigint AS month_unpriced
FROM subscription_charges
WHERE cluster = %(cluster)s AND subscription_uid = ANY(%(uids)s::text[]) AND hour >= %(month)s AND hour < %(end)s
GROUP BY subscription_uid, source;

-- name: settled_hours
-- Hours in [start, end) whose allocation rows will not change any more (final or lost).
SELECT hour FROM allocation_hours
WHERE cluster = %(cluster)s AND aggregation = %(aggregation)s AND hour >= %(start)s AND hour < %(end)s
  AND state IN ('final', 'lost');

-- name: create_charge_staging
CREATE TEMPORARY TABLE charge_staging (LIKE subscription_charges INCLUDING DEFAULTS) ON COMMIT DROP;

-- name: merge_charge_staging
-- Finalized charges are never recomputed; open ones are rewritten.
INSERT INTO subscription_charges AS c SELECT * FROM charge_staging
ON CONFLICT (cluster, subscription_uid, hour, source) DO UPDATE SET
    namespace = EXCLUDED.namespace, name = EXCLUDED.name, offering_version_id = EXCLUDED.offering_version_id,
    subscription_version_id = EXCLUDED.subscription_version_id, unit_price_micros = EXCLUDED.unit_price_micros,
    quantity = EXCLUDED.quantity, amount_micros = EXCLUDED.amount_micros, currency = EXCLUDED.currency,
    is_finalized = EXCLUDED.is_finalized, computed_at = EXCLUDED.computed_at, unpriced_rows = EXCLUDED.unpriced_rows
WHERE NOT c.is_finalized;
