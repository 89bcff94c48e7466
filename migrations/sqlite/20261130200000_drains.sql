-- Drains: what the worker last observed while ending a capture-sourced
-- run's executor, the owner's stop intent (who, when, discard), the
-- preservation schedule ahead of a runtime deadline, and retention with
-- its recovery attempts. One row per run.
CREATE TABLE drains (
    run_id                  TEXT PRIMARY KEY REFERENCES runs (id),
    workspace_id            TEXT NOT NULL REFERENCES workspaces (id),
    state                   TEXT,
    detail                  TEXT,
    observed_at             INTEGER,
    preservation_starts_at  INTEGER,
    stop_requested_by       TEXT,
    stop_requested_at       INTEGER,
    discard_requested_by    TEXT,
    discard_requested_at    INTEGER,
    final_complete          INTEGER NOT NULL DEFAULT 0,
    pending                 INTEGER,
    pending_bytes           INTEGER,
    registered              INTEGER,
    uploaded_bytes          INTEGER,
    retained_since          INTEGER,
    retained_reason         TEXT,
    recoverable             INTEGER NOT NULL DEFAULT 0,
    recovery_attempts       INTEGER NOT NULL DEFAULT 0,
    next_recovery_at        INTEGER,
    last_recovery_error     TEXT,
    updated_at              INTEGER NOT NULL
);
CREATE INDEX drains_retained ON drains (retained_since) WHERE retained_since IS NOT NULL;

-- Every capture status a worker read from an executor, with its origin
-- stamp. Consecutive equal reports of one boot are kept as one row whose
-- observation is the newest (the later stamp is the one that weighs).
CREATE TABLE executor_reports (
    run_id       TEXT NOT NULL REFERENCES runs (id),
    seq          INTEGER NOT NULL,
    epoch        INTEGER NOT NULL,
    head_n       INTEGER,
    saved        INTEGER NOT NULL,
    detail       TEXT,
    origin       TEXT NOT NULL,
    times_seen   INTEGER NOT NULL,
    first_at     INTEGER NOT NULL,
    last_at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- Completion attestations carried by stops, with what became of them:
-- accepted, ignored (at arrival) or revoked (by a later report).
CREATE TABLE attestations (
    id            TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES runs (id),
    capture_n     INTEGER NOT NULL,
    epoch         INTEGER NOT NULL,
    executor_id   TEXT NOT NULL,
    launch_id     TEXT,
    sealed_at     TEXT,
    origin        TEXT,
    outcome       TEXT NOT NULL,
    detail        TEXT,
    attested_by   TEXT NOT NULL,
    attested_at   INTEGER NOT NULL
);
CREATE INDEX attestations_by_run ON attestations (run_id, attested_at);
