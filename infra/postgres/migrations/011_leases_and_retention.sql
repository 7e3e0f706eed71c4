-- Locks that work through PgBouncer's transaction pooling, retention indexes, and month
-- partition bounds computed in UTC whatever the session's TimeZone.

-- A lease: a named lock held by a row with an expiry, claimed and released in short
-- transactions (a session-level advisory lock is lost, or held by the wrong client, behind
-- transaction pooling). A holder that dies frees it when it expires.
CREATE TABLE leases (
    name        text        PRIMARY KEY,
    holder      uuid        NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- Retention (collect_allocations deletes in bounded batches, per cluster).
CREATE INDEX job_runs_cluster_started ON job_runs (cluster, started_at);
CREATE INDEX sync_events_closed ON sync_events (cluster, received_at) WHERE status IN ('measured', 'failed');
CREATE INDEX cost_actuals_measured ON cost_actuals (cluster, measured_at);

-- Month bounds in UTC: the month is computed on a timestamp (no zone), then read as UTC, so
-- neither the bounds nor "+ 1 month" depend on the session's TimeZone (under America/New_York
-- the old drop compared a bound 4-5 hours late, keeping a month too long; the old create added
-- the month in local time, an hour off across a DST change).
CREATE OR REPLACE FUNCTION finops_ensure_allocation_partition(moment timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    month_utc   timestamp := date_trunc('month', moment AT TIME ZONE 'UTC');
    partition   text      := 'provider_allocations_' || to_char(month_utc, 'YYYYMM');
BEGIN
    IF to_regclass(partition) IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtext('finops_ensure_allocation_partition'));
        BEGIN
            EXECUTE format(
                'CREATE TABLE IF NOT EXISTS %I PARTITION OF provider_allocations FOR VALUES FROM (%L) TO (%L)',
                partition, to_char(month_utc, 'YYYY-MM-DD HH24:MI:SS') || '+00',
                to_char(month_utc + interval '1 month', 'YYYY-MM-DD HH24:MI:SS') || '+00');
        EXCEPTION WHEN duplicate_table OR unique_violation THEN
            NULL;  -- created by a concurrent transaction meanwhile
        END;
    END IF;
    RETURN partition;
END;
$$;

CREATE OR REPLACE FUNCTION finops_drop_allocation_partitions(cutoff timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    part record;
BEGIN
    FOR part IN
        SELECT c.relname
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'provider_allocations'::regclass
          AND c.relname ~ '^provider_allocations_[0-9]{6}$'
          AND (to_date(substr(c.relname, 22, 6), 'YYYYMM')::timestamp + interval '1 month') AT TIME ZONE 'UTC' <= cutoff
        ORDER BY c.relname
    LOOP
        EXECUTE format('DROP TABLE %I', part.relname);
        RETURN NEXT part.relname;
    END LOOP;
END;
$$;
