-- Webhook endpoints and their delivery log. An endpoint follows the
-- global feed from a cursor it keeps (the event after it is the next to
-- deliver), counts its failures in a row, and is disabled after too many.
-- Its signing secret is kept only sealed.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    secret_nonce    BYTEA NOT NULL,
    secret_sealed   BYTEA NOT NULL,
    cursor_tx       BIGINT NOT NULL,
    cursor_position BIGINT NOT NULL,
    failures        BIGINT NOT NULL DEFAULT 0,
    disabled_at     BIGINT,
    disabled_reason TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

-- One row per try, the newest few hundred per endpoint.
CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id    TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    attempt     BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    status_code BIGINT,
    error       TEXT,
    delivered   BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (webhook_id, at DESC, id DESC);
