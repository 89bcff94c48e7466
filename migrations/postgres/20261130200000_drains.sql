-- Drains: what the worker last observed while ending a capture-sourced
-- run's executor, the owner's stop intent (who, when, discard), the
-- preservation schedule ahead of a runtime deadline, and retention with
-- its recovery attempts. One row per run.
CREATE TABLE drains (
    run_id                  TEXT PRIMARY KEY REFERENCES runs (id),
    workspace_id            TEXT NOT NULL REFERENCES workspaces (id),
    state                   TEXT,
    detail                  TEXT,
    observed_at             BIGINT,
    preservation_starts_at  BIGINT,
    stop_requested_by       TEXT,
    stop_requested_at       BIGINT,
    discard_requested_by    TEXT,
    discard_requested_at    BIGINT,
    final_complete          BIGINT NOT NULL DEFAULT 0,
    pending                 BIGINT,
    pending_bytes           BIGINT,
    registered              BIGINT,
    uploaded_bytes          BIGINT,
    retained_since          BIGINT,
    retained_reason         TEXT,
    recoverable             BIGINT NOT NULL DEFAULT 0,
    recovery_attempts       BIGINT NOT NULL DEFAULT 0,
    next_recovery_at        BIGINT,
    last_recovery_error     TEXT,
    updated_at              BIGINT NOT NULL
);
CREATE INDEX drains_retained ON drains (retained_since) WHERE retained_since IS NOT NULL;

-- Every capture status a worker read from an executor, with its origin
-- stamp. Consecutive equal reports of one boot are kept as one row whose
-- observation is the newest (the later stamp is the one that weighs).
CREATE TABLE executor_reports (
    run_id       TEXT NOT NULL REFERENCES runs (id),
    seq          BIGINT NOT NULL,
    epoch        BIGINT NOT NULL,
    head_n       BIGINT,
    saved        BIGINT NOT NULL,
    detail       TEXT,
    origin       TEXT NOT NULL,
    times_seen   BIGINT NOT NULL,
    first_at     BIGINT NOT NULL,
    last_at      BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- Completion attestations carried by stops, with what became of them:
-- accepted, ignored (at arrival) or revoked (by a later report).
CREATE TABLE attestations (
    id            TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES runs (id),
    capture_n     BIGINT NOT NULL,
    epoch         BIGINT NOT NULL,
    executor_id   TEXT NOT NULL,
    launch_id     TEXT,
    sealed_at     TEXT,
    origin        TEXT,
    outcome       TEXT NOT NULL,
    detail        TEXT,
    attested_by   TEXT NOT NULL,
    attested_at   BIGINT NOT NULL
);
CREATE INDEX attestations_by_run ON attestations (run_id, attested_at);
