-- Workers in other processes hear of a job made due at once: an enqueue
-- (an insert, or the nudge of an existing job) announces it on channel
-- `sluice_jobs` when its transaction commits. Claims, renewals and finishes
-- do not touch `nudge`, so a worker's own bookkeeping announces nothing.
CREATE FUNCTION sluice_announce_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sluice_jobs', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_announce AFTER INSERT OR UPDATE OF nudge ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION sluice_announce_jobs();
