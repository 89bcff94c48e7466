-- sluice's own events (drain changes, retention, recovery attempts,
-- captures registered, gateway sessions, webhooks disabled) share the
-- events table, and so the global feed's order, with the contract's. They
-- take no place in a workspace's own log (no seq), and one that concerns
-- no workspace has none. SQLite cannot drop NOT NULL in place: the table
-- is copied, keeping its positions and its position counter, so no new
-- event takes a position a reader has already passed.
CREATE TABLE events_next (
    position     INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    workspace_id TEXT REFERENCES workspaces (id),
    seq          INTEGER,
    attempt_id   TEXT,
    type         TEXT NOT NULL,
    occurred_at  INTEGER NOT NULL,
    message      TEXT,
    data         TEXT,
    UNIQUE (workspace_id, seq)
);
INSERT INTO events_next (position, id, workspace_id, seq, attempt_id, type, occurred_at, message, data)
    SELECT position, id, workspace_id, seq, attempt_id, type, occurred_at, message, data FROM events;
DELETE FROM sqlite_sequence WHERE name = 'events_next';
INSERT INTO sqlite_sequence (name, seq) SELECT 'events_next', seq FROM sqlite_sequence WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_next RENAME TO events;
CREATE INDEX events_by_time ON events (occurred_at);
