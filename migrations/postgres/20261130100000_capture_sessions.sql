-- Capture sessions (the registrar): a worktree's chain of registered
-- captures, the lease epoch that fences older executors, a byte quota and
-- the final seal. The token exists only as a keyed hash. Each class's head
-- names a manifest document in the object store.

CREATE TABLE capture_sessions (
    id                 TEXT PRIMARY KEY,
    owner_user_id      TEXT NOT NULL,
    worktree_id        TEXT NOT NULL UNIQUE,
    token_hash         TEXT NOT NULL UNIQUE,
    epoch              BIGINT NOT NULL DEFAULT 0,
    head_n             BIGINT NOT NULL DEFAULT 0,
    quota_bytes        BIGINT,
    used_bytes         BIGINT NOT NULL DEFAULT 0,
    small_manifest     TEXT,
    small_depth        BIGINT NOT NULL DEFAULT 0,
    bulk_manifest      TEXT,
    bulk_depth         BIGINT NOT NULL DEFAULT 0,
    claimed_run_id     TEXT,
    claimed_launch     TEXT,
    seal_capture_n     BIGINT,
    seal_epoch         BIGINT,
    seal_executor_id   TEXT,
    seal_launch_id     TEXT,
    seal_at            BIGINT,
    seal_origin        TEXT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);
CREATE INDEX capture_sessions_by_owner ON capture_sessions (owner_user_id, created_at DESC);

-- Every claim: the epoch it took and the executor that took it.
CREATE TABLE capture_claims (
    session_id  TEXT NOT NULL REFERENCES capture_sessions (id),
    epoch       BIGINT NOT NULL,
    run_id      TEXT NOT NULL,
    launch      TEXT NOT NULL,
    claimed_at  BIGINT NOT NULL,
    PRIMARY KEY (session_id, epoch)
);

-- The chain: one row per registered capture, append-only.
CREATE TABLE captures (
    session_id      TEXT NOT NULL REFERENCES capture_sessions (id),
    n               BIGINT NOT NULL,
    epoch           BIGINT NOT NULL,
    run_id          TEXT NOT NULL,
    launch          TEXT NOT NULL,
    classes         TEXT NOT NULL,
    bytes           BIGINT NOT NULL,
    small_manifest  TEXT,
    bulk_manifest   TEXT,
    origin          TEXT NOT NULL,
    registered_at   BIGINT NOT NULL,
    PRIMARY KEY (session_id, n)
);
