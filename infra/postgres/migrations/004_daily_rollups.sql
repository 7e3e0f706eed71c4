-- Daily rollups of provider_allocations: what reports read (a month of a 2,000-namespace cluster
-- is ~60,000 rows here instead of tens of millions of hourly container rows).
-- Owner labels are part of the key: a namespace relabelled mid-day splits its day between owners.
CREATE TABLE allocation_daily (
    cluster               text    NOT NULL,
    aggregation           text    NOT NULL,
    day                   date    NOT NULL,  -- UTC
    namespace             text    NOT NULL,  -- '' for idle and namespace-less entries
    entry_kind            text    NOT NULL,
    team                  text    NOT NULL,  -- '' when the namespace has no owner label
    cost_center           text    NOT NULL,
    currency              char(3),
    hours                 integer NOT NULL,
    cpu_cost_micros       bigint  NOT NULL,
    gpu_cost_micros       bigint  NOT NULL,
    ram_cost_micros       bigint  NOT NULL,
    pv_cost_micros        bigint  NOT NULL,
    lb_cost_micros        bigint  NOT NULL,
    network_cost_micros   bigint  NOT NULL,
    total_cost_micros     bigint  NOT NULL,
    billed_core_hours     numeric NOT NULL,  -- max(request, usage): what is paid for
    requested_core_hours  numeric NOT NULL,
    used_core_hours       numeric NOT NULL,
    billed_gib_hours      numeric NOT NULL,
    requested_gib_hours   numeric NOT NULL,
    used_gib_hours        numeric NOT NULL,
    PRIMARY KEY (cluster, aggregation, day, namespace, entry_kind, team, cost_center)
);
CREATE INDEX allocation_daily_day ON allocation_daily (day, cluster);
