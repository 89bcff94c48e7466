//! What the worker reads and writes to drive executors: the stored state a
//! reconcile pass decides from, and each outcome it records. Every outcome
//! checks the job's fence and appends its events in the same transaction.
//! Also the owner's lifecycle requests (stop, restart) and the sweeps
//! (expiry, orphaned runtime resources).

use serde_json::{Value, json};

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{Tx, args};
use crate::error::StoreError;
use crate::jobs::{Lease, begin_fenced, enqueue};
use crate::model::*;
use crate::workspaces::{RUN_COLUMNS, WORKSPACE_COLUMNS, append_event, run_from_row, workspace_from_row};
use sluice_domain::reconcile::{ReconcileState, ResourceFacts};

/// The owner's workspace, read inside `tx`.
pub(crate) async fn owned_workspace(
    tx: &mut Tx,
    owner: &str,
    workspace_id: &str,
) -> Result<Option<Workspace>, StoreError> {
    let row = tx
        .fetch_optional(
            &format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1 AND owner_user_id = $2"),
            args![workspace_id, owner],
        )
        .await?;
    row.map(|r| workspace_from_row(&r)).transpose()
}

async fn load_run(tx: &mut Tx, run_id: &str) -> Result<Run, StoreError> {
    let row = tx.fetch_one(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![run_id]).await?;
    run_from_row(&row)
}

/// Sets the workspace's status (and its start/finish times) in `tx`.
pub(crate) async fn set_workspace_status(
    tx: &mut Tx,
    workspace_id: &str,
    status: WorkspaceStatus,
    now: i64,
) -> Result<(), StoreError> {
    let finished = matches!(status, WorkspaceStatus::Stopped | WorkspaceStatus::Failed | WorkspaceStatus::Cancelled);
    tx.execute(
        "UPDATE workspaces SET status = $1, updated_at = $2, \
         started_at = CASE WHEN $3 = 'started' AND started_at IS NULL THEN $2 ELSE started_at END, \
         finished_at = CASE WHEN $4 = 'finished' THEN $2 ELSE NULL END WHERE id = $5",
        args![
            status.as_str(),
            now,
            if status == WorkspaceStatus::Running { "started" } else { "" },
            if finished { "finished" } else { "" },
            workspace_id
        ],
    )
    .await?;
    Ok(())
}

/// Moves a run, its runtime and its workspace to `status` in `tx`.
async fn set_run_and_runtime(
    tx: &mut Tx,
    run_id: &str,
    status: WorkspaceStatus,
    runtime_status: RuntimeStatus,
    now: i64,
) -> Result<Run, StoreError> {
    tx.execute(
        "UPDATE runs SET status = $1, runtime_status = $2, updated_at = $3 WHERE id = $4",
        args![status.as_str(), runtime_status.as_str(), now, run_id],
    )
    .await?;
    let run = load_run(tx, run_id).await?;
    set_workspace_status(tx, &run.workspace_id, status, now).await?;
    Ok(run)
}

fn runtime_data(runtime: &RuntimeRecord, run: &Run) -> Value {
    let mut data = json!({
        "adapter": runtime.adapter.as_str(),
        "resourceId": runtime.resource_id,
        "reference": runtime.reference,
        "status": runtime.status.as_str(),
        "runId": run.id,
    });
    if let Some(endpoint) = &runtime.endpoint {
        data["endpoint"] = json!(endpoint);
    }
    if let Some(launch_id) = &run.launch_id {
        data["launchId"] = json!(launch_id);
    }
    data
}

impl Store {
    /// Loads what a reconcile pass of `workspace_id` decides from; `None`
    /// when the workspace does not exist.
    pub async fn load_reconcile_state(&self, workspace_id: &str) -> Result<Option<ReconcileState>, StoreError> {
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
        let (mut drain, mut reports, mut attestation, mut session_holder) = (None, Vec::new(), None, None);
        if let (true, Some(run)) = (has_capture_source, &current_run) {
            drain = self.drain(&run.id).await?;
            reports = self.executor_reports(&run.id).await?;
            attestation = self.accepted_attestation(&run.id).await?;
            if let Some(session) = workspace.spec.capture_session() {
                session_holder = self.capture_session(session).await?.and_then(|s| s.claimed_run_id);
            }
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
        }))
    }

    /// Records that `run_id`'s executor exists and runs on its runtime:
    /// `attempt.running`, `runtime.running` (and `image.published` when the
    /// runtime resolved the image to a digest).
    pub async fn record_launched(
        &self,
        lease: &Lease,
        run_id: &str,
        runtime: &RuntimeRecord,
        published: Option<&PublishedImage>,
        preservation_starts_at: Option<i64>,
    ) -> Result<Run, StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE runs SET status = $1, runtime_adapter = $2, runtime_resource_id = $3, runtime_reference = $4, \
             runtime_status = $5, runtime_endpoint = $6, runtime_deadline = $7, published_reference = $8, \
             published_digest_reference = $9, published_digest = $10, updated_at = $11, \
             started_at = COALESCE(started_at, $11) WHERE id = $12",
            args![
                WorkspaceStatus::Running.as_str(),
                runtime.adapter.as_str(),
                &runtime.resource_id,
                &runtime.reference,
                runtime.status.as_str(),
                runtime.endpoint.clone(),
                runtime.deadline,
                published.map(|p| p.reference.clone()),
                published.map(|p| p.digest_reference.clone()),
                published.map(|p| p.digest.clone()),
                now,
                run_id
            ],
        )
        .await?;
        let run = load_run(&mut tx, run_id).await?;
        set_workspace_status(&mut tx, &run.workspace_id, WorkspaceStatus::Running, now).await?;
        let ws = run.workspace_id.clone();
        if let Some(at) = preservation_starts_at {
            tx.execute(
                "INSERT INTO drains (run_id, workspace_id, preservation_starts_at, updated_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (run_id) DO UPDATE SET preservation_starts_at = $3",
                args![run_id, &ws, at, now],
            )
            .await?;
        }
        append_event(&mut tx, &ws, Some(run_id), EventType::AttemptRunning, Some("launch started".into()), None, now)
            .await?;
        if let Some(image) = published {
            let data = json!({"reference": image.reference, "digestReference": image.digest_reference, "digest": image.digest});
            append_event(
                &mut tx,
                &ws,
                Some(run_id),
                EventType::ImagePublished,
                Some("image resolved".into()),
                Some(data),
                now,
            )
            .await?;
        }
        let message = format!("{} executor {} running", runtime.adapter, runtime.reference);
        append_event(
            &mut tx,
            &ws,
            Some(run_id),
            EventType::RuntimeRunning,
            Some(message),
            Some(runtime_data(runtime, &run)),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(run)
    }

    /// Records that `run_id`'s daemon answers: the executor is ready.
    pub async fn record_ready(&self, lease: &Lease, run_id: &str) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let run = set_run_and_runtime(&mut tx, run_id, WorkspaceStatus::Ready, RuntimeStatus::Ready, now).await?;
        let data = run.runtime.as_ref().map(|r| runtime_data(r, &run));
        append_event(
            &mut tx,
            &run.workspace_id,
            Some(run_id),
            EventType::RuntimeReady,
            Some("daemon healthy".into()),
            data,
            now,
        )
        .await?;
        append_event(
            &mut tx,
            &run.workspace_id,
            Some(run_id),
            EventType::AttemptSucceeded,
            Some("executor ready".into()),
            None,
            now,
        )
        .await?;
        // The daemon keeps the session token on its own disk from here; the
        // store no longer needs it (a capture workspace is never relaunched
        // in place).
        tx.execute(
            "DELETE FROM sealed_secrets WHERE workspace_id = $1 AND kind = $2",
            args![&run.workspace_id, SecretKind::CaptureToken.as_str()],
        )
        .await?;
        // A broker workspace's env is kept (sealed) only until its executor has it.
        tx.execute(
            "DELETE FROM sealed_secrets WHERE workspace_id = $1 AND kind = $2",
            args![&run.workspace_id, SecretKind::ExecEnv.as_str()],
        )
        .await?;
        tx.commit().await
    }

    /// Records that `run_id` failed (its launch, or its executor while it
    /// ran). With `retry`, a new run is queued for the workspace; otherwise
    /// the workspace reads `failed`.
    pub async fn record_failed(
        &self,
        lease: &Lease,
        run_id: &str,
        error: &RunError,
        retry: bool,
    ) -> Result<Option<String>, StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE runs SET status = $1, runtime_status = CASE WHEN runtime_adapter IS NULL THEN NULL ELSE $2 END, \
             error_message = $3, error_code = $4, updated_at = $5, finished_at = $5 WHERE id = $6",
            args![
                WorkspaceStatus::Failed.as_str(),
                RuntimeStatus::Failed.as_str(),
                &error.message,
                error.code.clone(),
                now,
                run_id
            ],
        )
        .await?;
        let run = load_run(&mut tx, run_id).await?;
        let ws = run.workspace_id.clone();
        let data = json!({"message": error.message, "code": error.code, "retry": retry});
        if let Some(runtime) = &run.runtime {
            append_event(
                &mut tx,
                &ws,
                Some(run_id),
                EventType::RuntimeFailed,
                Some(error.message.clone()),
                Some(runtime_data(runtime, &run)),
                now,
            )
            .await?;
        }
        append_event(
            &mut tx,
            &ws,
            Some(run_id),
            EventType::AttemptFailed,
            Some(error.message.clone()),
            Some(data),
            now,
        )
        .await?;
        let retry_run = if retry {
            let retry_id = new_id("run");
            tx.execute(
                "INSERT INTO runs (id, workspace_id, relation, trigger_type, trigger_ref, status, spec, launch_attempt, \
                 launch_id, queued_at, created_at, updated_at, linked_at) \
                 SELECT $1, workspace_id, $2, $3, id, $4, spec, launch_attempt + 1, launch_id, $5, $5, $5, $5 \
                 FROM runs WHERE id = $6",
                args![
                    &retry_id,
                    RunRelation::Retry.as_str(),
                    TriggerType::Retry.as_str(),
                    WorkspaceStatus::Queued.as_str(),
                    now,
                    run_id
                ],
            )
            .await?;
            tx.execute("UPDATE workspaces SET current_run_id = $1 WHERE id = $2", args![&retry_id, &ws]).await?;
            set_workspace_status(&mut tx, &ws, WorkspaceStatus::Queued, now).await?;
            let data = json!({"relation": "retry", "triggerType": "retry", "retryOf": run_id, "launchAttempt": run.launch_attempt + 1});
            append_event(
                &mut tx,
                &ws,
                Some(&retry_id),
                EventType::AttemptQueued,
                Some("retry queued".into()),
                Some(data),
                now,
            )
            .await?;
            Some(retry_id)
        } else {
            set_workspace_status(&mut tx, &ws, WorkspaceStatus::Failed, now).await?;
            None
        };
        tx.commit().await?;
        Ok(retry_run)
    }

    /// Records that `run_id`'s runtime resource is gone. When it was the
    /// current run of a workspace asked to stop, the workspace reads
    /// `stopped`.
    pub async fn record_removed(&self, lease: &Lease, run_id: &str) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE runs SET runtime_removed_at = $1, updated_at = $1, \
             runtime_status = CASE WHEN runtime_status = $2 THEN runtime_status ELSE $3 END WHERE id = $4",
            args![now, RuntimeStatus::Failed.as_str(), RuntimeStatus::Stopped.as_str(), run_id],
        )
        .await?;
        let run = load_run(&mut tx, run_id).await?;
        let ws = run.workspace_id.clone();
        let row =
            tx.fetch_one("SELECT current_run_id, desired_state FROM workspaces WHERE id = $1", args![&ws]).await?;
        let is_current = row.opt_text("current_run_id")?.as_deref() == Some(run_id);
        let stopping = row.parsed::<DesiredState>("desired_state")? == DesiredState::Stopped;
        tx.execute(
            "UPDATE drains SET state = CASE WHEN discard_requested_at IS NULL THEN $1 ELSE $2 END, detail = NULL, \
                 observed_at = $3, next_recovery_at = NULL, updated_at = $3 WHERE run_id = $4",
            args![DrainState::Stopped.as_str(), DrainState::Discarded.as_str(), now, run_id],
        )
        .await?;
        if is_current && !stopping && run.status == WorkspaceStatus::Retained {
            // It ended on its own and was kept until its work was saved.
            tx.execute(
                "UPDATE runs SET status = $1, error_message = COALESCE(error_message, $2), \
                 error_code = COALESCE(error_code, $3), finished_at = COALESCE(finished_at, $4) WHERE id = $5",
                args![
                    WorkspaceStatus::Failed.as_str(),
                    "the executor ended on its own; its work was saved before it was removed",
                    "executor-exited",
                    now,
                    run_id
                ],
            )
            .await?;
            set_workspace_status(&mut tx, &ws, WorkspaceStatus::Failed, now).await?;
        }
        if is_current && stopping {
            tx.execute(
                "UPDATE runs SET status = CASE WHEN status = $1 THEN status ELSE $2 END, \
                 finished_at = COALESCE(finished_at, $3) WHERE id = $4",
                args![WorkspaceStatus::Failed.as_str(), WorkspaceStatus::Stopped.as_str(), now, run_id],
            )
            .await?;
            set_workspace_status(&mut tx, &ws, WorkspaceStatus::Stopped, now).await?;
        }
        if let Some(runtime) = &run.runtime {
            let message = format!("{} executor {} removed", runtime.adapter, runtime.reference);
            append_event(
                &mut tx,
                &ws,
                Some(run_id),
                EventType::RuntimeStopped,
                Some(message),
                Some(runtime_data(runtime, &run)),
                now,
            )
            .await?;
        }
        tx.commit().await
    }

    /// Records that a queued run was cancelled before it launched anything
    /// (the workspace was asked to stop first).
    pub async fn record_cancelled(&self, lease: &Lease, run_id: &str) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            "UPDATE runs SET status = $1, updated_at = $2, finished_at = $2 WHERE id = $3",
            args![WorkspaceStatus::Cancelled.as_str(), now, run_id],
        )
        .await?;
        let run = load_run(&mut tx, run_id).await?;
        set_workspace_status(&mut tx, &run.workspace_id, WorkspaceStatus::Stopped, now).await?;
        append_event(
            &mut tx,
            &run.workspace_id,
            Some(run_id),
            EventType::AttemptCancelled,
            Some("stopped before launch".into()),
            None,
            now,
        )
        .await?;
        tx.commit().await
    }

    /// Records that `run_id`'s executor is kept with its disk because its
    /// work is not confirmed saved.
    /// `recoverable`: the runtime can restart it on its own disk; the first
    /// recovery attempt is due at `first_attempt_at`.
    pub async fn record_retained(
        &self,
        lease: &Lease,
        run_id: &str,
        reason: &str,
        recoverable: bool,
        first_attempt_at: i64,
    ) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let run = set_run_and_runtime(&mut tx, run_id, WorkspaceStatus::Retained, RuntimeStatus::Retained, now).await?;
        tx.execute(
            "INSERT INTO drains (run_id, workspace_id, updated_at) VALUES ($1, $2, $3) ON CONFLICT (run_id) DO NOTHING",
            args![run_id, &run.workspace_id, now],
        )
        .await?;
        tx.execute(
            "UPDATE drains SET state = $1, detail = $2, observed_at = $3, retained_since = COALESCE(retained_since, $3), \
             retained_reason = $2, recoverable = $4, next_recovery_at = COALESCE(next_recovery_at, $5), updated_at = $3 \
             WHERE run_id = $6",
            args![DrainState::Gone.as_str(), reason, now, recoverable as i64, first_attempt_at, run_id],
        )
        .await?;
        let mut data = run.runtime.as_ref().map(|r| runtime_data(r, &run)).unwrap_or_else(|| json!({}));
        data["retained"] = json!(reason);
        append_event(
            &mut tx,
            &run.workspace_id,
            Some(run_id),
            EventType::RuntimeFailed,
            Some(format!("executor retained: {reason}")),
            Some(data),
            now,
        )
        .await?;
        tx.commit().await
    }

    /// The owner asks for a fresh executor: a new run from the workspace's
    /// spec (no disk carries over); the old executor is removed. `allowed`
    /// (the caller's policy) judges the workspace as read in the same
    /// transaction; a refusal writes nothing. `None` when the workspace is
    /// not theirs.
    pub async fn request_restart(
        &self,
        owner: &str,
        workspace_id: &str,
        allowed: impl FnOnce(&Workspace) -> Result<(), Refusal>,
    ) -> Result<Option<(String, Workspace)>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let Some(workspace) = owned_workspace(&mut tx, owner, workspace_id).await? else { return Ok(None) };
        allowed(&workspace)?;
        let run_id = new_id("run");
        tx.execute(
            "INSERT INTO runs (id, workspace_id, relation, trigger_type, status, spec, queued_at, created_at, updated_at, linked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $7, $7)",
            args![
                &run_id,
                workspace_id,
                RunRelation::Launch.as_str(),
                TriggerType::Api.as_str(),
                WorkspaceStatus::Queued.as_str(),
                workspace.spec.document().to_string(),
                now
            ],
        )
        .await?;
        tx.execute(
            "UPDATE workspaces SET current_run_id = $1, desired_state = $2, status = $3, updated_at = $4, \
             finished_at = NULL WHERE id = $5",
            args![&run_id, DesiredState::Running.as_str(), WorkspaceStatus::Queued.as_str(), now, workspace_id],
        )
        .await?;
        let data = json!({"relation": "launch", "triggerType": "api", "restartOf": workspace.current_run_id});
        append_event(
            &mut tx,
            workspace_id,
            Some(&run_id),
            EventType::AttemptQueued,
            Some("restart queued".into()),
            Some(data),
            now,
        )
        .await?;
        enqueue(&mut tx, JobKind::Reconcile, workspace_id, now, now).await?;
        tx.commit().await?;
        let workspace =
            Workspace { status: WorkspaceStatus::Queued, current_run_id: Some(run_id.clone()), ..workspace };
        Ok(Some((run_id, workspace)))
    }

    /// Asks every workspace whose expiry has passed to stop. Returns their
    /// ids. Each is its own transaction, so a crash leaves the rest due.
    pub async fn stop_expired(&self, now: i64, limit: i64) -> Result<Vec<String>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT id FROM workspaces WHERE expires_at <= $1 AND desired_state = $2 ORDER BY expires_at LIMIT $3",
                args![now, DesiredState::Running.as_str(), limit],
            )
            .await?;
        let mut stopped = Vec::new();
        for row in rows {
            let id = row.text("id")?;
            let mut tx = self.pool.begin().await?;
            let changed = tx
                .execute(
                    "UPDATE workspaces SET desired_state = $1, updated_at = $2 WHERE id = $3 AND desired_state <> $1 \
                     AND expires_at <= $2",
                    args![DesiredState::Stopped.as_str(), now, &id],
                )
                .await?;
            if changed == 1 {
                enqueue(&mut tx, JobKind::Reconcile, &id, now, now).await?;
                stopped.push(id);
            }
            tx.commit().await?;
        }
        Ok(stopped)
    }

    /// The facts about the run a runtime resource names; `None` when no
    /// record of the run exists.
    pub async fn resource_facts(&self, run_id: &str) -> Result<Option<ResourceFacts>, StoreError> {
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
            capture_sourced: crate::workspaces::parse_spec("workspaces.spec", &row.text("spec")?)?
                .capture_session()
                .is_some(),
        }))
    }

    pub async fn get_run(&self, run_id: &str) -> Result<Option<Run>, StoreError> {
        self.pool
            .fetch_optional(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![run_id])
            .await?
            .map(|r| run_from_row(&r))
            .transpose()
    }
}
