-- SSH sessions opened through a gateway, as the executor's worker relayed
-- them: who (principal, key fingerprint), what kind, when, and how each
-- ended. Never what was typed or shown.
CREATE TABLE gateway_sessions (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    run_id          TEXT NOT NULL,
    principal       TEXT NOT NULL,
    key_fingerprint TEXT,
    kind            TEXT NOT NULL,
    started_at      BIGINT NOT NULL,
    ended_at        BIGINT,
    exit_status     BIGINT,
    outcome         TEXT
);
CREATE INDEX gateway_sessions_by_workspace ON gateway_sessions (workspace_id, started_at);
