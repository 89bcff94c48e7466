-- Retention and collection. Each session's policy (both NULL: the
-- install's), and the bytes its kept captures hold in the store (counted
-- as they are uploaded, recounted by each sweep).
ALTER TABLE capture_sessions ADD COLUMN keep_last BIGINT;
ALTER TABLE capture_sessions ADD COLUMN keep_within_ms BIGINT;
ALTER TABLE capture_sessions ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE capture_sessions SET stored_bytes = used_bytes;

-- Every capture names both classes' manifests, so one can be forgotten
-- without a later capture losing the class it did not capture again.
UPDATE captures SET small_manifest = (
    SELECT earlier.small_manifest FROM captures earlier
    WHERE earlier.session_id = captures.session_id AND earlier.n < captures.n AND earlier.small_manifest IS NOT NULL
    ORDER BY earlier.n DESC LIMIT 1
) WHERE small_manifest IS NULL;
UPDATE captures SET bulk_manifest = (
    SELECT earlier.bulk_manifest FROM captures earlier
    WHERE earlier.session_id = captures.session_id AND earlier.n < captures.n AND earlier.bulk_manifest IS NOT NULL
    ORDER BY earlier.n DESC LIMIT 1
) WHERE bulk_manifest IS NULL;

-- The object sweep's fence, one row. Each sweep's deletions raise the
-- generation; while deleting_until is ahead no capture registers, and one
-- whose objects were checked under an older generation checks again.
CREATE TABLE object_sweeps (
    id              BIGINT PRIMARY KEY CHECK (id = 1),
    generation      BIGINT NOT NULL,
    deleting_until  BIGINT,
    updated_at      BIGINT NOT NULL
);
INSERT INTO object_sweeps (id, generation, updated_at) VALUES (1, 0, 0);
