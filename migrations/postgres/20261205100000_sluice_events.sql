-- sluice's own events (drain changes, retention, recovery attempts,
-- captures registered, gateway sessions, webhooks disabled) share the
-- events table, and so the global feed's order, with the contract's. They
-- take no place in a workspace's own log (no seq), and one that concerns
-- no workspace has none.
ALTER TABLE events ALTER COLUMN seq DROP NOT NULL;
ALTER TABLE events ALTER COLUMN workspace_id DROP NOT NULL;
