-- Install-time backfill: resumable across invocations, bounded in time, one replica at a time.

CREATE TABLE backfill_progress (
    cluster     text PRIMARY KEY,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz
);

-- Namespaces still to measure, with their retry schedule (after 1, 2, 4, 8 minutes).
CREATE TABLE backfill_namespaces (
    cluster         text        NOT NULL,
    namespace       text        NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'gave_up')),
    last_error      text,
    PRIMARY KEY (cluster, namespace)
);
