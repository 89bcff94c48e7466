-- Capture sessions (the registrar): a worktree's chain of registered
-- captures, the lease epoch that fences older executors, a byte quota and
-- the final seal. The token exists only as a keyed hash. Each class's head
-- names a manifest document in the object store.

CREATE TABLE capture_sessions (
    id                 TEXT PRIMARY KEY,
    owner_user_id      TEXT NOT NULL,
    worktree_id        TEXT NOT NULL UNIQUE,
    token_hash         TEXT NOT NULL UNIQUE,
    epoch              INTEGER NOT NULL DEFAULT 0,
    head_n             INTEGER NOT NULL DEFAULT 0,
    quota_bytes        INTEGER,
    used_bytes         INTEGER NOT NULL DEFAULT 0,
    small_manifest     TEXT,
    small_depth        INTEGER NOT NULL DEFAULT 0,
    bulk_manifest      TEXT,
    bulk_depth         INTEGER NOT NULL DEFAULT 0,
    claimed_run_id     TEXT,
    claimed_launch     TEXT,
    seal_capture_n     INTEGER,
    seal_epoch         INTEGER,
    seal_executor_id   TEXT,
    seal_launch_id     TEXT,
    seal_at            INTEGER,
    seal_origin        TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);
CREATE INDEX capture_sessions_by_owner ON capture_sessions (owner_user_id, created_at DESC);

-- Every claim: the epoch it took and the executor that took it.
CREATE TABLE capture_claims (
    session_id  TEXT NOT NULL REFERENCES capture_sessions (id),
    epoch       INTEGER NOT NULL,
    run_id      TEXT NOT NULL,
    launch      TEXT NOT NULL,
    claimed_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, epoch)
);

-- The chain: one row per registered capture, append-only.
CREATE TABLE captures (
    session_id      TEXT NOT NULL REFERENCES capture_sessions (id),
    n               INTEGER NOT NULL,
    epoch           INTEGER NOT NULL,
    run_id          TEXT NOT NULL,
    launch          TEXT NOT NULL,
    classes         TEXT NOT NULL,
    bytes           INTEGER NOT NULL,
    small_manifest  TEXT,
    bulk_manifest   TEXT,
    origin          TEXT NOT NULL,
    registered_at   INTEGER NOT NULL,
    PRIMARY KEY (session_id, n)
);
