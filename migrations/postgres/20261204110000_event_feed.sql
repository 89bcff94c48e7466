-- The global event feed's order. Identity positions are taken when a row
-- is inserted, not when its transaction commits, so a reader ordering by
-- position alone could pass over one still uncommitted. Each event keeps
-- the id of the transaction that wrote it; the feed reads only events of
-- transactions older than every transaction still running, in (tx_id,
-- position) order, which no later commit can add to.
ALTER TABLE events ADD COLUMN tx_id xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_feed ON events (tx_id, position);
