-- Packs: small capture objects stored many to one file of the object store.
-- A packed object is found through its row here; a pack's own trailer names
-- its members too, so this index can be rebuilt from the packs. A pack is
-- writing (its file is being written), ready (its members are found in it)
-- or deleting (it holds nothing; its file is being deleted).
CREATE TABLE packs (
    pack_key TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
-- Each object at most once: the latest pack written with it holds it.
CREATE TABLE pack_members (
    object_key TEXT PRIMARY KEY,
    pack_key TEXT NOT NULL,
    at_offset INTEGER NOT NULL,
    length INTEGER NOT NULL
);
CREATE INDEX pack_members_by_pack ON pack_members (pack_key);
