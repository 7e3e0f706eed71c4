-- What kind of charge each cloud cost line is (finops.cloudspend.ChargeCategory), so the
-- chargeback can be reconciled to the cloud invoice: usage is allocated, discounts, purchases
-- (commitment fees), taxes and support are told apart instead of being summed as spend. Rows
-- imported before this migration were read as spend, hence the default 'usage'; re-importing
-- their file gives them their real category.
ALTER TABLE cloud_costs
    ADD COLUMN charge_category text NOT NULL DEFAULT 'usage'
        CHECK (charge_category IN ('usage', 'discount', 'purchase', 'tax', 'support'));
