-- A workspace that has ended may be deleted: it is gone from its owner's
-- lists and reads, while its rows stay for the events that name it (they
-- remain on the feed until their own retention ends).
ALTER TABLE workspaces ADD COLUMN deleted_at BIGINT;
CREATE INDEX workspaces_ended ON workspaces (finished_at) WHERE deleted_at IS NULL AND finished_at IS NOT NULL;
