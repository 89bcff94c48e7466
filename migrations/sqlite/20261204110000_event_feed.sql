-- The global event feed reads events in position order: SQLite has one
-- writer at a time, so positions are committed in the order they are
-- taken. Nothing to add; kept so both backends share their migration list.
SELECT 1;
