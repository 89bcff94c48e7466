//! Records that would otherwise grow forever, forgotten by age a batch at
//! a time: events, finished exec runs (their results with them), and the
//! reports of executors that are gone. A report of an executor still on
//! its runtime is evidence a drain may need and is kept however old.

use crate::Store;
use crate::db::args;
use crate::error::StoreError;

/// What a retention pass may forget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Events,
    ExecResults,
    DrainReports,
}

impl Record {
    pub const ALL: [Record; 3] = [Record::Events, Record::ExecResults, Record::DrainReports];

    pub fn name(self) -> &'static str {
        match self {
            Record::Events => "events",
            Record::ExecResults => "exec results",
            Record::DrainReports => "drain reports",
        }
    }

    /// Deletes up to `$2` rows older than `$1`.
    fn purge_sql(self) -> &'static str {
        match self {
            Record::Events => {
                "DELETE FROM events WHERE position IN \
                 (SELECT position FROM events WHERE occurred_at < $1 ORDER BY position LIMIT $2)"
            }
            Record::ExecResults => {
                "DELETE FROM exec_runs WHERE id IN \
                 (SELECT id FROM exec_runs WHERE finished_at < $1 ORDER BY finished_at LIMIT $2)"
            }
            // From the old reports (by their time's index) to their runs:
            // a join lets SQLite start from the runs, every one of them.
            Record::DrainReports => {
                "DELETE FROM executor_reports WHERE (run_id, seq) IN \
                 (SELECT e.run_id, e.seq FROM executor_reports e WHERE e.last_at < $1 AND EXISTS \
                  (SELECT 1 FROM runs r WHERE r.id = e.run_id AND r.runtime_removed_at IS NOT NULL) LIMIT $2)"
            }
        }
    }
}

impl Store {
    /// Forgets up to `batch` of `record` older than `before_ms`; answers
    /// how many went (fewer than `batch`: none older is left).
    pub async fn purge_records(&self, record: Record, before_ms: i64, batch: u64) -> Result<u64, StoreError> {
        let batch = i64::try_from(batch).unwrap_or(i64::MAX);
        self.pool.execute(record.purge_sql(), args![before_ms, batch]).await
    }
}
