-- The rollup of hours (finops_allocation_rollup_hours) aggregates rows that were, for a fold, just
-- written in the same transaction: the planner has no statistics for them (a new hour is past the
-- histogram of its partition, and a new partition has none) and plans a sort of about one row.
-- The sort then holds every row of the hour: 100,000 rows of 500 bytes spilled about 21 MB to a
-- temporary file (an external merge), for about 50 groups. Hashing needs no order and a few kB per
-- group. With sorts disabled in the function alone, both of its levels hash (the sums are exact:
-- integers and numerics, added in any order to the same result); a rebuild of whole days too.
ALTER FUNCTION finops_allocation_rollup_hours(text, text, timestamptz, timestamptz) SET enable_sort = off;
