-- Named queries of runs: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: insert_job_run
-- A run recorded early (the webhook's, with its event) that failed afterwards is replaced.
INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms,
                      outcome, http_status, counts, error)
VALUES (%(run_id)s, %(function)s, %(cluster)s, %(trigger)s, %(started_at)s, %(finished_at)s,
        %(duration_ms)s, %(outcome)s, %(http_status)s, %(counts)s, %(error)s)
ON CONFLICT (run_id) DO UPDATE
SET finished_at = EXCLUDED.finished_at, duration_ms = EXCLUDED.duration_ms, outcome = EXCLUDED.outcome,
    http_status = EXCLUDED.http_status, counts = EXCLUDED.counts, error = EXCLUDED.error;

-- name: recent_job_runs
SELECT run_id, function, cluster, trigger, started_at, duration_ms, outcome, http_status, counts, error
FROM job_runs
WHERE (%(function)s::text IS NULL OR function = %(function)s)
ORDER BY started_at DESC
LIMIT %(limit)s;
