-- The epochs each run's executor claimed, looked up by run: the newest one
-- weighs against completion attestations of its earlier boots.
CREATE INDEX capture_claims_by_run ON capture_claims (run_id, epoch);
