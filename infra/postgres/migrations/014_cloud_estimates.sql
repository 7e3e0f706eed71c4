-- Cloud estimates pushed by CI (cost_api, POST /api/v1/apps/{ns}/{name}/cloud-estimate): what an
-- application's cloud resources outside the cluster are expected to cost per month, as a tool
-- (Infracost today: source 'infracost') computed it from the application's infrastructure code.
--
-- One estimate per (cluster, application, source): a push replaces its key's estimate and
-- resources whole, in one transaction, so the tables never hold more than the latest push of each
-- key (that is their retention) and a replayed push leaves the same rows. Amounts are kept exactly
-- as the tool sent them (numeric, currency units, never rounded); views round once, per figure.
CREATE TABLE cloud_estimates (
    cluster          text        NOT NULL,
    app_namespace    text        NOT NULL,
    app_name         text        NOT NULL,
    source           text        NOT NULL CHECK (source IN ('infracost')),
    currency         char(3)     NOT NULL,
    tool_version     text        NOT NULL,  -- the output's format version (Infracost: "0.2")
    generated_at     timestamptz,           -- when the tool says it ran (timeGenerated), if it says
    monthly          numeric     NOT NULL,  -- sum of the top-level resources' monthly costs
    stated_monthly   numeric,               -- the tool's own total (totalMonthlyCost); NULL if none
    projects         jsonb       NOT NULL,  -- [{name, monthly, statedMonthly, resources}]
    resource_count   integer     NOT NULL,  -- top-level resources (subresources are rows too)
    unpriced_count   integer     NOT NULL,  -- resources whose monthly cost is unknown (usage-based)
    digest           text        NOT NULL,  -- sha256 of the stored content: a replay changes nothing
    received_at      timestamptz NOT NULL,  -- the last push (a replay refreshes it: confirmed)
    changed_at       timestamptz NOT NULL,  -- the last push whose content differed
    PRIMARY KEY (cluster, app_namespace, app_name, source)
);

-- One row per resource and per subresource (flattened, depth-first in the tool's order); a
-- resource's monthly cost includes its subresources', so totals add top-level rows (depth 0) only.
CREATE TABLE cloud_estimate_resources (
    cluster        text     NOT NULL,
    app_namespace  text     NOT NULL,
    app_name       text     NOT NULL,
    source         text     NOT NULL,
    position       integer  NOT NULL,  -- order in the push, from 0
    project        text     NOT NULL,
    path           text[]   NOT NULL,  -- names from the top-level resource down to this one
    depth          smallint NOT NULL,  -- 0 for a top-level resource
    monthly_cost   numeric,            -- NULL: unknown (usage-based, no usage given)
    hourly_cost    numeric,
    components     jsonb    NOT NULL,  -- [{name, unit, monthlyQuantity, price, monthlyCost}] of its own
    PRIMARY KEY (cluster, app_namespace, app_name, source, position),
    FOREIGN KEY (cluster, app_namespace, app_name, source)
        REFERENCES cloud_estimates (cluster, app_namespace, app_name, source) ON DELETE CASCADE
);
