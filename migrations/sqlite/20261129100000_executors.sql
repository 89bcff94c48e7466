-- Durable worker jobs with leases and fencing generations, the bookkeeping a
-- reconciler needs on runs, and deterministic exec runs.

-- One row per piece of pending work: (kind, subject) such as
-- ('reconcile', workspace id) or ('exec', exec run id). `nudge` counts
-- requests made while the job was leased, so finishing a pass never loses a
-- request that arrived during it. Every claim increments `generation`; a
-- write made under an older generation is refused.
CREATE TABLE jobs (
    kind             TEXT NOT NULL,
    subject          TEXT NOT NULL,
    run_at           INTEGER NOT NULL,
    nudge            INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    generation       INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (kind, subject)
);
CREATE INDEX jobs_due ON jobs (run_at);

-- When the run's runtime resource was removed; NULL while it may exist.
ALTER TABLE runs ADD COLUMN runtime_removed_at INTEGER;
-- 1 for a launch, counting up through its retries.
ALTER TABLE runs ADD COLUMN launch_attempt INTEGER NOT NULL DEFAULT 1;
CREATE INDEX runs_with_runtime ON runs (workspace_id) WHERE runtime_adapter IS NOT NULL AND runtime_removed_at IS NULL;

CREATE TABLE exec_runs (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    owner_user_id TEXT NOT NULL,
    attempt_id    TEXT NOT NULL,
    status        TEXT NOT NULL,
    exit_code     INTEGER,
    commands      TEXT NOT NULL,
    results       TEXT NOT NULL,
    error_message TEXT,
    error_code    TEXT,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER
);
CREATE INDEX exec_runs_by_workspace ON exec_runs (workspace_id, created_at);
