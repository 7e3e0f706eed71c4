-- The commitment a bill line belongs to (FOCUS CommitmentDiscountId; CUR 2.0 the Savings Plan's or
-- reservation's ARN), so an export can say which charges a commitment covered (FOCUS 1.3
-- ContractApplied). NULL when the line has none, and for rows imported before this migration:
-- re-importing their file fills it.
ALTER TABLE cloud_costs ADD COLUMN commitment_id text;
