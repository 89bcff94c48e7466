-- Preview grants: a workspace's port served at PORT-WORKSPACEID.DOMAIN,
-- bound to the run it was granted on (a stop or restart ends it). A
-- private grant is visited with its token, kept only as a keyed hash; a
-- public one needs none.
CREATE TABLE previews (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    run_id        TEXT NOT NULL,
    port          INTEGER NOT NULL,
    public        INTEGER NOT NULL,
    token_hash    TEXT UNIQUE,
    created_by    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    revoked_at    INTEGER
);
CREATE INDEX previews_by_workspace ON previews (workspace_id, port);
