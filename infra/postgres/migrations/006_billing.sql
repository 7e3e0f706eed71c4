-- Tenant billing: the Offering and Subscription versions charges were priced from, and the
-- hourly charges themselves (integer micros).

CREATE TABLE offering_versions (
    id          bigserial PRIMARY KEY,
    cluster     text        NOT NULL,
    uid         text        NOT NULL,
    namespace   text        NOT NULL,
    name        text        NOT NULL,
    generation  bigint      NOT NULL,
    fingerprint text        NOT NULL,
    spec        jsonb       NOT NULL,
    seen_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (cluster, uid, fingerprint)
);
CREATE INDEX offering_versions_name ON offering_versions (cluster, namespace, name, id DESC);

CREATE TABLE subscription_versions (
    id             bigserial PRIMARY KEY,
    cluster        text        NOT NULL,
    uid            text        NOT NULL,
    namespace      text        NOT NULL,
    name           text        NOT NULL,
    generation     bigint      NOT NULL,
    fingerprint    text        NOT NULL,
    spec           jsonb       NOT NULL,
    activated_at   timestamptz,
    deactivated_at timestamptz,
    seen_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (cluster, uid, fingerprint)
);

CREATE TABLE subscription_charges (
    cluster                 text        NOT NULL,
    subscription_uid        text        NOT NULL,
    hour                    timestamptz NOT NULL,  -- window [hour, hour + 1h)
    source                  text        NOT NULL,  -- 'fee' or a meter (cpuHour, ramGbHour, ...)
    namespace               text        NOT NULL,
    name                    text        NOT NULL,
    offering_version_id     bigint      NOT NULL REFERENCES offering_versions (id),
    subscription_version_id bigint      NOT NULL REFERENCES subscription_versions (id),
    unit_price_micros       bigint,
    quantity                numeric     NOT NULL,
    amount_micros           bigint      NOT NULL,
    currency                char(3),
    is_finalized            boolean     NOT NULL,
    computed_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, subscription_uid, hour, source)
);
