-- A capture-sourced workspace asked to sleep: why, and when it was asked.
-- Set while its sleep drains and while it sleeps; a wake, a stop, a
-- restart or its expiry clears it.
ALTER TABLE workspaces ADD COLUMN sleep_reason TEXT;
ALTER TABLE workspaces ADD COLUMN sleep_asked_at BIGINT;
