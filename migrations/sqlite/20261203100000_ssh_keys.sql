-- Users' SSH public keys, registered by a product backend for a principal.
-- A key is named by its SHA-256 fingerprint and belongs to one principal;
-- the key is kept as its algorithm and base64 body (never its comment).
CREATE TABLE ssh_keys (
    fingerprint TEXT PRIMARY KEY,
    principal   TEXT NOT NULL,
    algorithm   TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX ssh_keys_by_principal ON ssh_keys (principal, created_at);
