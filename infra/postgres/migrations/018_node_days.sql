-- Each settled UTC day's cost per node and namespace: what a report on the billed or amortised
-- basis reconciles (finops/reconciliation.py), since the daily rollups have no node. Written by the
-- first such report that needs the day (functions/reports/reconciled.py), once the day's 24 hours
-- are all final or lost: such hours are never rewritten, so the day's rows never change and need
-- no folding. `allocation_node_days` says which days are stored (a day may have no rows at all);
-- both are written in one transaction, and deleted with the allocations' partitions.
CREATE TABLE allocation_node_daily (
    cluster       text    NOT NULL,
    aggregation   text    NOT NULL,
    day           date    NOT NULL,  -- UTC
    node          text    NOT NULL,  -- '' for rows without a node (idle, unmounted volumes)
    namespace     text    NOT NULL,
    entry_kind    text    NOT NULL,
    team          text    NOT NULL,  -- '' when the namespace has no owner label
    cost_center   text    NOT NULL,
    total_micros  bigint  NOT NULL,
    pv_micros     bigint  NOT NULL,
    lb_micros     bigint  NOT NULL,
    other_micros  bigint  NOT NULL,  -- network, shared and external cost
    PRIMARY KEY (cluster, aggregation, day, node, namespace, entry_kind, team, cost_center)
);

CREATE TABLE allocation_node_days (
    cluster      text        NOT NULL,
    aggregation  text        NOT NULL,
    day          date        NOT NULL,
    stored_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, aggregation, day)
);
