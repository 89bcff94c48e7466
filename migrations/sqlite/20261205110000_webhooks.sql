-- Webhook endpoints and their delivery log. An endpoint follows the
-- global feed from a cursor it keeps (the event after it is the next to
-- deliver), counts its failures in a row, and is disabled after too many.
-- Its signing secret is kept only sealed.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    secret_nonce    BLOB NOT NULL,
    secret_sealed   BLOB NOT NULL,
    cursor_tx       INTEGER NOT NULL,
    cursor_position INTEGER NOT NULL,
    failures        INTEGER NOT NULL DEFAULT 0,
    disabled_at     INTEGER,
    disabled_reason TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

-- One row per try, the newest few hundred per endpoint.
CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    status_code INTEGER,
    error       TEXT,
    delivered   INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (webhook_id, at DESC, id DESC);
