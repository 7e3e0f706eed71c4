-- Cloud spend outside the cluster (managed databases, snapshots, egress...), imported from a FOCUS
-- or AWS CUR 2.0 report. It belongs to no cluster: the chargeback adds it to its owner's line
-- (tags team / cost-center; NULL when untagged, shown on __unallocated__), never spreading idle or
-- shared cost onto it. A file is imported whole: its rows replace those of the same source in one
-- transaction, so importing a file again never duplicates it.
CREATE TABLE cloud_costs (
    source                 text        NOT NULL,  -- the file's URL (an absolute path or s3://bucket/key)
    row_number             integer     NOT NULL,  -- 1 = the first row after the header
    format                 text        NOT NULL CHECK (format IN ('focus', 'cur2')),
    charge_start           timestamptz NOT NULL,  -- the charge period, half-open [start, end)
    charge_end             timestamptz NOT NULL,
    billed_cost_micros     bigint      NOT NULL,
    effective_cost_micros  bigint,                -- NULL when the report does not give it
    currency               char(3)     NOT NULL,
    service                text,
    resource_id            text,
    account                text,
    team                   text,                  -- NULL when untagged
    cost_center            text,
    tags                   jsonb       NOT NULL DEFAULT '{}',
    imported_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, row_number),
    CHECK (charge_end >= charge_start)
);
CREATE INDEX cloud_costs_charge_period ON cloud_costs (charge_start, charge_end);
