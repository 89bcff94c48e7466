-- The execution broker protocol: client instances, the tokens (leases)
-- that authenticate them, and admission (paused, emergency-stopped) per
-- instance or for the whole broker ('*'). A token exists only as a keyed
-- hash; its scope is fixed when it is issued.
CREATE TABLE broker_instances (
    name        TEXT PRIMARY KEY,
    created_at  INTEGER NOT NULL
);

CREATE TABLE broker_tokens (
    id             TEXT PRIMARY KEY,
    instance       TEXT NOT NULL REFERENCES broker_instances (name),
    token_hash     TEXT NOT NULL UNIQUE,
    scope          TEXT NOT NULL,
    issued_at      INTEGER NOT NULL,
    expires_at     INTEGER,
    superseded_at  INTEGER,
    grace_until    INTEGER,
    revoked_at     INTEGER
);
CREATE INDEX broker_tokens_by_instance ON broker_tokens (instance, issued_at);

CREATE TABLE broker_admission (
    target      TEXT PRIMARY KEY,
    state       TEXT NOT NULL,
    reason      TEXT,
    updated_at  INTEGER NOT NULL
);

-- A broker workspace: the sluice workspace an instance acquired, with what
-- the protocol reports of it. Its env is never stored here.
CREATE TABLE broker_workspaces (
    workspace_id          TEXT PRIMARY KEY REFERENCES workspaces (id),
    instance              TEXT NOT NULL REFERENCES broker_instances (name),
    label                 TEXT NOT NULL,
    size                  TEXT NOT NULL,
    image                 TEXT NOT NULL,
    agent                 TEXT,
    attributed_run        TEXT,
    idle_timeout_seconds  INTEGER NOT NULL,
    created_at            INTEGER NOT NULL,
    expires_at            INTEGER NOT NULL,
    last_used_at          INTEGER NOT NULL,
    terminated_at         INTEGER,
    termination_reason    TEXT
);
CREATE INDEX broker_workspaces_by_instance ON broker_workspaces (instance, created_at);
