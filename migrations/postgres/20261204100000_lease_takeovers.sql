-- Whether the newest claim of a job took it over from a holder whose lease
-- had run out unreleased (its worker died or stalled): 1, else 0.
ALTER TABLE jobs ADD COLUMN taken_over BIGINT NOT NULL DEFAULT 0;
