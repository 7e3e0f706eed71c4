-- Tenant billing that stays linear in the number of Subscriptions.
--
-- subscription_charge_watermarks: per Subscription and source, the last finalized charge hour,
-- written in the same transaction as the charges (collect_charges read max(hour) over every
-- finalized charge of the cluster on every run before).
CREATE TABLE subscription_charge_watermarks (
    cluster          text        NOT NULL,
    subscription_uid text        NOT NULL,
    source           text        NOT NULL,
    hour             timestamptz NOT NULL,
    PRIMARY KEY (cluster, subscription_uid, source)
);
INSERT INTO subscription_charge_watermarks (cluster, subscription_uid, source, hour)
SELECT cluster, subscription_uid, source, max(hour) FROM subscription_charges
WHERE is_finalized
GROUP BY cluster, subscription_uid, source;

-- subscription_index: every Subscription as last reconciled, with what other objects' events
-- need to find it: its Offering, its parent and the top of its parent chain (its compatibility
-- family). One event then reconciles only the objects that depend on the one that changed.
CREATE TABLE subscription_index (
    cluster            text NOT NULL,
    uid                text NOT NULL,
    namespace          text NOT NULL,
    name               text NOT NULL,
    offering_namespace text NOT NULL,
    offering_name      text NOT NULL,
    parent_namespace   text,
    parent_name        text,
    root_uid           text NOT NULL,
    PRIMARY KEY (cluster, uid)
);
CREATE INDEX subscription_index_offering ON subscription_index (cluster, offering_namespace, offering_name);
CREATE INDEX subscription_index_parent ON subscription_index (cluster, parent_namespace, parent_name);
CREATE INDEX subscription_index_root ON subscription_index (cluster, root_uid);

-- Kept by the database with every write of final charges, whoever writes them (a statement-level
-- trigger per event: PostgreSQL allows a transition table only on a single-event trigger).
CREATE FUNCTION finops_advance_charge_watermarks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO subscription_charge_watermarks AS w (cluster, subscription_uid, source, hour)
    SELECT cluster, subscription_uid, source, max(hour) FROM written WHERE is_finalized
    GROUP BY cluster, subscription_uid, source
    ON CONFLICT (cluster, subscription_uid, source) DO UPDATE SET hour = greatest(w.hour, EXCLUDED.hour);
    RETURN NULL;
END
$$;
CREATE TRIGGER subscription_charges_watermarks_insert AFTER INSERT ON subscription_charges
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION finops_advance_charge_watermarks();
CREATE TRIGGER subscription_charges_watermarks_update AFTER UPDATE ON subscription_charges
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION finops_advance_charge_watermarks();
