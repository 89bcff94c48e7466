-- Templates: images built from a Dockerfile by a worker that can build.
-- A build carries what it was asked (the Dockerfile, its context, the
-- start and ready commands) and what became of it; workspaces of a
-- template get its newest successful build.
CREATE TABLE templates (
    name TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE template_builds (
    id TEXT PRIMARY KEY,
    template_name TEXT NOT NULL REFERENCES templates (name),
    state TEXT NOT NULL,
    -- sha256 of the Dockerfile and context: an unchanged rebuild is a hit.
    build_key TEXT NOT NULL,
    dockerfile TEXT NOT NULL,
    context BYTEA,
    start_command TEXT,
    ready_command TEXT,
    digest TEXT,
    size_bytes BIGINT,
    cache_hit BIGINT NOT NULL DEFAULT 0,
    builder TEXT,
    host TEXT,
    error TEXT,
    log_bytes BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    finished_at BIGINT
);
CREATE INDEX template_builds_by_template ON template_builds (template_name, created_at);

-- A build's output, in the order it came.
CREATE TABLE template_build_logs (
    build_id TEXT NOT NULL REFERENCES template_builds (id),
    seq BIGINT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (build_id, seq)
);

-- What each worker builds images with (NULL: it cannot build).
ALTER TABLE workers ADD COLUMN builder TEXT;
