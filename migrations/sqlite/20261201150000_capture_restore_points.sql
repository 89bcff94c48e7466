-- A workspace created from an earlier capture of a session
-- (spec.source.captureN): the point its first executor restores. Until that
-- executor claims the session the point is pinned (retention forgets no
-- capture a pending restore names); the claim applies it once, registering
-- the point's tree as the session's next capture.
CREATE TABLE capture_restore_points (
    workspace_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    capture_n INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    applied_at INTEGER
);
CREATE INDEX capture_restore_points_pending ON capture_restore_points (session_id, applied_at);
-- The capture a registered capture restored (NULL: the executor's own).
ALTER TABLE captures ADD COLUMN restored_from INTEGER;
