-- The one Argo CD application a stored row belongs to, for the reports read "by application"
-- (grams CO2e, and the cost beside them): the first application whose latest record's scope holds
-- the row, selector scopes before whole-namespace ones, then by name. NULL for an idle row and a
-- row no application holds.
CREATE FUNCTION finops_row_application(p_cluster text, p_namespace text, p_entry_kind text,
                                       p_controller_kind text, p_controller text, p_pod text)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT s.app_namespace || '/' || s.app_name
    FROM finops_app_scopes(p_cluster) s
    WHERE p_entry_kind <> 'idle' AND s.destination_namespace = p_namespace
      AND finops_in_app_scope(s.scope, s.controllers, s.pods, p_entry_kind, p_controller_kind, p_controller, p_pod)
    ORDER BY s.scope = 'namespace', s.app_namespace, s.app_name
    LIMIT 1
$$;
