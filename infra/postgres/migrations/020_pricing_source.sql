-- Where a pricing version's prices come from. 'pricebook': the active PriceBook's rates (every
-- version before this one). 'opencost': OpenCost's own figures are authoritative (cloud list
-- prices or its custom pricing file), in the currency the operator declared (the FinOpsProvider
-- default, else PRICING_SOURCE/PRICING_CURRENCY); such a version has no rates of its own (all 0)
-- and its fingerprint is a digest of (source, currency), so switching either is a new version.
-- Rows and ledger hours point at it exactly as at a book's, so reports need no change.
ALTER TABLE pricebooks
    ADD COLUMN source text NOT NULL DEFAULT 'pricebook' CHECK (source IN ('pricebook', 'opencost'));
