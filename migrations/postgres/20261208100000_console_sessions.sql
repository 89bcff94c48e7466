-- Operator console sign-ins: a session cookie is honoured only while its
-- row is here and not ended, so a sign-out (or `sluice console sessions
-- revoke`) ends it on the server, whatever a browser kept.
CREATE TABLE console_sessions (
    id          TEXT PRIMARY KEY,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    ended_at    BIGINT
);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
