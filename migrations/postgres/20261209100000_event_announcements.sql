-- Readers waiting on a workspace (a create or read that waits for ready)
-- hear of each event recorded for it as its transaction commits: channel
-- `sluice_events`, the workspace's id as the payload (empty for an event
-- of no workspace). PostgreSQL sends one notification per distinct payload
-- per transaction.
CREATE FUNCTION sluice_announce_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sluice_events', COALESCE(NEW.workspace_id, ''));
    RETURN NULL;
END
$$;

CREATE TRIGGER events_announce AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION sluice_announce_events();
