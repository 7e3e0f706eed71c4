-- PriceBook rates stored exactly, as the book states them: numeric, in currency units per unit.
-- They were integer micros, rounded half-even (0.00005479452 per GiB-hour became 55, +0.38%, and a
-- rate below 0.0000005 became free) while OpenCost priced with the full value.
-- Existing versions keep the rates they priced with: micros x 0.000001 is exact (scale 6). Their
-- fingerprints were digests of micros, so the next run stores each book again as a new version,
-- with its exact rates; old allocation rows keep pointing at the version they were priced with.
ALTER TABLE pricebooks
    ADD COLUMN cpu_hour         numeric,
    ADD COLUMN spot_cpu_hour    numeric,
    ADD COLUMN ram_gb_hour      numeric,
    ADD COLUMN spot_ram_gb_hour numeric,
    ADD COLUMN pv_gb_hour       numeric,
    ADD COLUMN gpu_hour         numeric,
    ADD COLUMN network_gib      numeric;
UPDATE pricebooks SET
    cpu_hour         = cpu_hour_micros * 0.000001,
    spot_cpu_hour    = spot_cpu_hour_micros * 0.000001,
    ram_gb_hour      = ram_gb_hour_micros * 0.000001,
    spot_ram_gb_hour = spot_ram_gb_hour_micros * 0.000001,
    pv_gb_hour       = pv_gb_hour_micros * 0.000001,
    gpu_hour         = gpu_hour_micros * 0.000001,
    network_gib      = network_gib_micros * 0.000001;
ALTER TABLE pricebooks
    ALTER COLUMN cpu_hour         SET NOT NULL,
    ALTER COLUMN spot_cpu_hour    SET NOT NULL,
    ALTER COLUMN ram_gb_hour      SET NOT NULL,
    ALTER COLUMN spot_ram_gb_hour SET NOT NULL,
    ALTER COLUMN pv_gb_hour       SET NOT NULL,
    ALTER COLUMN gpu_hour         SET NOT NULL,
    ALTER COLUMN network_gib      SET NOT NULL,
    DROP COLUMN cpu_hour_micros,
    DROP COLUMN spot_cpu_hour_micros,
    DROP COLUMN ram_gb_hour_micros,
    DROP COLUMN spot_ram_gb_hour_micros,
    DROP COLUMN pv_gb_hour_micros,
    DROP COLUMN gpu_hour_micros,
    DROP COLUMN network_gib_micros;

-- A charge's unit price is exact, in micros: an exact rate with a margin may have fractional
-- micros (a mixed-rate hour stores its quantity-weighted mean, rounded to 6 decimals of a micro).
ALTER TABLE subscription_charges ALTER COLUMN unit_price_micros TYPE numeric;
