//! An exec run's output as it comes, for whoever streams the run: the
//! holder of the run's job appends each chunk under its lease (fenced like
//! every write of a job), and a reader reads after a position, from any API
//! instance, with no gap and no repeat (positions are the store's).

use crate::Lease;
use crate::Store;
use crate::db::args;
use crate::error::StoreError;
use crate::jobs::begin_fenced;
use crate::model::ExecRun;
use sluice_domain::ids::{ExecRunId, OwnerId};

/// What an output record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    Stdout,
    Stderr,
    /// A command ended: its record's body is the JSON of how.
    Exit,
}

impl OutputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::Stdout => "stdout",
            OutputKind::Stderr => "stderr",
            OutputKind::Exit => "exit",
        }
    }

    fn parse(text: &str) -> Option<OutputKind> {
        [OutputKind::Stdout, OutputKind::Stderr, OutputKind::Exit].into_iter().find(|k| k.as_str() == text)
    }
}

/// One record of a run's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputRecord {
    /// Its position in the run's output, from 1.
    pub seq: i64,
    /// The command it is of, from 0.
    pub command: i64,
    pub kind: OutputKind,
    pub body: String,
}

impl Store {
    /// Appends `records` (command, kind, body) to the run's output, under
    /// the run's job `lease`.
    pub async fn append_exec_output(
        &self,
        lease: &Lease,
        run_id: &ExecRunId,
        records: &[(i64, OutputKind, String)],
    ) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let (mut tx, _) = begin_fenced(&self.pool, lease).await?;
        append_output_in(&mut tx, run_id, records).await?;
        tx.commit().await?;
        self.exec_written();
        Ok(())
    }

    /// Heard of each exec-run write this process commits: a stream marks
    /// what it has seen before it reads, and waits for a change after
    /// (writes of other processes are found by reading again).
    pub fn exec_writes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.exec_writes.subscribe()
    }

    pub(crate) fn exec_written(&self) {
        self.exec_writes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The owner's run as it is now, then its output after `after` (at most
    /// `limit` records); `None` when the run is not theirs. Read in that
    /// order, a run that had ended has all its output in the answer's reach.
    pub async fn exec_output_after(
        &self,
        owner: &OwnerId,
        run_id: &ExecRunId,
        after: i64,
        limit: i64,
    ) -> Result<Option<(ExecRun, Vec<OutputRecord>)>, StoreError> {
        let Some(run) = self.get_exec_run(owner, run_id).await? else { return Ok(None) };
        let rows = self
            .pool
            .fetch_all(
                "SELECT seq, command, kind, body FROM exec_output WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                args![run_id, after, limit],
            )
            .await?;
        let records = rows
            .iter()
            .map(|row| {
                let kind = row.text("kind")?;
                Ok(OutputRecord {
                    seq: row.int("seq")?,
                    command: row.int("command")?,
                    kind: OutputKind::parse(&kind)
                        .ok_or_else(|| StoreError::Corrupt(format!("exec_output.kind {kind:?}")))?,
                    body: row.text("body")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Some((run, records)))
    }
}

/// Appends `records` to the run's output in `tx` (whose lease the caller
/// checked: the lease holder is the run's only writer).
pub(crate) async fn append_output_in(
    tx: &mut crate::db::Tx,
    run_id: &ExecRunId,
    records: &[(i64, OutputKind, String)],
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    let last = tx
        .fetch_optional("SELECT COALESCE(MAX(seq), 0) AS last FROM exec_output WHERE run_id = $1", args![run_id])
        .await?
        .map(|r| r.int("last"))
        .transpose()?
        .unwrap_or(0);
    for (n, (command, kind, body)) in records.iter().enumerate() {
        tx.execute(
            "INSERT INTO exec_output (run_id, seq, command, kind, body) VALUES ($1, $2, $3, $4, $5)",
            args![run_id, last + 1 + n as i64, *command, kind.as_str(), body.as_str()],
        )
        .await?;
    }
    Ok(())
}
