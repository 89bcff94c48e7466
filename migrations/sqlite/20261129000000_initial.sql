-- Workspaces, their launch attempts (runs), the append-only event log, the
-- idempotent-create key records and the sealed secrets. Times are Unix
-- milliseconds in UTC; JSON documents are stored as text.

CREATE TABLE workspaces (
    id              TEXT PRIMARY KEY,
    owner_user_id   TEXT NOT NULL,
    name            TEXT NOT NULL,
    registry_id     TEXT NOT NULL,
    repository      TEXT NOT NULL,
    tag             TEXT NOT NULL,
    spec            TEXT NOT NULL,
    status          TEXT NOT NULL,
    desired_state   TEXT NOT NULL,
    current_run_id  TEXT,
    idempotency_key TEXT,
    expires_at      INTEGER,
    event_seq       INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    started_at      INTEGER,
    finished_at     INTEGER
);
CREATE INDEX workspaces_by_owner ON workspaces (owner_user_id, created_at DESC, id DESC);
CREATE INDEX workspaces_by_owner_key ON workspaces (owner_user_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX workspaces_by_expiry ON workspaces (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE runs (
    id                        TEXT PRIMARY KEY,
    workspace_id              TEXT NOT NULL REFERENCES workspaces (id),
    relation                  TEXT NOT NULL,
    trigger_type              TEXT NOT NULL,
    trigger_ref               TEXT,
    status                    TEXT NOT NULL,
    launch_id                 TEXT,
    spec                      TEXT NOT NULL,
    runtime_adapter           TEXT,
    runtime_resource_id       TEXT,
    runtime_reference         TEXT,
    runtime_status            TEXT,
    runtime_endpoint          TEXT,
    runtime_deadline          INTEGER,
    published_reference       TEXT,
    published_digest_reference TEXT,
    published_digest          TEXT,
    error_message             TEXT,
    error_code                TEXT,
    queued_at                 INTEGER NOT NULL,
    created_at                INTEGER NOT NULL,
    updated_at                INTEGER NOT NULL,
    linked_at                 INTEGER NOT NULL,
    started_at                INTEGER,
    finished_at               INTEGER
);
CREATE INDEX runs_by_workspace ON runs (workspace_id, created_at DESC, id DESC);

CREATE TABLE events (
    position     INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    seq          INTEGER NOT NULL,
    attempt_id   TEXT,
    type         TEXT NOT NULL,
    occurred_at  INTEGER NOT NULL,
    message      TEXT,
    data         TEXT,
    UNIQUE (workspace_id, seq)
);

CREATE TABLE create_keys (
    owner_user_id   TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    state           TEXT NOT NULL,
    request_hash    TEXT,
    workspace_id    TEXT,
    run_id          TEXT,
    launch_id       TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (owner_user_id, idempotency_key)
);
CREATE INDEX create_keys_by_age ON create_keys (updated_at);

CREATE TABLE sealed_secrets (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    kind         TEXT NOT NULL,
    nonce        BLOB NOT NULL,
    ciphertext   BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, kind)
);
