-- Events, finished exec runs and the reports of removed executors are
-- forgotten by age: the maintenance pass finds them by these.
CREATE INDEX events_by_time ON events (occurred_at);
CREATE INDEX exec_runs_by_finish ON exec_runs (finished_at);
CREATE INDEX executor_reports_by_time ON executor_reports (last_at);
