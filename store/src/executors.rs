//! What the worker reads to drive executors: the stored state a reconcile
//! pass decides from, and the facts about a runtime resource's run. What it
//! records goes through the transitions.

use crate::Store;
use crate::db::{Tx, args};
use crate::error::StoreError;
use crate::model::*;
use crate::rows::{LISTED, RUN_COLUMNS, WORKSPACE_COLUMNS, run_from_row, workspace_from_row};
use sluice_domain::ids::{OwnerId, RunId, SessionId, WorkspaceId};
use sluice_domain::reconcile::{ReconcileState, ResourceFacts};

/// The owner's workspace, read inside `tx`.
pub(crate) async fn owned_workspace(
    tx: &mut Tx,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
) -> Result<Option<Workspace>, StoreError> {
    let row = tx
        .fetch_optional(
            &format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1 AND owner_user_id = $2 AND {LISTED}"),
            args![workspace_id, owner],
        )
        .await?;
    row.map(|r| workspace_from_row(&r)).transpose()
}

/// The newest session epoch a run's executor claimed (`epoch`, NULL when
/// it claimed none).
pub(crate) const NEWEST_CLAIM: &str = "SELECT MAX(epoch) AS epoch FROM capture_claims WHERE run_id = $1";

impl Store {
    /// Loads what a reconcile pass of `workspace_id` decides from; `None`
    /// when the workspace does not exist.
    pub async fn load_reconcile_state(&self, workspace_id: &WorkspaceId) -> Result<Option<ReconcileState>, StoreError> {
        let Some(row) = self
            .pool
            .fetch_optional(&format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1"), args![workspace_id])
            .await?
        else {
            return Ok(None);
        };
        let workspace = workspace_from_row(&row)?;
        let mut current_run = None;
        let mut stale_runs = Vec::new();
        let rows = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE workspace_id = $1 AND (id = $2 OR \
                     (runtime_adapter IS NOT NULL AND runtime_removed_at IS NULL)) ORDER BY created_at, id"
                ),
                args![workspace_id, workspace.current_run_id.clone().unwrap_or_default()],
            )
            .await?;
        for row in rows {
            let run = run_from_row(&row)?;
            if Some(&run.id) == workspace.current_run_id.as_ref() {
                current_run = Some(run);
            } else {
                stale_runs.push(run);
            }
        }
        let has_capture_source = workspace.spec.capture_session().is_some();
        let (mut drain, mut reports, mut attestation, mut session_holder, mut claimed_epoch) =
            (None, Vec::new(), None, None, None);
        if let (true, Some(run)) = (has_capture_source, &current_run) {
            drain = self.drain(&run.id).await?;
            reports = self.executor_reports(&run.id).await?;
            attestation = self.accepted_attestation(&run.id).await?;
            if let Some(session) = workspace.spec.capture_session() {
                session_holder = self.capture_session(&SessionId::from(session)).await?.and_then(|s| s.claimed_run_id);
            }
            claimed_epoch = self.claimed_epoch(&run.id).await?;
        }
        Ok(Some(ReconcileState {
            workspace,
            current_run,
            stale_runs,
            has_capture_source,
            drain,
            reports,
            attestation,
            session_holder,
            claimed_epoch,
        }))
    }

    /// The facts about the run a runtime resource names; `None` when no
    /// record of the run exists.
    pub async fn resource_facts(&self, run_id: &RunId) -> Result<Option<ResourceFacts>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT r.status, r.runtime_adapter, r.runtime_removed_at, w.current_run_id, w.spec \
                 FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE r.id = $1",
                args![run_id],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(ResourceFacts {
            status: row.parsed("status")?,
            is_current: row.opt_text("current_run_id")?.as_deref() == Some(run_id),
            recorded: row.opt_text("runtime_adapter")?.is_some(),
            removed: row.opt_int("runtime_removed_at")?.is_some(),
            capture_sourced: crate::rows::parse_spec("workspaces.spec", &row.text("spec")?)?
                .capture_session()
                .is_some(),
        }))
    }

    /// The newest capture-session epoch `run_id`'s executor claimed.
    pub async fn claimed_epoch(&self, run_id: &RunId) -> Result<Option<u64>, StoreError> {
        let row = self.pool.fetch_optional(NEWEST_CLAIM, args![run_id]).await?;
        Ok(row.map(|r| r.opt_int("epoch")).transpose()?.flatten().map(|e| e as u64))
    }

    pub async fn get_run(&self, run_id: &RunId) -> Result<Option<Run>, StoreError> {
        self.pool
            .fetch_optional(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![run_id])
            .await?
            .map(|r| run_from_row(&r))
            .transpose()
    }
}
