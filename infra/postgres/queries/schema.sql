-- Named queries of schema: each under a "-- name: <name>" header; parameters are %(name)s.

-- name: schema_migrations_present
SELECT to_regclass('schema_migrations') IS NOT NULL AS present;

-- name: schema_migrations_applied
SELECT version, checksum FROM schema_migrations;

-- name: claim_lease
-- Taken when free, expired, or already ours (a renewal); the row comes back only when it is ours.
-- Two claimants at once: the second waits on the first's row and then sees it held.
INSERT INTO leases (name, holder, acquired_at, expires_at)
VALUES (%(name)s, %(holder)s, now(), now() + make_interval(secs => %(seconds)s))
ON CONFLICT (name) DO UPDATE
    SET holder = EXCLUDED.holder, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
    WHERE leases.expires_at <= now() OR leases.holder = EXCLUDED.holder
RETURNING holder;

-- name: release_lease
DELETE FROM leases WHERE name = %(name)s AND holder = %(holder)s;
