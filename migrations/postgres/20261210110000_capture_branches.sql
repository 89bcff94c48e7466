-- A session branched from another's capture (a fork): where its first
-- capture came from. Its captures name the same manifest documents; no
-- object is copied, and none is collected while any kept capture names it.
ALTER TABLE capture_sessions ADD COLUMN branched_from_session TEXT;
ALTER TABLE capture_sessions ADD COLUMN branched_from_n BIGINT;
