-- Named queries of measurement: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: insert_sync_event
INSERT INTO sync_events (cluster, app_namespace, app_name, project, destination_namespace, revision,
                         finished_at, resources)
VALUES (%(cluster)s, %(app_namespace)s, %(app_name)s, %(project)s, %(destination_namespace)s, %(revision)s,
        %(finished_at)s, %(resources)s)
ON CONFLICT (cluster, app_namespace, app_name, revision, finished_at) DO NOTHING
RETURNING id, status;

-- name: find_sync_event
SELECT id, status FROM sync_events
WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
  AND revision = %(revision)s AND finished_at = %(finished_at)s;

-- name: accept_sync_webhook
-- A webhook's 202 in one statement (usecases.appcost.syncs.accept_recorded): its event inserted
-- (a replay finds the stored one by the unique key's index) and its run's job_runs row (%(run)s,
-- the row as a JSON object), whose counts gain the event's id and whether it was a replay. No row
-- when a concurrent statement committed the same event after this one's snapshot was taken: the
-- caller then reads the event with find_sync_event and records its run itself.
WITH inserted AS (
    INSERT INTO sync_events (cluster, app_namespace, app_name, project, destination_namespace, revision,
                             finished_at, resources)
    VALUES (%(cluster)s, %(app_namespace)s, %(app_name)s, %(project)s, %(destination_namespace)s, %(revision)s,
            %(finished_at)s, %(resources)s)
    ON CONFLICT (cluster, app_namespace, app_name, revision, finished_at) DO NOTHING
    RETURNING id, status
), event AS (
    SELECT id, status, true AS new FROM inserted
    UNION ALL
    SELECT id, status, false AS new FROM sync_events
    WHERE NOT EXISTS (SELECT FROM inserted)
      AND cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s
      AND revision = %(revision)s AND finished_at = %(finished_at)s
), recorded AS (
    INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms,
                          outcome, http_status, counts, error)
    SELECT r.run_id, r.function, r.cluster, r.trigger, r.started_at, r.finished_at, r.duration_ms, r.outcome,
           r.http_status, coalesce(r.counts, '{}') || jsonb_build_object('sync_event', e.id, 'replay', NOT e.new),
           r.error
    FROM jsonb_populate_record(NULL::job_runs, %(run)s::jsonb) r, event e
    ON CONFLICT (run_id) DO NOTHING
)
SELECT id, status, new FROM event;

-- name: claim_sync_event
-- Take an accepted event for measurement: pending, or claimed by a measurement that died.
UPDATE sync_events
SET status = 'measuring', claimed_at = now(), attempts = attempts + 1
WHERE id = %(id)s
  AND (status = 'pending' OR (status = 'measuring' AND claimed_at < now() - make_interval(secs => %(stale_seconds)s)))
RETURNING *;

-- name: release_sync_event
-- A measurement that failed: back to pending for the next delivery or re-drive; given up only
-- after many attempts over a whole day (retries cannot exhaust an event in minutes).
UPDATE sync_events
SET status = CASE WHEN attempts >= %(max_attempts)s AND received_at < now() - interval '24 hours'
                  THEN 'failed' ELSE 'pending' END,
    claimed_at = NULL, last_error = %(error)s
WHERE id = %(id)s AND status = 'measuring';

-- name: complete_sync_event
UPDATE sync_events SET status = 'measured', measured_at = now(), last_error = NULL WHERE id = %(id)s;

-- name: overdue_sync_events
-- Accepted but not measured after the grace period (a lost delivery, a killed pod).
SELECT id FROM sync_events
WHERE cluster = %(cluster)s
  AND ((status = 'pending' AND received_at < now() - make_interval(secs => %(older_than_seconds)s))
    OR (status = 'measuring' AND claimed_at < now() - make_interval(secs => %(older_than_seconds)s)))
ORDER BY received_at
LIMIT %(limit)s;

-- name: insert_cost_actual
INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,
                          sync_event_id, revision, measured_at, window_start, window_end, measured_hours,
                          cost_micros, monthly_micros, breakdown, idle_micros, idle_monthly_micros,
                          efficiency, pod_count, share)
VALUES (%(cluster)s, %(app_namespace)s, %(app_name)s, %(destination_namespace)s, %(measured_on)s, %(scope)s,
        %(sync_event_id)s, %(revision)s, %(measured_at)s, %(window_start)s, %(window_end)s, %(measured_hours)s,
        %(cost_micros)s, %(monthly_micros)s, %(breakdown)s, %(idle_micros)s, %(idle_monthly_micros)s,
        %(efficiency)s, %(pod_count)s, %(share)s)
ON CONFLICT (sync_event_id) DO NOTHING
RETURNING id;

-- name: lock_application
SELECT pg_advisory_xact_lock(hashtext('cost_actuals'), hashtext(%(cluster)s || '|' || %(app_namespace)s || '/' || %(app_name)s));

-- name: insert_install_cost_actual
-- Backfill's conditional insert: only while the application still has no record at all, so a
-- sync that landed meanwhile is never overwritten (callers hold lock_application).
INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,
                          sync_event_id, revision, measured_at, window_start, window_end, measured_hours,
                          cost_micros, monthly_micros, breakdown, idle_micros, idle_monthly_micros,
                          efficiency, pod_count, share)
SELECT %(cluster)s, %(app_namespace)s, %(app_name)s, %(destination_namespace)s, 'install', %(scope)s,
       NULL, %(revision)s, %(measured_at)s, %(window_start)s, %(window_end)s, %(measured_hours)s,
       %(cost_micros)s, %(monthly_micros)s, %(breakdown)s, %(idle_micros)s, %(idle_monthly_micros)s,
       %(efficiency)s, %(pod_count)s, %(share)s
WHERE NOT EXISTS (SELECT 1 FROM cost_actuals
                  WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s)
RETURNING id;

-- name: applications_with_records
SELECT DISTINCT app_namespace, app_name FROM cost_actuals WHERE cluster = %(cluster)s;

-- name: delete_application_records
DELETE FROM cost_actuals WHERE cluster = %(cluster)s AND app_namespace = %(app_namespace)s AND app_name = %(app_name)s;

-- name: backfill_progress
SELECT started_at, finished_at FROM backfill_progress WHERE cluster = %(cluster)s;

-- name: start_backfill
INSERT INTO backfill_progress (cluster, started_at, finished_at) VALUES (%(cluster)s, %(now)s, NULL)
ON CONFLICT (cluster) DO UPDATE SET started_at = EXCLUDED.started_at, finished_at = NULL;

-- name: reset_backfill_namespaces
DELETE FROM backfill_namespaces WHERE cluster = %(cluster)s;

-- name: finish_backfill
UPDATE backfill_progress SET finished_at = %(now)s WHERE cluster = %(cluster)s;

-- name: backfill_namespace_states
SELECT namespace, attempts, next_attempt_at, status, last_error FROM backfill_namespaces WHERE cluster = %(cluster)s;

-- name: upsert_backfill_namespace
INSERT INTO backfill_namespaces (cluster, namespace, attempts, next_attempt_at, status, last_error)
VALUES (%(cluster)s, %(namespace)s, %(attempts)s, %(next_attempt_at)s, %(status)s, %(last_error)s)
ON CONFLICT (cluster, namespace) DO UPDATE SET
    attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at,
    status = EXCLUDED.status, last_error = EXCLUDED.last_error;
