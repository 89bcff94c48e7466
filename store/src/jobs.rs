//! Durable jobs with leases and fencing generations.
//!
//! A job is one row per (kind, subject): "reconcile workspace W", "run exec
//! run R", not before `run_at`. A worker claims due jobs with a lease; a
//! heartbeat renews the lease and keeps its generation; every claim takes
//! the next generation, so once another worker has taken a job over, every
//! write the old holder attempts is refused with [`StoreError::Fenced`] and
//! nothing of it is applied. Writes check the fence inside their own
//! transaction ([`check_fence`]), so the check and the change are atomic.

use crate::Store;
use crate::clock::now_ms;
use crate::db::{Pool, Tx, args};
use crate::error::StoreError;
use crate::model::{JobKind, WorkspaceStatus};
use sluice_domain::ids::WorkerId;

/// A held job lease. Every write a job makes presents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub kind: JobKind,
    pub subject: String,
    pub owner: WorkerId,
    pub generation: i64,
    /// The job's nudge count when claimed: a different count at finish means
    /// someone asked for another pass while this one ran.
    pub nudge: i64,
    /// Unix milliseconds.
    pub expires_at: i64,
    /// How many times the job was claimed since it last finished cleanly.
    pub attempts: i64,
    /// Claimed from a holder whose lease ran out unreleased.
    pub taken_over: bool,
}

/// A lease renewed by a task of its own, every third of its length, until
/// dropped; the renewal stops once another holder has the job.
pub struct KeptLease {
    current: std::sync::Arc<std::sync::Mutex<Lease>>,
    renewing: tokio::task::JoinHandle<()>,
}

impl KeptLease {
    /// The lease as last renewed (its generation never changes).
    pub fn current(&self) -> Lease {
        self.current.lock().unwrap().clone()
    }
}

impl Drop for KeptLease {
    fn drop(&mut self) {
        self.renewing.abort();
    }
}

/// A job that was parked after failing too often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedJob {
    pub kind: JobKind,
    pub subject: String,
    pub attempts: i64,
    /// Why it was parked: its last error.
    pub last_error: String,
    /// Unix milliseconds.
    pub failed_at: i64,
}

impl Lease {
    fn fenced(&self) -> StoreError {
        StoreError::Fenced { kind: self.kind.to_string(), subject: self.subject.clone(), generation: self.generation }
    }
}

/// Makes the job due at `run_at` (or keeps an earlier time) and counts a
/// nudge, inside the caller's transaction. A request for a parked job
/// brings it back with its attempts counted afresh: someone asked again.
pub(crate) async fn enqueue(
    tx: &mut Tx,
    kind: JobKind,
    subject: &str,
    run_at: i64,
    now: i64,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO jobs (kind, subject, run_at, nudge, generation, attempts, created_at, updated_at) \
         VALUES ($1, $2, $3, 0, 0, 0, $4, $4) \
         ON CONFLICT (kind, subject) DO UPDATE SET \
           run_at = CASE WHEN jobs.failed_at IS NULL AND jobs.run_at < excluded.run_at \
             THEN jobs.run_at ELSE excluded.run_at END, \
           attempts = CASE WHEN jobs.failed_at IS NULL THEN jobs.attempts ELSE 0 END, \
           failed_at = NULL, nudge = jobs.nudge + 1, updated_at = excluded.updated_at",
        args![kind.as_str(), subject, run_at, now],
    )
    .await?;
    Ok(())
}

/// Creates a job already leased to `owner` for `lease_ms` (its first
/// claim), for a caller that runs it at once: no claim comes between.
pub(crate) async fn insert_held(
    tx: &mut Tx,
    kind: JobKind,
    subject: &str,
    owner: &WorkerId,
    lease_ms: i64,
    now: i64,
) -> Result<Lease, StoreError> {
    let lease = Lease {
        kind,
        subject: subject.to_owned(),
        owner: owner.to_owned(),
        generation: 1,
        nudge: 0,
        expires_at: now + lease_ms,
        attempts: 1,
        taken_over: false,
    };
    tx.execute(
        "INSERT INTO jobs (kind, subject, run_at, nudge, generation, attempts, created_at, updated_at, \
         lease_owner, lease_expires_at) VALUES ($1, $2, $3, $4, $5, $6, $3, $3, $7, $8)",
        args![kind.as_str(), subject, now, lease.nudge, lease.generation, lease.attempts, owner, lease.expires_at],
    )
    .await?;
    Ok(lease)
}

/// Refuses (and so rolls back) the caller's transaction unless `lease` is
/// still the job's current, unexpired lease. On PostgreSQL the row lock it
/// takes also orders the write after any concurrent takeover.
pub(crate) async fn check_fence(tx: &mut Tx, lease: &Lease, now: i64) -> Result<(), StoreError> {
    let held = tx
        .execute(
            "UPDATE jobs SET updated_at = $1 WHERE kind = $2 AND subject = $3 AND lease_owner = $4 \
             AND generation = $5 AND lease_expires_at >= $1",
            args![now, lease.kind.as_str(), &lease.subject, &lease.owner, lease.generation],
        )
        .await?;
    if held == 1 { Ok(()) } else { Err(lease.fenced()) }
}

/// Opens a write transaction that holds only while `lease` does (see
/// [`check_fence`]); returns it with the time it was taken at.
pub(crate) async fn begin_fenced(pool: &Pool, lease: &Lease) -> Result<(Tx, i64), StoreError> {
    let now = now_ms();
    let mut tx = pool.begin().await?;
    check_fence(&mut tx, lease, now).await?;
    Ok((tx, now))
}

/// Ends a pass inside the caller's fenced transaction (see
/// [`Store::finish_job`]).
pub(crate) async fn finish_in(
    tx: &mut Tx,
    lease: &Lease,
    next: Option<i64>,
    error: Option<&str>,
    now: i64,
) -> Result<(), StoreError> {
    let removed = match next {
        None => {
            tx.execute(
                "DELETE FROM jobs WHERE kind = $1 AND subject = $2 AND nudge = $3",
                args![lease.kind.as_str(), &lease.subject, lease.nudge],
            )
            .await?
        }
        Some(_) => 0,
    };
    if removed == 0 {
        let run_at = next.unwrap_or(now);
        tx.execute(
            "UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL, \
             run_at = CASE WHEN nudge <> $1 THEN $2 ELSE $3 END, \
             attempts = $4, last_error = $5, updated_at = $2 \
             WHERE kind = $6 AND subject = $7",
            args![
                lease.nudge,
                now,
                run_at,
                if error.is_some() { lease.attempts } else { 0 },
                error.map(str::to_owned),
                lease.kind.as_str(),
                &lease.subject
            ],
        )
        .await?;
    }
    Ok(())
}

/// The host whose workers run job `j`: for a workspace's job, the
/// domain's `reconcile::job_host` written in SQL (an earlier run's executor
/// still on its runtime and not retained, else the current run's; the store
/// suite holds the two to each other); for an exec run's, its executor's.
/// NULL (any worker) while that executor is not placed, or is gone from
/// its runtime, and for a webhook's deliveries. A template build goes only
/// to a worker that can build (`$1`, the claimer). `$6` is the retained
/// status.
const JOB_HOST: &str = "CASE j.kind WHEN 'deliver' THEN NULL \
     WHEN 'build' THEN CASE WHEN EXISTS (SELECT 1 FROM workers b WHERE b.id = $1 AND b.builder IS NOT NULL) \
       THEN $5 ELSE '' END \
     WHEN 'exec' THEN \
       (SELECT r.host FROM exec_runs e JOIN runs r ON r.id = e.attempt_id \
        WHERE e.id = j.subject AND r.runtime_removed_at IS NULL) \
     ELSE (SELECT CASE WHEN r.runtime_removed_at IS NULL THEN r.host END FROM runs r JOIN workspaces w ON w.id = r.workspace_id \
        WHERE r.workspace_id = j.subject AND (r.id = w.current_run_id OR (r.runtime_adapter IS NOT NULL \
          AND r.runtime_removed_at IS NULL AND r.status <> $6)) \
        ORDER BY CASE WHEN r.id = w.current_run_id THEN 1 ELSE 0 END, r.created_at, r.id LIMIT 1) END";

impl Store {
    /// Asks for a job to run at `run_at` (or sooner, if it is already due).
    pub async fn enqueue_job(&self, kind: JobKind, subject: &str, run_at: i64) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        enqueue(&mut tx, kind, subject, run_at, now_ms()).await?;
        tx.commit().await
    }

    /// Claims up to `limit` due jobs whose lease is free or expired, each with
    /// a lease of `lease_ms` under a new generation, for a worker of `host`.
    /// A job whose executor lives on another host is left to that host's
    /// workers (see [`JOB_HOST`]). PostgreSQL skips rows another claimer
    /// holds locked; SQLite serializes writers.
    pub async fn claim_jobs(
        &self,
        owner: &WorkerId,
        host: &str,
        limit: i64,
        lease_ms: i64,
    ) -> Result<Vec<Lease>, StoreError> {
        let now = now_ms();
        let lock = self.pool.kind().for_update_skip_locked();
        let sql = format!(
            "UPDATE jobs SET lease_owner = $1, lease_expires_at = $2, generation = generation + 1, \
             attempts = attempts + 1, updated_at = $3, \
             taken_over = CASE WHEN lease_expires_at IS NULL THEN 0 ELSE 1 END \
             WHERE (kind, subject) IN (SELECT j.kind, j.subject FROM jobs j WHERE j.run_at <= $3 \
               AND j.failed_at IS NULL AND (j.lease_expires_at IS NULL OR j.lease_expires_at < $3) \
               AND COALESCE(({JOB_HOST}), $5) = $5 ORDER BY j.run_at LIMIT $4{lock}) \
             RETURNING kind, subject, generation, nudge, lease_expires_at, attempts, taken_over"
        );
        let rows = self
            .pool
            .fetch_all(&sql, args![owner, now + lease_ms, now, limit, host, WorkspaceStatus::Retained.as_str()])
            .await?;
        rows.iter()
            .map(|row| {
                Ok(Lease {
                    kind: row.parsed("kind")?,
                    subject: row.text("subject")?,
                    owner: owner.to_owned(),
                    generation: row.int("generation")?,
                    nudge: row.int("nudge")?,
                    expires_at: row.int("lease_expires_at")?,
                    attempts: row.int("attempts")?,
                    taken_over: row.int("taken_over")? != 0,
                })
            })
            .collect()
    }

    /// Renews a held lease for another `lease_ms`, keeping its generation.
    pub async fn renew_lease(&self, lease: &Lease, lease_ms: i64) -> Result<Lease, StoreError> {
        let now = now_ms();
        let renewed = self
            .pool
            .execute(
                "UPDATE jobs SET lease_expires_at = $1, updated_at = $2 WHERE kind = $3 AND subject = $4 \
                 AND lease_owner = $5 AND generation = $6 AND lease_expires_at >= $2",
                args![now + lease_ms, now, lease.kind.as_str(), &lease.subject, &lease.owner, lease.generation],
            )
            .await?;
        if renewed != 1 {
            return Err(lease.fenced());
        }
        Ok(Lease { expires_at: now + lease_ms, ..lease.clone() })
    }

    /// Keeps `lease` renewed for `lease_ms` at a time while its holder works.
    pub fn keep_renewed(&self, lease: Lease, lease_ms: i64) -> KeptLease {
        let current = std::sync::Arc::new(std::sync::Mutex::new(lease));
        let (store, held) = (self.clone(), current.clone());
        let every = std::time::Duration::from_millis((lease_ms / 3).max(1) as u64);
        let renewing = tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let lease = held.lock().unwrap().clone();
                match store.renew_lease(&lease, lease_ms).await {
                    Ok(renewed) => *held.lock().unwrap() = renewed,
                    Err(e) => {
                        tracing::warn!(job = %lease.subject, error = %e, "lease renewal failed");
                        if matches!(e, StoreError::Fenced { .. }) {
                            return;
                        }
                    }
                }
            }
        });
        KeptLease { current, renewing }
    }

    /// Ends a pass: with `next` the job comes due again then; without it the
    /// job is done and removed, unless a nudge arrived during the pass, in
    /// which case it is due at once. `error` is kept as the job's last error.
    pub async fn finish_job(&self, lease: &Lease, next: Option<i64>, error: Option<&str>) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        finish_in(&mut tx, lease, next, error, now).await?;
        tx.commit().await
    }

    /// Parks the job: it failed too often to be tried again on its own. It
    /// keeps its attempt count and `reason` as its last error, for operators.
    pub async fn park_job(&self, lease: &Lease, reason: &str) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL, failed_at = $1, attempts = $2, \
             last_error = $3, updated_at = $1 WHERE kind = $4 AND subject = $5",
            args![now, lease.attempts, reason, lease.kind.as_str(), &lease.subject],
        )
        .await?;
        tx.commit().await
    }

    /// The parked jobs, most recently parked first.
    pub async fn failed_jobs(&self, limit: i64) -> Result<Vec<FailedJob>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT kind, subject, attempts, last_error, failed_at FROM jobs WHERE failed_at IS NOT NULL \
                 ORDER BY failed_at DESC, kind, subject LIMIT $1",
                args![limit],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(FailedJob {
                    kind: row.parsed("kind")?,
                    subject: row.text("subject")?,
                    attempts: row.int("attempts")?,
                    last_error: row.opt_text("last_error")?.unwrap_or_default(),
                    failed_at: row.int("failed_at")?,
                })
            })
            .collect()
    }

    /// Brings a parked job back, due now with its attempts counted afresh.
    /// Answers whether there was one.
    pub async fn retry_job(&self, kind: JobKind, subject: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        let retried = self
            .pool
            .execute(
                "UPDATE jobs SET failed_at = NULL, attempts = 0, run_at = $1, updated_at = $1, nudge = nudge + 1 \
                 WHERE kind = $2 AND subject = $3 AND failed_at IS NOT NULL",
                args![now, kind.as_str(), subject],
            )
            .await?;
        Ok(retried == 1)
    }

    /// Gives a lease back untouched so another worker can claim the job at
    /// once (an orderly shutdown that did not start the pass).
    pub async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL, run_at = $1, updated_at = $1, \
             nudge = nudge + 1 WHERE kind = $2 AND subject = $3",
            args![now, lease.kind.as_str(), &lease.subject],
        )
        .await?;
        tx.commit().await
    }

    /// How many jobs exist and how many of them are due now (for health).
    pub async fn job_counts(&self) -> Result<(i64, i64), StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN run_at <= $1 AND failed_at IS NULL THEN 1 ELSE 0 END), 0) \
                 AS due FROM jobs",
                args![now_ms()],
            )
            .await?
            .ok_or_else(|| StoreError::Corrupt("COUNT returned no row".into()))?;
        Ok((row.int("total")?, row.int("due")?))
    }
}

impl Store {
    /// Expires every lease held by a worker other than `owner`, so that
    /// their jobs are taken over at once. Only for a process that knows it is
    /// the only one working on this database (an embedded `serve` holding its
    /// database's worker lock): the holders are gone.
    pub async fn expire_predecessor_leases(&self, owner: &WorkerId) -> Result<u64, StoreError> {
        let now = now_ms();
        self.pool
            .execute(
                "UPDATE jobs SET lease_expires_at = $1 - 1, updated_at = $1 \
                 WHERE lease_owner IS NOT NULL AND lease_owner <> $2 AND lease_expires_at >= $1",
                args![now, owner],
            )
            .await
    }

    /// Makes the reconcile jobs of the ready executors on `host` due now:
    /// a worker starting there has no watch on them yet, and each pass
    /// opens one. Answers how many were hastened.
    pub async fn hasten_ready_on_host(&self, host: &str) -> Result<u64, StoreError> {
        let now = now_ms();
        self.pool
            .execute(
                "UPDATE jobs SET run_at = $1, updated_at = $1 \
                 WHERE kind = $2 AND run_at > $1 AND failed_at IS NULL AND subject IN \
                   (SELECT w.id FROM workspaces w JOIN runs r ON r.id = w.current_run_id \
                    WHERE r.host = $3 AND r.status = $4 AND r.runtime_removed_at IS NULL)",
                args![now, JobKind::Reconcile.as_str(), host, WorkspaceStatus::Ready.as_str()],
            )
            .await
    }
}
