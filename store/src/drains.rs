//! Drains of capture-sourced executors: the owner's stop intent (who,
//! when, discard, attestation), what the worker last observed while ending
//! the executor, the reports it read with their origin stamps, the
//! preservation schedule, and retention with its recovery attempts.
//!
//! Attestations are weighed with the shared protocol's rule
//! ([`sluice_protocol::attest::weigh`]) inside the transaction that stores
//! them, and weighed again by every report stored after them.

use sluice_protocol::Origin;
use sluice_protocol::attest::{Attestation, Report};

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{DbRow, Tx, args};
use crate::error::StoreError;
use crate::executors::owned_workspace;
use crate::jobs::{Lease, begin_fenced, enqueue};
use crate::model::*;
use crate::workspaces::{RUN_COLUMNS, run_from_row};
use sluice_domain::drain::*;

const DRAIN_COLUMNS: &str = "run_id, workspace_id, state, detail, observed_at, preservation_starts_at, \
    stop_requested_by, stop_requested_at, discard_requested_by, discard_requested_at, final_complete, pending, \
    pending_bytes, registered, uploaded_bytes, retained_since, retained_reason, recoverable, recovery_attempts, \
    next_recovery_at, last_recovery_error";

const ATTESTATION_COLUMNS: &str = "id, run_id, capture_n, epoch, executor_id, launch_id, sealed_at, origin, outcome, detail, attested_by, attested_at";

fn drain_from_row(row: &DbRow) -> Result<Drain, StoreError> {
    let state = row.opt_text("state")?.map(|s| s.parse().map_err(|_| StoreError::Corrupt(format!("drain state {s}"))));
    let retention = match row.opt_int("retained_since")? {
        Some(since) => Some(Retention {
            since,
            reason: row.opt_text("retained_reason")?.unwrap_or_default(),
            recoverable: row.int("recoverable")? != 0,
            attempts: row.int("recovery_attempts")?,
            next_recovery_at: row.opt_int("next_recovery_at")?,
            last_error: row.opt_text("last_recovery_error")?,
        }),
        None => None,
    };
    Ok(Drain {
        run_id: row.text("run_id")?,
        workspace_id: row.text("workspace_id")?,
        state: state.transpose()?,
        detail: row.opt_text("detail")?,
        observed_at: row.opt_int("observed_at")?,
        preservation_starts_at: row.opt_int("preservation_starts_at")?,
        stop_requested: match (row.opt_text("stop_requested_by")?, row.opt_int("stop_requested_at")?) {
            (Some(by), Some(at)) => Some((by, at)),
            _ => None,
        },
        discard: match (row.opt_text("discard_requested_by")?, row.opt_int("discard_requested_at")?) {
            (Some(requested_by), Some(requested_at)) => Some(Discard { requested_by, requested_at }),
            _ => None,
        },
        final_complete: row.int("final_complete")? != 0,
        progress: DrainProgress {
            pending: row.opt_int("pending")?,
            pending_bytes: row.opt_int("pending_bytes")?,
            registered: row.opt_int("registered")?,
            uploaded_bytes: row.opt_int("uploaded_bytes")?,
        },
        retention,
    })
}

fn origin_from(column: &str, text: Option<String>) -> Result<Option<Origin>, StoreError> {
    text.map(|t| serde_json::from_str(&t).map_err(|_| StoreError::Corrupt(format!("{column} is not an origin"))))
        .transpose()
}

fn attestation_from_row(row: &DbRow) -> Result<StoredAttestation, StoreError> {
    Ok(StoredAttestation {
        id: row.text("id")?,
        run_id: row.text("run_id")?,
        attestation: Attestation {
            capture_n: row.int("capture_n")? as u64,
            epoch: row.int("epoch")? as u64,
            executor_id: row.text("executor_id")?,
            launch_id: row.opt_text("launch_id")?,
            origin: origin_from("attestations.origin", row.opt_text("origin")?)?,
        },
        sealed_at: row.opt_text("sealed_at")?,
        outcome: row.parsed("outcome")?,
        detail: row.opt_text("detail")?,
        attested_by: row.text("attested_by")?,
        attested_at: row.int("attested_at")?,
    })
}

fn report_from_row(row: &DbRow) -> Result<Report, StoreError> {
    let origin = origin_from("executor_reports.origin", Some(row.text("origin")?))?.expect("given");
    Ok(Report { origin, saved: row.int("saved")? != 0 })
}

/// Makes sure `run_id` has a drain row.
async fn ensure_drain(tx: &mut Tx, run_id: &str, workspace_id: &str, now: i64) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO drains (run_id, workspace_id, updated_at) VALUES ($1, $2, $3) ON CONFLICT (run_id) DO NOTHING",
        args![run_id, workspace_id, now],
    )
    .await?;
    Ok(())
}

async fn reports_in(tx: &mut Tx, run_id: &str) -> Result<Vec<Report>, StoreError> {
    tx.fetch_all("SELECT origin, saved FROM executor_reports WHERE run_id = $1 ORDER BY seq", args![run_id])
        .await?
        .iter()
        .map(report_from_row)
        .collect()
}

/// Sets the accepted attestations of `run` that `reports` now refute to
/// `revoked`, with the rule's detail.
async fn revoke_refuted(tx: &mut Tx, run: &Run, reports: &[Report], now: i64) -> Result<(), StoreError> {
    if run.runtime.is_none() {
        return Ok(());
    }
    let rows = tx
        .fetch_all(
            &format!("SELECT {ATTESTATION_COLUMNS} FROM attestations WHERE run_id = $1 AND outcome = $2"),
            args![&run.id, AttestationOutcome::Accepted.as_str()],
        )
        .await?;
    for row in rows {
        let stored = attestation_from_row(&row)?;
        if let Err(refuted) = sluice_domain::drain::weigh(&stored.attestation, run, reports) {
            tx.execute(
                "UPDATE attestations SET outcome = $1, detail = $2 WHERE id = $3",
                args![
                    AttestationOutcome::Revoked.as_str(),
                    format!("revoked at {now}: {}", refuted.detail),
                    &stored.id
                ],
            )
            .await?;
        }
    }
    Ok(())
}

/// Stores one report of `run`'s executor (consecutive equal reports of one
/// boot as one row with the newest stamp) and revokes the accepted
/// attestations it refutes. Takes the run's row lock first, so reports of
/// one executor are numbered one at a time.
async fn store_report(
    tx: &mut Tx,
    run: &Run,
    report: &Report,
    detail: Option<&str>,
    now: i64,
) -> Result<(), StoreError> {
    tx.execute("UPDATE runs SET updated_at = updated_at WHERE id = $1", args![&run.id]).await?;
    let origin = serde_json::to_string(&report.origin).expect("an origin serializes");
    let last = tx
        .fetch_optional(
            "SELECT seq, origin, saved, detail FROM executor_reports WHERE run_id = $1 ORDER BY seq DESC LIMIT 1",
            args![&run.id],
        )
        .await?;
    let same_as_last = match &last {
        Some(row) => {
            let previous = origin_from("executor_reports.origin", Some(row.text("origin")?))?.expect("given");
            let o = &report.origin;
            previous.epoch == o.epoch
                && previous.launch == o.launch
                && previous.boot_id == o.boot_id
                && previous.head_n == o.head_n
                && previous.observation <= o.observation
                && (row.int("saved")? != 0) == report.saved
                && row.opt_text("detail")?.as_deref() == detail
        }
        None => false,
    };
    if let (true, Some(row)) = (same_as_last, &last) {
        tx.execute(
            "UPDATE executor_reports SET origin = $1, times_seen = times_seen + 1, last_at = $2 \
             WHERE run_id = $3 AND seq = $4",
            args![origin, now, &run.id, row.int("seq")?],
        )
        .await?;
    } else {
        let seq = last.map(|r| r.int("seq")).transpose()?.unwrap_or(0) + 1;
        tx.execute(
            "INSERT INTO executor_reports (run_id, seq, epoch, head_n, saved, detail, origin, times_seen, \
             first_at, last_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $8)",
            args![
                &run.id,
                seq,
                report.origin.epoch as i64,
                report.origin.head_n.map(|n| n as i64),
                report.saved as i64,
                detail.map(str::to_owned),
                origin,
                now
            ],
        )
        .await?;
    }
    if !report.saved {
        let reports = reports_in(tx, &run.id).await?;
        revoke_refuted(tx, run, &reports, now).await?;
    }
    Ok(())
}

impl Store {
    /// The drain record of `run_id`.
    pub async fn drain(&self, run_id: &str) -> Result<Option<Drain>, StoreError> {
        self.pool
            .fetch_optional(&format!("SELECT {DRAIN_COLUMNS} FROM drains WHERE run_id = $1"), args![run_id])
            .await?
            .map(|r| drain_from_row(&r))
            .transpose()
    }

    /// Every report stored for `run_id`'s executor, oldest first.
    pub async fn executor_reports(&self, run_id: &str) -> Result<Vec<Report>, StoreError> {
        self.pool
            .fetch_all("SELECT origin, saved FROM executor_reports WHERE run_id = $1 ORDER BY seq", args![run_id])
            .await?
            .iter()
            .map(report_from_row)
            .collect()
    }

    /// The newest attestation of `run_id` still standing as accepted.
    pub async fn accepted_attestation(&self, run_id: &str) -> Result<Option<StoredAttestation>, StoreError> {
        self.pool
            .fetch_optional(
                &format!(
                    "SELECT {ATTESTATION_COLUMNS} FROM attestations WHERE run_id = $1 AND outcome = $2 \
                     ORDER BY attested_at DESC, id DESC LIMIT 1"
                ),
                args![run_id, AttestationOutcome::Accepted.as_str()],
            )
            .await?
            .map(|r| attestation_from_row(&r))
            .transpose()
    }

    /// The newest attestation of `run_id` that was revoked, unless a newer
    /// one stands as accepted.
    pub async fn revoked_attestation(&self, run_id: &str) -> Result<Option<StoredAttestation>, StoreError> {
        let newest = self
            .pool
            .fetch_optional(
                &format!(
                    "SELECT {ATTESTATION_COLUMNS} FROM attestations WHERE run_id = $1 AND outcome <> $2 \
                     ORDER BY attested_at DESC, id DESC LIMIT 1"
                ),
                args![run_id, AttestationOutcome::Ignored.as_str()],
            )
            .await?
            .map(|r| attestation_from_row(&r))
            .transpose()?;
        Ok(newest.filter(|a| a.outcome == AttestationOutcome::Revoked))
    }

    /// Records one drain step: the state observed, the daemon's stamped
    /// report (consecutive equal reports of one boot kept as one row with
    /// the newest stamp), and any accepted attestation the report refutes,
    /// revoked.
    pub async fn record_drain_observation(
        &self,
        lease: &Lease,
        run_id: &str,
        observation: &DrainObservation,
    ) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let run = tx.fetch_one(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![run_id]).await?;
        let run = run_from_row(&run)?;
        ensure_drain(&mut tx, run_id, &run.workspace_id, now).await?;
        let saved = observation.state == DrainState::Saved;
        let p = &observation.progress;
        tx.execute(
            "UPDATE drains SET state = $1, detail = $2, observed_at = $3, final_complete = CASE WHEN $4 = 1 THEN 1 \
             ELSE final_complete END, pending = $5, pending_bytes = $6, registered = $7, uploaded_bytes = $8, \
             updated_at = $3 WHERE run_id = $9",
            args![
                observation.state.as_str(),
                observation.detail.clone(),
                now,
                saved as i64,
                p.pending,
                p.pending_bytes,
                p.registered,
                p.uploaded_bytes,
                run_id
            ],
        )
        .await?;
        if let Some(report) = &observation.report {
            store_report(&mut tx, &run, report, observation.detail.as_deref(), now).await?;
        }
        tx.commit().await
    }

    /// Stores a report read from `run_id`'s executor outside a drain (an
    /// owner's capture status or flush through the API).
    pub async fn record_report(&self, run_id: &str, report: &Report, detail: Option<&str>) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let Some(row) =
            tx.fetch_optional(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![run_id]).await?
        else {
            return Ok(());
        };
        store_report(&mut tx, &run_from_row(&row)?, report, detail, now).await?;
        tx.commit().await
    }

    /// Records that removing a drained executor failed; the worker retries.
    pub async fn record_stop_failed(&self, lease: &Lease, run_id: &str, error: &str) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let workspace_id = tx.fetch_one("SELECT workspace_id FROM runs WHERE id = $1", args![run_id]).await?;
        ensure_drain(&mut tx, run_id, &workspace_id.text("workspace_id")?, now).await?;
        tx.execute(
            "UPDATE drains SET state = $1, detail = $2, observed_at = $3, updated_at = $3 WHERE run_id = $4",
            args![DrainState::StopFailed.as_str(), error, now, run_id],
        )
        .await?;
        tx.commit().await
    }

    /// Records a recovery attempt of a retained executor: counted, with its
    /// error (if it failed) and when the next one is due.
    pub async fn record_recovery_attempt(
        &self,
        lease: &Lease,
        run_id: &str,
        error: Option<&str>,
        next_at: i64,
    ) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE drains SET recovery_attempts = recovery_attempts + 1, last_recovery_error = $1, \
             next_recovery_at = $2, updated_at = $3 WHERE run_id = $4",
            args![error.map(str::to_owned), next_at, now, run_id],
        )
        .await?;
        tx.commit().await
    }

    /// Records that a retained or kept executor is gone with its disk:
    /// nothing is left to save or remove, and the run reads `failed`.
    pub async fn record_lost(&self, lease: &Lease, run_id: &str, reason: &str) -> Result<(), StoreError> {
        let error = RunError { message: reason.to_owned(), code: Some("executor-lost".into()) };
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE runs SET status = $1, runtime_status = $2, runtime_removed_at = $3, error_message = $4, \
             error_code = $5, updated_at = $3, finished_at = COALESCE(finished_at, $3) WHERE id = $6",
            args![
                WorkspaceStatus::Failed.as_str(),
                RuntimeStatus::Failed.as_str(),
                now,
                &error.message,
                error.code.clone(),
                run_id
            ],
        )
        .await?;
        let run = tx.fetch_one(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![run_id]).await?;
        let run = run_from_row(&run)?;
        ensure_drain(&mut tx, run_id, &run.workspace_id, now).await?;
        tx.execute(
            "UPDATE drains SET state = $1, detail = $2, observed_at = $3, updated_at = $3 WHERE run_id = $4",
            args![DrainState::Gone.as_str(), reason, now, run_id],
        )
        .await?;
        let current =
            tx.fetch_one("SELECT current_run_id FROM workspaces WHERE id = $1", args![&run.workspace_id]).await?;
        if current.opt_text("current_run_id")?.as_deref() == Some(run_id) {
            crate::executors::set_workspace_status(&mut tx, &run.workspace_id, WorkspaceStatus::Failed, now).await?;
        }
        let data = serde_json::json!({"message": reason, "code": "executor-lost", "retry": false});
        crate::workspaces::append_event(
            &mut tx,
            &run.workspace_id,
            Some(run_id),
            EventType::AttemptFailed,
            Some(reason.to_owned()),
            Some(data),
            now,
        )
        .await?;
        tx.commit().await
    }

    /// The worker starts the final drain ahead of the runtime's deadline:
    /// recorded as a stop asked by sluice itself.
    pub async fn begin_preservation(&self, lease: &Lease, workspace_id: &str, run_id: &str) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE workspaces SET desired_state = $1, updated_at = $2 WHERE id = $3",
            args![DesiredState::Stopped.as_str(), now, workspace_id],
        )
        .await?;
        ensure_drain(&mut tx, run_id, workspace_id, now).await?;
        tx.execute(
            "UPDATE drains SET stop_requested_by = COALESCE(stop_requested_by, $1), \
             stop_requested_at = COALESCE(stop_requested_at, $2), updated_at = $2 WHERE run_id = $3",
            args!["sluice:preservation", now, run_id],
        )
        .await?;
        tx.commit().await
    }

    /// The owner asks for the workspace to stop, perhaps discarding its
    /// unsaved work, perhaps attesting a sealed final capture. `allowed`
    /// judges the workspace and its current run as read in the same
    /// transaction; a refusal writes nothing. The attestation is weighed
    /// here against every report stored for the current executor. `None`
    /// when the workspace is not theirs.
    pub async fn request_stop(
        &self,
        owner: &str,
        workspace_id: &str,
        intent: &StopIntent,
        allowed: impl FnOnce(&Workspace, Option<&Run>) -> Result<(), Refusal>,
    ) -> Result<Option<StopOutcome>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let Some(workspace) = owned_workspace(&mut tx, owner, workspace_id).await? else { return Ok(None) };
        let run = match &workspace.current_run_id {
            Some(id) => tx
                .fetch_optional(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![id])
                .await?
                .map(|r| run_from_row(&r))
                .transpose()?,
            None => None,
        };
        allowed(&workspace, run.as_ref())?;
        let changed = tx
            .execute(
                "UPDATE workspaces SET desired_state = $1, updated_at = $2 WHERE id = $3 AND desired_state <> $1",
                args![DesiredState::Stopped.as_str(), now, workspace_id],
            )
            .await?;
        let mut wake = changed == 1;
        let mut completion = None;
        let capture = workspace.spec.capture_session().is_some();
        if let Some(run) = run.as_ref().filter(|r| r.runtime.is_some() && capture) {
            ensure_drain(&mut tx, &run.id, workspace_id, now).await?;
            tx.execute(
                "UPDATE drains SET stop_requested_by = COALESCE(stop_requested_by, $1), \
                 stop_requested_at = COALESCE(stop_requested_at, $2), updated_at = $2 WHERE run_id = $3",
                args![owner, now, &run.id],
            )
            .await?;
            if intent.discard {
                tx.execute(
                    "UPDATE drains SET discard_requested_by = COALESCE(discard_requested_by, $1), \
                     discard_requested_at = COALESCE(discard_requested_at, $2) WHERE run_id = $3",
                    args![owner, now, &run.id],
                )
                .await?;
                wake = true;
            }
            if let Some((attestation, sealed_at)) = &intent.attestation {
                let reports = reports_in(&mut tx, &run.id).await?;
                let (outcome, detail) = match sluice_domain::drain::weigh(attestation, run, &reports) {
                    Ok(()) => (AttestationOutcome::Accepted, None),
                    Err(refuted) => (AttestationOutcome::Ignored, Some(refuted.detail)),
                };
                tx.execute(
                    &format!("INSERT INTO attestations ({ATTESTATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"),
                    args![
                        new_id("att"),
                        &run.id,
                        attestation.capture_n as i64,
                        attestation.epoch as i64,
                        &attestation.executor_id,
                        attestation.launch_id.clone(),
                        sealed_at.clone(),
                        attestation.origin.as_ref().map(|o| serde_json::to_string(o).expect("an origin serializes")),
                        outcome.as_str(),
                        detail.clone(),
                        owner,
                        now
                    ],
                )
                .await?;
                wake |= outcome == AttestationOutcome::Accepted;
                completion = Some((outcome, detail));
            }
        } else if intent.attestation.is_some() {
            let detail = if capture {
                "executor: the workspace has no executor for the attestation to name"
            } else {
                "executor: the workspace is not capture-sourced; its executor holds nothing to attest"
            };
            let detail = detail.to_owned();
            completion = Some((AttestationOutcome::Ignored, Some(detail)));
        }
        if wake {
            enqueue(&mut tx, JobKind::Reconcile, workspace_id, now, now).await?;
        }
        tx.commit().await?;
        Ok(Some(StopOutcome { workspace, completion }))
    }

    /// The owner (or an operator) asks for a recovery attempt of the
    /// workspace's retained executor now. `Some(None)`: nothing is retained;
    /// `Some(Some(recoverable))`: an attempt is due now. `None` when the
    /// workspace is not theirs.
    pub async fn request_recovery(&self, owner: &str, workspace_id: &str) -> Result<Option<Option<bool>>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let Some(workspace) = owned_workspace(&mut tx, owner, workspace_id).await? else { return Ok(None) };
        let retained = match &workspace.current_run_id {
            Some(run_id) => tx
                .fetch_optional(
                    "SELECT d.recoverable FROM drains d JOIN runs r ON r.id = d.run_id \
                     WHERE d.run_id = $1 AND r.status = $2",
                    args![run_id, WorkspaceStatus::Retained.as_str()],
                )
                .await?
                .map(|row| row.int("recoverable").map(|r| r != 0))
                .transpose()?,
            None => None,
        };
        if let (Some(_), Some(run_id)) = (retained, &workspace.current_run_id) {
            tx.execute(
                "UPDATE drains SET next_recovery_at = $1, updated_at = $1 WHERE run_id = $2",
                args![now, run_id],
            )
            .await?;
            enqueue(&mut tx, JobKind::Reconcile, workspace_id, now, now).await?;
        }
        tx.commit().await?;
        Ok(Some(retained))
    }

    /// Every retained executor, longest retained first.
    pub async fn list_retained(&self, limit: i64) -> Result<Vec<RetainedExecutor>, StoreError> {
        let runs = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE status = $1 AND runtime_removed_at IS NULL \
                     ORDER BY updated_at LIMIT $2"
                ),
                args![WorkspaceStatus::Retained.as_str(), limit],
            )
            .await?;
        let mut retained = Vec::new();
        for row in runs {
            let run = run_from_row(&row)?;
            let owner = self
                .pool
                .fetch_optional("SELECT owner_user_id FROM workspaces WHERE id = $1", args![&run.workspace_id])
                .await?
                .map(|r| r.text("owner_user_id"))
                .transpose()?
                .unwrap_or_default();
            let drain = self.drain(&run.id).await?.unwrap_or_else(|| Drain::new(&run.id, &run.workspace_id));
            retained.push(RetainedExecutor {
                workspace_id: run.workspace_id.clone(),
                owner_user_id: owner,
                run,
                drain,
            });
        }
        Ok(retained)
    }
}
