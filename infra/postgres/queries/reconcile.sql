-- Named queries of reconcile: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: upsert_offering_versions
-- The mirror of many Offerings at once (equal-length arrays): each one's version id. A version
-- already mirrored is not rewritten unless its generation moved (an hourly pass writes nothing).
WITH v AS (
    SELECT * FROM unnest(%(uids)s::text[], %(namespaces)s::text[], %(names)s::text[], %(generations)s::bigint[],
                         %(fingerprints)s::text[], %(specs)s::text[]) AS v(uid, namespace, name, generation, fingerprint, spec)
), written AS (
    INSERT INTO offering_versions AS o (cluster, uid, namespace, name, generation, fingerprint, spec)
    SELECT %(cluster)s, uid, namespace, name, generation, fingerprint, spec::jsonb FROM v
    ON CONFLICT (cluster, uid, fingerprint) DO UPDATE SET generation = EXCLUDED.generation
    WHERE o.generation IS DISTINCT FROM EXCLUDED.generation
    RETURNING o.id, o.uid, o.fingerprint
)
SELECT id, uid FROM written
UNION ALL
SELECT o.id, o.uid FROM offering_versions o JOIN v USING (uid, fingerprint)
WHERE o.cluster = %(cluster)s AND NOT EXISTS (SELECT 1 FROM written w WHERE w.uid = o.uid AND w.fingerprint = o.fingerprint);

-- name: latest_offering_versions
-- The last mirror of Offerings that may be gone (their Subscriptions still settle from them).
SELECT DISTINCT ON (o.namespace, o.name) o.id, o.namespace, o.name, o.spec
FROM offering_versions o
JOIN unnest(%(namespaces)s::text[], %(names)s::text[]) AS r(namespace, name) USING (namespace, name)
WHERE o.cluster = %(cluster)s
ORDER BY o.namespace, o.name, o.id DESC;

-- name: upsert_subscription_versions
-- The mirror of many Subscriptions at once (equal-length arrays): each one's version id. A
-- version already mirrored is not rewritten unless its generation moved (an hourly pass writes
-- nothing, however many Subscriptions).
WITH v AS (
    SELECT * FROM unnest(%(uids)s::text[], %(namespaces)s::text[], %(names)s::text[], %(generations)s::bigint[],
                         %(fingerprints)s::text[], %(specs)s::text[], %(activated)s::timestamptz[],
                         %(deactivated)s::timestamptz[])
         AS v(uid, namespace, name, generation, fingerprint, spec, activated_at, deactivated_at)
), written AS (
    INSERT INTO subscription_versions AS s (cluster, uid, namespace, name, generation, fingerprint, spec,
                                            activated_at, deactivated_at)
    SELECT %(cluster)s, uid, namespace, name, generation, fingerprint, spec::jsonb, activated_at, deactivated_at
    FROM v
    ON CONFLICT (cluster, uid, fingerprint) DO UPDATE SET generation = EXCLUDED.generation
    WHERE s.generation IS DISTINCT FROM EXCLUDED.generation
    RETURNING s.id, s.uid, s.fingerprint
)
SELECT id, uid FROM written
UNION ALL
SELECT s.id, s.uid FROM subscription_versions s JOIN v USING (uid, fingerprint)
WHERE s.cluster = %(cluster)s AND NOT EXISTS (SELECT 1 FROM written w WHERE w.uid = s.uid AND w.fingerprint = s.fingerprint);

-- name: upsert_subscription_index
-- Subscriptions as reconciled: what other objects' events need to find them.
INSERT INTO subscription_index AS i (cluster, uid, namespace, name, offering_namespace, offering_name,
                                     parent_namespace, parent_name, root_uid)
SELECT %(cluster)s, * FROM unnest(%(uids)s::text[], %(namespaces)s::text[], %(names)s::text[],
                                  %(offering_namespaces)s::text[], %(offering_names)s::text[],
                                  %(parent_namespaces)s::text[], %(parent_names)s::text[], %(roots)s::text[])
ON CONFLICT (cluster, uid) DO UPDATE SET
    namespace = EXCLUDED.namespace, name = EXCLUDED.name, offering_namespace = EXCLUDED.offering_namespace,
    offering_name = EXCLUDED.offering_name, parent_namespace = EXCLUDED.parent_namespace,
    parent_name = EXCLUDED.parent_name, root_uid = EXCLUDED.root_uid
WHERE (i.namespace, i.name, i.offering_namespace, i.offering_name, i.parent_namespace, i.parent_name, i.root_uid)
      IS DISTINCT FROM (EXCLUDED.namespace, EXCLUDED.name, EXCLUDED.offering_namespace, EXCLUDED.offering_name,
                        EXCLUDED.parent_namespace, EXCLUDED.parent_name, EXCLUDED.root_uid);

-- name: prune_subscription_index
-- Subscriptions the API server no longer has (a full pass lists every one that remains).
DELETE FROM subscription_index WHERE cluster = %(cluster)s AND NOT (uid = ANY(%(uids)s::text[]));

-- name: forget_subscription
DELETE FROM subscription_index WHERE cluster = %(cluster)s AND namespace = %(namespace)s AND name = %(name)s;

-- name: subscriptions_of_offering
SELECT namespace, name FROM subscription_index
WHERE cluster = %(cluster)s AND offering_namespace = %(namespace)s AND offering_name = %(name)s
ORDER BY namespace, name;

-- name: subscription_relatives
-- The Subscriptions whose gates read this one: its children and the rest of its family.
SELECT namespace, name FROM subscription_index
WHERE cluster = %(cluster)s AND ((parent_namespace = %(namespace)s AND parent_name = %(name)s) OR root_uid = %(root)s)
  AND uid <> %(uid)s
ORDER BY namespace, name;

-- name: subscription_family
-- Every Subscription under the same top of the parent chain (the compatibility gate reads them).
SELECT namespace, name FROM subscription_index WHERE cluster = %(cluster)s AND root_uid = %(root)s
ORDER BY namespace, name;
