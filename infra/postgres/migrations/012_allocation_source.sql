-- Where an hour's allocations came from: OpenCost's allocation API, or the same method computed
-- from Prometheus (ALLOCATION_SOURCE=prometheus). The column is on every row and on the hour's
-- ledger entry; rows stored before it existed came from OpenCost. A constant default adds the
-- column without rewriting the table (or any month partition).
ALTER TABLE provider_allocations
    ADD COLUMN source text NOT NULL DEFAULT 'opencost'
        CONSTRAINT provider_allocations_source CHECK (source IN ('opencost', 'prometheus'));
ALTER TABLE allocation_hours
    ADD COLUMN source text NOT NULL DEFAULT 'opencost'
        CONSTRAINT allocation_hours_source CHECK (source IN ('opencost', 'prometheus'));

-- The PriceBook's rate per LoadBalancer Service-hour (spec.rates.lbHour), exact like the others.
-- Versions stored before it had none: 0.
ALTER TABLE pricebooks ADD COLUMN lb_hour numeric NOT NULL DEFAULT 0;
