//! Drains of capture-sourced executors: the owner's stop intent (who,
//! when, discard, attestation), what the worker last observed while ending
//! the executor, the reports it read with their origin stamps, the
//! preservation schedule, and retention with its recovery attempts.
//! What they become is decided by the domain's transition and written by
//! the transitions module; this module reads them back.

use sluice_protocol::Origin;
use sluice_protocol::attest::{Attestation, Report};

use crate::Store;
use crate::db::{DbRow, args};
use crate::error::StoreError;
use crate::model::*;
use crate::rows::{RUN_COLUMNS, run_from_row};
use sluice_domain::drain::*;
use sluice_domain::ids::{OwnerId, RunId, SessionId, WorkspaceId};

pub(crate) const DRAIN_COLUMNS: &str = "run_id, workspace_id, state, detail, observed_at, preservation_starts_at, \
    stop_requested_by, stop_requested_at, discard_requested_by, discard_requested_at, final_complete, pending, \
    pending_bytes, registered, uploaded_bytes, retained_since, retained_reason, recoverable, recovery_attempts, \
    next_recovery_at, last_recovery_error";

pub(crate) const ATTESTATION_COLUMNS: &str = "id, run_id, capture_n, epoch, executor_id, launch_id, sealed_at, origin, outcome, detail, attested_by, attested_at";

pub(crate) fn drain_from_row(row: &DbRow) -> Result<Drain, StoreError> {
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
        run_id: row.id("run_id")?,
        workspace_id: row.id("workspace_id")?,
        state: row.opt_parsed("state")?,
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

pub(crate) fn attestation_from_row(row: &DbRow) -> Result<StoredAttestation, StoreError> {
    Ok(StoredAttestation {
        id: row.text("id")?,
        run_id: row.id("run_id")?,
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

pub(crate) fn report_from_row(row: &DbRow) -> Result<Report, StoreError> {
    let origin = origin_from("executor_reports.origin", Some(row.text("origin")?))?.expect("given");
    Ok(Report { origin, saved: row.int("saved")? != 0 })
}

impl Store {
    /// The run whose executor claimed the session last, with its drain:
    /// what a create or re-plan that would take the session over weighs.
    pub async fn session_holder(&self, session_id: &SessionId) -> Result<Option<(Run, Option<Drain>)>, StoreError> {
        let Some(run_id) = self.capture_session(session_id).await?.and_then(|s| s.claimed_run_id) else {
            return Ok(None);
        };
        let Some(run) = self.get_run(&run_id).await? else { return Ok(None) };
        let drain = self.drain(&run_id).await?;
        Ok(Some((run, drain)))
    }

    /// The drain record of `run_id`.
    pub async fn drain(&self, run_id: &RunId) -> Result<Option<Drain>, StoreError> {
        self.pool
            .fetch_optional(&format!("SELECT {DRAIN_COLUMNS} FROM drains WHERE run_id = $1"), args![run_id])
            .await?
            .map(|r| drain_from_row(&r))
            .transpose()
    }

    /// Every report stored for `run_id`'s executor, oldest first.
    pub async fn executor_reports(&self, run_id: &RunId) -> Result<Vec<Report>, StoreError> {
        self.pool
            .fetch_all("SELECT origin, saved FROM executor_reports WHERE run_id = $1 ORDER BY seq", args![run_id])
            .await?
            .iter()
            .map(report_from_row)
            .collect()
    }

    /// The newest attestation of `run_id` still standing as accepted.
    pub async fn accepted_attestation(&self, run_id: &RunId) -> Result<Option<StoredAttestation>, StoreError> {
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
    pub async fn revoked_attestation(&self, run_id: &RunId) -> Result<Option<StoredAttestation>, StoreError> {
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

    /// The owner of a workspace (empty if it is gone).
    async fn owner_of(&self, workspace_id: &WorkspaceId) -> Result<OwnerId, StoreError> {
        let row =
            self.pool.fetch_optional("SELECT owner_user_id FROM workspaces WHERE id = $1", args![workspace_id]).await?;
        Ok(row.map(|r| r.id("owner_user_id")).transpose()?.unwrap_or_default())
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
            let owner = self.owner_of(&run.workspace_id).await?;
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

    /// Every drain still under way (a stop asked for, the executor not yet
    /// removed nor retained), oldest first, with its run.
    pub async fn drains_in_progress(&self, limit: i64) -> Result<Vec<RetainedExecutor>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT {DRAIN_COLUMNS} FROM drains d WHERE d.stop_requested_at IS NOT NULL \
                     AND (d.state IS NULL OR d.state = $1) AND EXISTS (SELECT 1 FROM runs r WHERE r.id = d.run_id \
                       AND r.runtime_removed_at IS NULL AND r.status <> $2) \
                     ORDER BY d.stop_requested_at LIMIT $3"
                ),
                args![DrainState::Draining.as_str(), WorkspaceStatus::Retained.as_str(), limit],
            )
            .await?;
        let mut drains = Vec::new();
        for row in rows {
            let drain = drain_from_row(&row)?;
            let Some(run) = self.get_run(&drain.run_id).await? else { continue };
            let owner = self.owner_of(&run.workspace_id).await?;
            drains.push(RetainedExecutor { workspace_id: run.workspace_id.clone(), owner_user_id: owner, run, drain });
        }
        Ok(drains)
    }
}
