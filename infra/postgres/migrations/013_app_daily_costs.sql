-- Daily cost history per Argo CD application, in the application's own scope.
--
-- An application's scope is taken from its latest cost_actuals record (never mixed in one series):
--   namespace    the record has no share: every provider_allocations row of its destination
--                namespace (workloads and unmounted volumes; the cluster's __idle__ row has no
--                namespace and is nobody's);
--   application  the record has a share: the workload rows of its destination namespace whose
--                OpenCost controller ("<controllerKind>:<controller>"; for a Rollout, whose pods
--                OpenCost names after their ReplicaSet, the ReplicaSet without its template hash)
--                is one of the share's selector controllers, or whose pod is one of its selector
--                pods (bare pods, which have no controller). Records measured before the share carried a selector (no
--                share.selector) select the share's pods by name.
-- The scope's identity is a fingerprint of (kind, destination namespace, controllers, pods): a
-- change of any of them is a new scope, and the series is rebuilt in it.

-- The scope of each application with a cost record (its latest record's).
CREATE FUNCTION finops_app_scopes(p_cluster text)
RETURNS TABLE (
    cluster               text,
    app_namespace         text,
    app_name              text,
    destination_namespace text,
    scope                 text,
    controllers           text[],
    pods                  text[],
    fingerprint           text,
    record_id             bigint
)
LANGUAGE sql STABLE AS $$
    SELECT l.cluster, l.app_namespace, l.app_name, l.destination_namespace, l.scope,
           sel.controllers, sel.pods,
           md5(l.scope || '|' || l.destination_namespace || '|' || array_to_string(sel.controllers, ',')
               || '|' || array_to_string(sel.pods, ',')),
           l.id
    FROM (SELECT DISTINCT ON (a.app_namespace, a.app_name) a.*
          FROM cost_actuals a
          WHERE a.cluster = p_cluster
          ORDER BY a.app_namespace, a.app_name, a.measured_at DESC, a.id DESC) l
    CROSS JOIN LATERAL (
        SELECT
            ARRAY(SELECT DISTINCT c COLLATE "C" FROM jsonb_array_elements_text(
                      CASE WHEN l.scope = 'application' THEN coalesce(l.share -> 'selector' -> 'controllers', '[]') ELSE '[]' END) c
                  ORDER BY 1) AS controllers,
            ARRAY(SELECT DISTINCT p COLLATE "C" FROM jsonb_array_elements_text(
                      CASE WHEN l.scope <> 'application' THEN '[]'
                           WHEN l.share ? 'selector' THEN coalesce(l.share -> 'selector' -> 'pods', '[]')
                           ELSE coalesce(l.share -> 'pods', '[]') END) p
                  ORDER BY 1) AS pods
    ) sel
$$;

-- Whether an allocation row (already known to be of the scope's destination namespace) belongs to
-- the scope. Inlined by the planner: usable in any join of scopes with provider_allocations.
CREATE FUNCTION finops_in_app_scope(
    p_scope text, p_controllers text[], p_pods text[],
    p_entry_kind text, p_controller_kind text, p_controller text, p_pod text
) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT p_scope = 'namespace'
        OR (p_entry_kind = 'workload'
            AND ((p_controller IS NOT NULL
                  AND coalesce(p_controller_kind, '') || ':'
                      || CASE WHEN p_controller_kind = 'rollout'
                              THEN regexp_replace(p_controller, '-[0-9a-z]{1,10}$', '')
                              ELSE p_controller END = ANY (p_controllers))
                 OR (p_pod IS NOT NULL AND p_pod = ANY (p_pods))))
$$;

-- Every application's own provider_allocations rows of [p_start, p_end), in its latest record's
-- scope (what a per-application cost per hour or per day sums).
CREATE FUNCTION finops_app_allocations(p_cluster text, p_aggregation text, p_start timestamptz, p_end timestamptz)
RETURNS TABLE (
    app_namespace        text,
    app_name             text,
    scope                text,
    fingerprint          text,
    hour                 timestamptz,
    namespace            text,
    name                 text,
    entry_kind           text,
    cpu_cost_micros      bigint,
    gpu_cost_micros      bigint,
    ram_cost_micros      bigint,
    pv_cost_micros       bigint,
    network_cost_micros  bigint,
    lb_cost_micros       bigint,
    shared_cost_micros   bigint,
    external_cost_micros bigint,
    total_cost_micros    bigint,
    currency             char(3),
    is_finalized         boolean
)
LANGUAGE sql STABLE AS $$
    SELECT s.app_namespace, s.app_name, s.scope, s.fingerprint, pa.hour, pa.namespace, pa.name, pa.entry_kind,
           pa.cpu_cost_micros, pa.gpu_cost_micros, pa.ram_cost_micros, pa.pv_cost_micros, pa.network_cost_micros,
           pa.lb_cost_micros, pa.shared_cost_micros, pa.external_cost_micros, pa.total_cost_micros,
           pa.currency, pa.is_finalized
    FROM finops_app_scopes(p_cluster) s
    JOIN provider_allocations pa
      ON pa.cluster = p_cluster AND pa.aggregation = p_aggregation
     AND pa.hour >= p_start AND pa.hour < p_end
     AND pa.namespace = s.destination_namespace
    WHERE finops_in_app_scope(s.scope, s.controllers, s.pods, pa.entry_kind, pa.controller_kind, pa.controller, pa.pod)
$$;

-- The scope each application's stored series is in, and where its history starts. Written by the
-- recorder under the cluster's recorder lock; a changed fingerprint deletes the series first.
CREATE TABLE app_daily_scopes (
    cluster               text        NOT NULL,
    app_namespace         text        NOT NULL,
    app_name              text        NOT NULL,
    destination_namespace text        NOT NULL,
    scope                 text        NOT NULL CHECK (scope IN ('application', 'namespace')),
    controllers           text[]      NOT NULL,
    pods                  text[]      NOT NULL,
    fingerprint           text        NOT NULL,
    aggregation           text        NOT NULL,
    first_day             date,                  -- first day its destination namespace had cost; NULL: none yet
    searched_from         date,                  -- the ledger's first day when first_day was last searched
    updated_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, app_namespace, app_name)
);

-- One row per application and UTC day that is over and whose 24 hours are final in the ledger:
-- the sum of its own allocation rows that day. Written once (a final hour never changes), deleted
-- when the application's scope changes or the day passes DAILY_HISTORY_DAYS.
CREATE TABLE app_daily_costs (
    cluster              text        NOT NULL,
    app_namespace        text        NOT NULL,
    app_name             text        NOT NULL,
    day                  date        NOT NULL,  -- UTC
    scope                text        NOT NULL CHECK (scope IN ('application', 'namespace')),
    scope_fingerprint    text        NOT NULL,
    aggregation          text        NOT NULL,
    hours                integer     NOT NULL,  -- hours of the day with rows in the scope (0: no cost)
    cpu_cost_micros      bigint      NOT NULL,
    gpu_cost_micros      bigint      NOT NULL,
    ram_cost_micros      bigint      NOT NULL,
    pv_cost_micros       bigint      NOT NULL,
    network_cost_micros  bigint      NOT NULL,
    lb_cost_micros       bigint      NOT NULL,
    shared_cost_micros   bigint      NOT NULL,
    external_cost_micros bigint      NOT NULL,
    total_cost_micros    bigint      NOT NULL,
    idle_micros          bigint      NOT NULL,  -- workload idle: cost x (request - usage) / request, per row
    currency             char(3),               -- NULL: unpriced
    recorded_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, app_namespace, app_name, day)
);
CREATE INDEX app_daily_costs_day ON app_daily_costs (cluster, day);
