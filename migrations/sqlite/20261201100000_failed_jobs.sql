-- A job that kept failing is parked rather than retried for ever: when it
-- was parked (NULL while it is live). Its last error and attempt count say
-- why; an operator's retry, or any new request for the job, clears it.
ALTER TABLE jobs ADD COLUMN failed_at INTEGER;
