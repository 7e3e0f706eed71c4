-- The hour ledger is the authority: every (cluster, aggregation, hour) the collector knows of has
-- one state, written in the same transaction as the hour's rows. An hour with no ledger row is
-- missing.
--   open   stored, may still change (the run's pinned hour, or an empty answer within its grace)
--   final  stored for good; never rewritten
--   lost   given up (OpenCost no longer has it, or it stayed empty past the grace), with the reason
ALTER TABLE allocation_hours ADD COLUMN state text;
UPDATE allocation_hours SET state = CASE WHEN is_finalized THEN 'final' ELSE 'open' END;
ALTER TABLE allocation_hours
    ALTER COLUMN state SET NOT NULL,
    ADD CONSTRAINT allocation_hours_state CHECK (state IN ('open', 'final', 'lost')),
    DROP COLUMN is_finalized,
    ALTER COLUMN run_id DROP NOT NULL,                    -- NULL for an hour given up without a fetch
    ADD COLUMN reason      text,                          -- why lost, or why still open (empty answer)
    ADD COLUMN empty_since timestamptz,                   -- when OpenCost first answered the hour empty
    ADD COLUMN currency    char(3);                       -- what its rows are priced in; NULL = unpriced
UPDATE allocation_hours h SET currency = p.currency FROM pricebooks p WHERE p.id = h.pricebook_id;
CREATE INDEX allocation_hours_not_final ON allocation_hours (cluster, aggregation, hour) WHERE state <> 'final';

-- Days whose rollup must be rebuilt: marked in the transaction that changes one of their hours,
-- cleared in the transaction that rebuilds the rollup. A failure between the two leaves the mark,
-- and the next run (or report) rebuilds the day, so rows and rollups never disagree for long.
CREATE TABLE allocation_dirty_days (
    cluster     text        NOT NULL,
    aggregation text        NOT NULL,
    day         date        NOT NULL,  -- UTC
    marked_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, aggregation, day)
);

-- Repair what earlier versions left: every stored day is rebuilt once by the next run.
INSERT INTO allocation_dirty_days (cluster, aggregation, day)
SELECT DISTINCT cluster, aggregation, (hour AT TIME ZONE 'UTC')::date FROM allocation_hours
ON CONFLICT DO NOTHING;
