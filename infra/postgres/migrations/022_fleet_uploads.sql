-- When each final hour was written to the fleet bucket as Parquet (FLEET_BUCKET,
-- usecases.collect_allocations.fleet); NULL: not yet (the next run uploads it). Rewriting an hour
-- sets it back to NULL, so its file is replaced.
ALTER TABLE allocation_hours ADD COLUMN fleet_uploaded_at timestamptz;
CREATE INDEX allocation_hours_fleet_pending ON allocation_hours (cluster, aggregation, hour)
    WHERE state = 'final' AND fleet_uploaded_at IS NULL;
