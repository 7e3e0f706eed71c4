-- Emissions beside cost (finops/carbon.py): each node's and disk's grams of CO2e per collected
-- hour, and how each node's grams are split over the allocations that ran on it and its idle.
--
-- Written by the collector in the hour's transaction, after its rows and assets
-- (usecases/collect_allocations/carbon.py): deleted and inserted again with the hour, so they
-- are replaced with its rows or not at all. Separate tables, not columns of provider_allocations:
-- an hour without estimates (an OpenCost without CARBON_ESTIMATES_ENABLED) has no rows here, which
-- reads as "not measured" rather than 0 g, and the allocations' COPY is untouched.
--
-- Grams are integers: a node's hour is rounded once, then split by largest remainder, so an
-- hour's allocation_emissions add up to its asset_emissions exactly.

-- The hours stored with emissions: what a carbon report's coverage counts.
CREATE TABLE emission_hours (
    cluster        text        NOT NULL,
    aggregation    text        NOT NULL,
    hour           timestamptz NOT NULL,
    factor_source  text        NOT NULL,  -- 'opencost' (its Cloud Carbon Footprint coefficients) or the table's source
    asset_count    integer     NOT NULL,  -- nodes and disks with an estimate
    grams          bigint      NOT NULL,  -- their sum
    PRIMARY KEY (cluster, aggregation, hour)
);

-- Each node's and disk's grams CO2e in the hour, with where its factor comes from.
CREATE TABLE asset_emissions (
    cluster        text        NOT NULL,
    aggregation    text        NOT NULL,
    hour           timestamptz NOT NULL,
    kind           text        NOT NULL CONSTRAINT asset_emissions_kind CHECK (kind IN ('node', 'disk')),
    name           text        NOT NULL,  -- as in cluster_assets
    grams          bigint      NOT NULL CONSTRAINT asset_emissions_grams CHECK (grams >= 0),
    factor_source  text        NOT NULL,
    region         text,                  -- the grid region the factor stands for, when known
    PRIMARY KEY (cluster, aggregation, hour, kind, name)
);

-- The hour's grams per allocation row (its node's share and its share of the disks', summed) and
-- per node's idle: namespace '', name '__idle__', entry_kind 'idle', node the node ('' for the
-- disks' grams no volume cost carried). Owner, cost centre and controller as on the row, so a
-- report groups by team, namespace or application without joining the allocations. Rows with no
-- grams are not stored.
CREATE TABLE allocation_emissions (
    cluster          text        NOT NULL,
    aggregation      text        NOT NULL,
    hour             timestamptz NOT NULL,
    namespace        text        NOT NULL,
    name             text        NOT NULL,
    node             text        NOT NULL,
    entry_kind       text        NOT NULL,
    controller_kind  text,
    controller       text,
    pod              text,
    team             text        NOT NULL,  -- '' when the namespace has no owner label
    cost_center      text        NOT NULL,
    grams            bigint      NOT NULL CONSTRAINT allocation_emissions_grams CHECK (grams >= 0),
    PRIMARY KEY (cluster, aggregation, hour, namespace, name, node)
);
CREATE INDEX allocation_emissions_hour ON allocation_emissions (hour, cluster);
