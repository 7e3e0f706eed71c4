-- Usage rows a charge could not price (no PriceBook rate for the meter): counted on the charge
-- row, so the run outcome and Subscription.status.costs can say what was not charged.
ALTER TABLE subscription_charges ADD COLUMN unpriced_rows integer NOT NULL DEFAULT 0;
