-- The fleet: the workers that drive executors and the hosts they run on.
-- A worker's row lives while it runs (an orderly shutdown deletes it); its
-- heartbeat moves `fresh_until` ahead; a NULL capacity sets no limit. A
-- host's row outlives its workers: `last_seen_at` is the newest heartbeat
-- of any of them, from which the host is found unreachable; cordoning and
-- forgetting are recorded with who and when. Every run records the host
-- its executor was placed on.
CREATE TABLE workers (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    runtime      TEXT NOT NULL,
    capacity     INTEGER,
    internal_url TEXT,
    version      TEXT NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    fresh_until  INTEGER NOT NULL
);
CREATE INDEX workers_by_host ON workers (host);

CREATE TABLE hosts (
    name             TEXT PRIMARY KEY,
    state            TEXT NOT NULL,
    state_changed_at INTEGER NOT NULL,
    last_seen_at     INTEGER NOT NULL,
    cordoned_at      INTEGER,
    cordoned_by      TEXT,
    forgotten_at     INTEGER,
    forgotten_by     TEXT,
    created_at       INTEGER NOT NULL
);

ALTER TABLE runs ADD COLUMN host TEXT;
CREATE INDEX runs_on_host ON runs (host) WHERE host IS NOT NULL AND runtime_removed_at IS NULL;
