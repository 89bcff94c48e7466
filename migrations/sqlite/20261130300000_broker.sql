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
