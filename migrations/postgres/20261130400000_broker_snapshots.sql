-- Broker snapshots: one directory of a workspace in the capture format.
-- The manifests live in the object store and are named here by key; the
-- directory (the one path a snapshot keeps) is sealed. A deleted snapshot
-- keeps its row, so its id answers snapshot_gone.
CREATE TABLE broker_snapshots (
    snapshot_id      TEXT PRIMARY KEY,
    instance         TEXT NOT NULL REFERENCES broker_instances (name),
    workspace_id     TEXT NOT NULL,
    state            TEXT NOT NULL,
    dir_nonce        BYTEA,
    dir_sealed       BYTEA,
    small_manifest   TEXT,
    bulk_manifest    TEXT,
    files            BIGINT,
    bytes            BIGINT,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    deleted_at       BIGINT,
    delete_attempts  BIGINT NOT NULL DEFAULT 0,
    delete_error     TEXT
);
CREATE INDEX broker_snapshots_by_instance ON broker_snapshots (instance, state);
CREATE INDEX broker_snapshots_by_expiry ON broker_snapshots (state, expires_at);

-- A warm start: the snapshot restored before the workspace is running.
ALTER TABLE broker_workspaces ADD COLUMN restore_snapshot TEXT;

-- An idempotency key can make a snapshot as well as a workspace.
ALTER TABLE create_keys ADD COLUMN snapshot_id TEXT;
