-- Argo CD application cost: accepted sync events and the records measured from them.

-- Every accepted webhook, persisted before the 202: nothing accepted is lost. A replayed webhook
-- (Argo CD retries on 5xx) hits the unique key and is the same event.
CREATE TABLE sync_events (
    id                    bigserial PRIMARY KEY,
    cluster               text        NOT NULL,
    app_namespace         text        NOT NULL,
    app_name              text        NOT NULL,
    project               text,
    destination_namespace text        NOT NULL,
    revision              text        NOT NULL,  -- the revision, or the multi-source revisions joined
    finished_at           timestamptz NOT NULL,
    resources             jsonb       NOT NULL DEFAULT '[]',
    status                text        NOT NULL DEFAULT 'pending'
                          CHECK (status IN ('pending', 'measuring', 'measured', 'failed')),
    attempts              integer     NOT NULL DEFAULT 0,
    received_at           timestamptz NOT NULL DEFAULT now(),
    claimed_at            timestamptz,
    measured_at           timestamptz,
    last_error            text,
    UNIQUE (cluster, app_namespace, app_name, revision, finished_at)
);
CREATE INDEX sync_events_open ON sync_events (received_at) WHERE status IN ('pending', 'measuring');

-- One measurement of an application's destination namespace. The record's own columns are the
-- whole namespace; the application's share (its own pods) is a separate document. Never mix them.
CREATE TABLE cost_actuals (
    id                        bigserial PRIMARY KEY,
    cluster                   text        NOT NULL,
    app_namespace             text        NOT NULL,
    app_name                  text        NOT NULL,
    destination_namespace     text        NOT NULL,
    measured_on               text        NOT NULL CHECK (measured_on IN ('sync', 'install')),
    scope                     text        NOT NULL CHECK (scope IN ('namespace', 'application')),
    sync_event_id             bigint      UNIQUE REFERENCES sync_events (id),
    revision                  text,
    measured_at               timestamptz NOT NULL,
    window_start              timestamptz NOT NULL,
    window_end                timestamptz NOT NULL,
    measured_hours            numeric     NOT NULL,
    cost_micros               bigint      NOT NULL,  -- the namespace, over the measured period
    monthly_micros            bigint      NOT NULL,  -- cost x 720 / measured_hours
    breakdown                 jsonb       NOT NULL,  -- micros per resource
    idle_micros               bigint,                -- workload idle; NULL = not measured
    idle_monthly_micros       bigint,
    efficiency                jsonb,                 -- NULL = not measured (never 0)
    pod_count                 integer,
    share                     jsonb                  -- the application's own pods; NULL = namespace scope
);
CREATE INDEX cost_actuals_app ON cost_actuals (cluster, app_namespace, app_name, measured_at DESC);
