//! Persisting a lifecycle transition. Each change to a workspace, its runs
//! and their drains reads the stored state inside one transaction (the
//! workspace's row locked, so changes of one workspace apply one at a
//! time), asks [`sluice_domain::transition::transition`] for the next
//! state, and writes that back with its events: nothing here decides.
//! The worker's outcomes are written under its job's lease (fenced).

use sluice_domain::transition::{Change, Outcome, Rejection, Request, Stored, Transition, transition};
use sluice_protocol::attest::Report;

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{BackendKind, Tx, args};
use crate::drains::{ATTESTATION_COLUMNS, DRAIN_COLUMNS, attestation_from_row, drain_from_row, report_from_row};
use crate::error::StoreError;
use crate::event_log::append_event;
use crate::event_log::append_sluice_event;
use crate::executors::NEWEST_CLAIM;
use crate::jobs::{Lease, begin_fenced, enqueue};
use crate::model::*;
use crate::rows::{LISTED, RUN_COLUMNS, WORKSPACE_COLUMNS, run_from_row, workspace_from_row};
use sluice_domain::drain::{Drain, StoredAttestation};
use sluice_domain::ids::{OwnerId, RunId, WorkspaceId};

/// Whose state a change starts from.
pub(crate) enum Subject<'a> {
    /// The run a worker's outcome names, and its workspace.
    Run(&'a RunId),
    /// The owner's workspace, and its current run.
    Owned { owner: &'a OwnerId, workspace_id: &'a WorkspaceId },
    /// A workspace (a sweep's), and its current run.
    Workspace(&'a WorkspaceId),
}

/// Reads what a transition starts from, locking the workspace's row
/// (SQLite's write transaction holds the whole database already).
async fn load(tx: &mut Tx, kind: BackendKind, subject: &Subject<'_>) -> Result<Option<Stored>, StoreError> {
    let lock = kind.for_update();
    let (workspace_id, owner, run_id) = match subject {
        Subject::Run(run_id) => {
            let Some(row) = tx.fetch_optional("SELECT workspace_id FROM runs WHERE id = $1", args![*run_id]).await?
            else {
                return Ok(None);
            };
            (row.id::<WorkspaceId>("workspace_id")?, None, Some((*run_id).clone()))
        }
        Subject::Owned { owner, workspace_id } => ((*workspace_id).clone(), Some(*owner), None),
        Subject::Workspace(workspace_id) => ((*workspace_id).clone(), None, None),
    };
    let row = match owner {
        Some(owner) => {
            let sql = format!(
                "SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1 AND owner_user_id = $2 AND {LISTED}{lock}"
            );
            tx.fetch_optional(&sql, args![&workspace_id, owner]).await?
        }
        None => {
            let sql = format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1{lock}");
            tx.fetch_optional(&sql, args![&workspace_id]).await?
        }
    };
    let Some(row) = row else { return Ok(None) };
    let workspace = workspace_from_row(&row)?;
    let run_id = run_id.or_else(|| workspace.current_run_id.clone());
    let run = match &run_id {
        Some(id) => tx
            .fetch_optional(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![id])
            .await?
            .map(|r| run_from_row(&r))
            .transpose()?,
        None => None,
    };
    let (mut drain, mut reports, mut accepted, mut claimed_epoch) = (None, Vec::new(), Vec::new(), None);
    if let Some(run) = &run {
        drain = tx
            .fetch_optional(&format!("SELECT {DRAIN_COLUMNS} FROM drains WHERE run_id = $1"), args![&run.id])
            .await?
            .map(|r| drain_from_row(&r))
            .transpose()?;
        // Only a capture-sourced executor reports, and only its work is attested.
        if workspace.spec.capture_session().is_some() {
            reports = tx
                .fetch_all("SELECT origin, saved FROM executor_reports WHERE run_id = $1 ORDER BY seq", args![&run.id])
                .await?
                .iter()
                .map(report_from_row)
                .collect::<Result<_, _>>()?;
            accepted = tx
                .fetch_all(
                    &format!(
                        "SELECT {ATTESTATION_COLUMNS} FROM attestations WHERE run_id = $1 AND outcome = $2 \
                         ORDER BY attested_at, id"
                    ),
                    args![&run.id, AttestationOutcome::Accepted.as_str()],
                )
                .await?
                .iter()
                .map(attestation_from_row)
                .collect::<Result<_, _>>()?;
            claimed_epoch = tx
                .fetch_optional(NEWEST_CLAIM, args![&run.id])
                .await?
                .map(|r| r.opt_int("epoch"))
                .transpose()?
                .flatten()
                .map(|e| e as u64);
        }
    }
    Ok(Some(Stored { workspace, run, drain, reports, accepted, claimed_epoch }))
}

fn origin_text(origin: &sluice_protocol::Origin) -> String {
    serde_json::to_string(origin).expect("an origin serializes")
}

async fn insert_run(tx: &mut Tx, run: &Run) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO runs (id, workspace_id, relation, trigger_type, trigger_ref, status, spec, launch_attempt, \
         launch_id, queued_at, created_at, updated_at, linked_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        args![
            &run.id,
            &run.workspace_id,
            run.relation.as_str(),
            run.trigger_type.as_str(),
            run.trigger_ref.clone(),
            run.status.as_str(),
            run.spec.document().to_string(),
            run.launch_attempt,
            run.launch_id.clone(),
            run.queued_at,
            run.created_at,
            run.updated_at,
            run.linked_at
        ],
    )
    .await?;
    Ok(())
}

async fn update_run(tx: &mut Tx, run: &Run) -> Result<(), StoreError> {
    let runtime = run.runtime.as_ref();
    let published = run.published_image.as_ref();
    let error = run.error.as_ref();
    tx.execute(
        "UPDATE runs SET status = $1, runtime_adapter = $2, runtime_resource_id = $3, runtime_reference = $4, \
         runtime_status = $5, runtime_endpoint = $6, runtime_deadline = $7, published_reference = $8, \
         published_digest_reference = $9, published_digest = $10, error_message = $11, error_code = $12, \
         updated_at = $13, started_at = $14, finished_at = $15, runtime_removed_at = $16 WHERE id = $17",
        args![
            run.status.as_str(),
            runtime.map(|r| r.adapter.as_str()),
            runtime.map(|r| r.resource_id.clone()),
            runtime.map(|r| r.reference.clone()),
            runtime.map(|r| r.status.as_str()),
            runtime.and_then(|r| r.endpoint.clone()),
            runtime.and_then(|r| r.deadline),
            published.map(|p| p.reference.clone()),
            published.map(|p| p.digest_reference.clone()),
            published.map(|p| p.digest.clone()),
            error.map(|e| e.message.clone()),
            error.and_then(|e| e.code.clone()),
            run.updated_at,
            run.started_at,
            run.finished_at,
            run.runtime_removed_at,
            &run.id
        ],
    )
    .await?;
    Ok(())
}

async fn update_workspace(tx: &mut Tx, workspace: &Workspace) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE workspaces SET status = $1, desired_state = $2, current_run_id = $3, updated_at = $4, \
         started_at = $5, finished_at = $6, sleep_reason = $7, sleep_asked_at = $8 WHERE id = $9",
        args![
            workspace.status.as_str(),
            workspace.desired_state.as_str(),
            workspace.current_run_id.clone(),
            workspace.updated_at,
            workspace.started_at,
            workspace.finished_at,
            workspace.sleep.map(|s| s.reason.as_str()),
            workspace.sleep.map(|s| s.asked_at),
            &workspace.id
        ],
    )
    .await?;
    Ok(())
}

async fn upsert_drain(tx: &mut Tx, drain: &Drain, now: i64) -> Result<(), StoreError> {
    let retention = drain.retention.as_ref();
    let p = &drain.progress;
    tx.execute(
        &format!(
            "INSERT INTO drains ({DRAIN_COLUMNS}, updated_at) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) \
             ON CONFLICT (run_id) DO UPDATE SET state = $3, detail = $4, observed_at = $5, \
             preservation_starts_at = $6, stop_requested_by = $7, stop_requested_at = $8, \
             discard_requested_by = $9, discard_requested_at = $10, final_complete = $11, pending = $12, \
             pending_bytes = $13, registered = $14, uploaded_bytes = $15, retained_since = $16, \
             retained_reason = $17, recoverable = $18, recovery_attempts = $19, next_recovery_at = $20, \
             last_recovery_error = $21, updated_at = $22"
        ),
        args![
            &drain.run_id,
            &drain.workspace_id,
            drain.state.map(|s| s.as_str()),
            drain.detail.clone(),
            drain.observed_at,
            drain.preservation_starts_at,
            drain.stop_requested.as_ref().map(|(by, _)| by.clone()),
            drain.stop_requested.as_ref().map(|(_, at)| *at),
            drain.discard.as_ref().map(|d| d.requested_by.clone()),
            drain.discard.as_ref().map(|d| d.requested_at),
            drain.final_complete as i64,
            p.pending,
            p.pending_bytes,
            p.registered,
            p.uploaded_bytes,
            retention.map(|r| r.since),
            retention.map(|r| r.reason.clone()),
            retention.is_some_and(|r| r.recoverable) as i64,
            retention.map_or(0, |r| r.attempts),
            retention.and_then(|r| r.next_recovery_at),
            retention.and_then(|r| r.last_error.clone()),
            now
        ],
    )
    .await?;
    Ok(())
}

async fn write_attestation(tx: &mut Tx, stored: &StoredAttestation, known: bool) -> Result<(), StoreError> {
    if known {
        tx.execute(
            "UPDATE attestations SET outcome = $1, detail = $2 WHERE id = $3",
            args![stored.outcome.as_str(), stored.detail.clone(), &stored.id],
        )
        .await?;
        return Ok(());
    }
    let a = &stored.attestation;
    tx.execute(
        &format!(
            "INSERT INTO attestations ({ATTESTATION_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        ),
        args![
            &stored.id,
            &stored.run_id,
            a.capture_n as i64,
            a.epoch as i64,
            &a.executor_id,
            a.launch_id.clone(),
            stored.sealed_at.clone(),
            a.origin.as_ref().map(origin_text),
            stored.outcome.as_str(),
            stored.detail.clone(),
            &stored.attested_by,
            stored.attested_at
        ],
    )
    .await?;
    Ok(())
}

/// Appends one report of `run_id`'s executor; one that only repeats the
/// newest stored report (the domain's rule) is kept as that row, seen
/// again with the newer stamp.
async fn append_report(
    tx: &mut Tx,
    run_id: &RunId,
    report: &Report,
    detail: Option<&str>,
    now: i64,
) -> Result<(), StoreError> {
    let last = tx
        .fetch_optional(
            "SELECT seq, origin, saved, detail FROM executor_reports WHERE run_id = $1 ORDER BY seq DESC LIMIT 1",
            args![run_id],
        )
        .await?;
    let origin = origin_text(&report.origin);
    if let Some(row) = &last {
        let previous = report_from_row(row)?;
        if sluice_domain::drain::repeats(&previous, row.opt_text("detail")?.as_deref(), report, detail) {
            tx.execute(
                "UPDATE executor_reports SET origin = $1, times_seen = times_seen + 1, last_at = $2 \
                 WHERE run_id = $3 AND seq = $4",
                args![origin, now, run_id, row.int("seq")?],
            )
            .await?;
            return Ok(());
        }
    }
    let seq = last.map(|r| r.int("seq")).transpose()?.unwrap_or(0) + 1;
    tx.execute(
        "INSERT INTO executor_reports (run_id, seq, epoch, head_n, saved, detail, origin, times_seen, \
         first_at, last_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $8)",
        args![
            run_id,
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
    Ok(())
}

/// Writes `next` over `before`: only what changed, with its events, in `tx`.
async fn persist(tx: &mut Tx, before: &Stored, next: &Transition, now: i64) -> Result<(), StoreError> {
    if let Some(run) = &next.queued_run {
        insert_run(tx, run).await?;
        // A run that resumes a sleeping workspace serves its previews on:
        // their grants move to it with the workspace.
        if let (RunRelation::Resume, Some(previous)) = (run.relation, &run.trigger_ref) {
            tx.execute("UPDATE previews SET run_id = $1 WHERE run_id = $2", args![&run.id, previous]).await?;
        }
    }
    if let Some(run) = next.run.as_ref().filter(|r| Some(*r) != before.run.as_ref()) {
        update_run(tx, run).await?;
    }
    if next.workspace != before.workspace {
        update_workspace(tx, &next.workspace).await?;
    }
    if let Some(drain) = next.drain.as_ref().filter(|d| Some(*d) != before.drain.as_ref()) {
        upsert_drain(tx, drain, now).await?;
        for event in sluice_domain::feed::drain_events(before.drain.as_ref(), drain) {
            append_sluice_event(tx, &event, now).await?;
        }
    }
    for attestation in &next.attestations {
        let known = before.accepted.iter().any(|a| a.id == attestation.id);
        write_attestation(tx, attestation, known).await?;
    }
    if let (Some((report, detail)), Some(run)) = (&next.report, &next.run) {
        append_report(tx, &run.id, report, detail.as_deref(), now).await?;
    }
    let workspace_id = &next.workspace.id;
    for event in &next.events {
        let (attempt, message) = (event.attempt_id.as_ref(), event.message.clone());
        append_event(tx, workspace_id, attempt, event.event_type, message, event.data.clone(), now).await?;
    }
    for event in &next.sluice_events {
        append_sluice_event(tx, event, now).await?;
    }
    for kind in &next.forget_secrets {
        tx.execute(
            "DELETE FROM sealed_secrets WHERE workspace_id = $1 AND kind = $2",
            args![workspace_id, kind.as_str()],
        )
        .await?;
    }
    if next.wake {
        enqueue(tx, JobKind::Reconcile, workspace_id, now, now).await?;
    }
    Ok(())
}

fn rejected(rejection: Rejection) -> StoreError {
    match rejection {
        Rejection::Refused(refusal) => refusal.into(),
        Rejection::NoRun => StoreError::Conflict {
            message: "the workspace has no run for this change".into(),
            code: ConflictCode::NoRun,
        },
    }
}

impl Store {
    /// Applies `change` to `subject`'s stored state in `tx` at `now`;
    /// `None` when the subject does not exist. The caller commits.
    pub(crate) async fn apply(
        &self,
        tx: &mut Tx,
        subject: Subject<'_>,
        change: Change,
        now: i64,
    ) -> Result<Option<Transition>, StoreError> {
        let Some(stored) = load(tx, self.pool.kind(), &subject).await? else { return Ok(None) };
        let next = transition(&stored, &change, now, &mut |kind| new_id(kind)).map_err(rejected)?;
        persist(tx, &stored, &next, now).await?;
        Ok(Some(next))
    }

    /// Records what the worker observed of `run_id`'s executor (and did to
    /// it), under its job's lease: refused, with nothing written, once the
    /// lease is no longer held.
    pub async fn record(&self, lease: &Lease, run_id: &RunId, outcome: Outcome) -> Result<Transition, StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        let next = self
            .apply(&mut tx, Subject::Run(run_id), Change::Outcome(outcome), now)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("run {run_id} is not stored")))?;
        tx.commit().await?;
        Ok(next)
    }

    /// Applies the owner's `request` to their workspace; a refusal writes
    /// nothing. `None` when the workspace is not theirs.
    pub async fn request(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        request: Request,
    ) -> Result<Option<Transition>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let next = self.apply(&mut tx, Subject::Owned { owner, workspace_id }, Change::Request(request), now).await?;
        tx.commit().await?;
        Ok(next)
    }

    /// Stores a report read from `run_id`'s executor outside a drain (an
    /// owner's capture status or flush through the API), revoking the
    /// accepted attestations it refutes.
    pub async fn record_report(&self, run_id: &RunId, report: &Report, detail: Option<&str>) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let request = Request::Report { report: report.clone(), detail: detail.map(str::to_owned) };
        self.apply(&mut tx, Subject::Run(run_id), Change::Request(request), now).await?;
        tx.commit().await
    }

    /// Asks every workspace whose expiry has passed to stop. Returns their
    /// ids. Each is its own transaction, so a crash leaves the rest due.
    pub async fn stop_expired(&self, now: i64, limit: i64) -> Result<Vec<WorkspaceId>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT id FROM workspaces WHERE expires_at <= $1 AND desired_state = $2 ORDER BY expires_at LIMIT $3",
                args![now, DesiredState::Running.as_str(), limit],
            )
            .await?;
        let mut stopped = Vec::new();
        for row in rows {
            let id: WorkspaceId = row.id("id")?;
            let mut tx = self.pool.begin().await?;
            let next = self.apply(&mut tx, Subject::Workspace(&id), Change::Request(Request::Expire), now).await?;
            tx.commit().await?;
            if next.is_some_and(|t| t.wake) {
                stopped.push(id);
            }
        }
        Ok(stopped)
    }

    /// The ready capture-sourced workspaces whose executors run on `host`
    /// and are not asked to sleep: the ones an idle timeout may put to sleep.
    pub async fn awake_on_host(&self, host: &str, limit: i64) -> Result<Vec<Awake>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT w.id, w.spec, r.id AS run_id, r.runtime_endpoint FROM workspaces w \
                 JOIN runs r ON r.id = w.current_run_id \
                 WHERE r.host = $1 AND w.status = $2 AND w.desired_state = $3 AND w.sleep_reason IS NULL \
                 AND r.runtime_removed_at IS NULL AND r.runtime_endpoint IS NOT NULL ORDER BY w.id LIMIT $4",
                args![host, WorkspaceStatus::Ready.as_str(), DesiredState::Running.as_str(), limit],
            )
            .await?;
        let mut awake = Vec::new();
        for row in rows {
            let spec = crate::rows::parse_spec("workspaces.spec", &row.text("spec")?)?;
            if spec.capture_session().is_none() {
                continue;
            }
            awake.push(Awake {
                workspace_id: row.id("id")?,
                spec,
                run_id: row.id("run_id")?,
                endpoint: row.text("runtime_endpoint")?,
            });
        }
        Ok(awake)
    }

    /// Puts a workspace to sleep for `reason` (a sweep's request: no owner
    /// named). `None` when it does not exist.
    pub async fn sleep(
        &self,
        workspace_id: &WorkspaceId,
        reason: sluice_domain::sleep::SleepReason,
    ) -> Result<Option<Transition>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let request = Change::Request(Request::Sleep { reason });
        let next = self.apply(&mut tx, Subject::Workspace(workspace_id), request, now).await?;
        tx.commit().await?;
        Ok(next)
    }
}

/// A ready capture-sourced workspace and where its executor answers.
#[derive(Debug, Clone)]
pub struct Awake {
    pub workspace_id: WorkspaceId,
    pub spec: crate::spec::Spec,
    pub run_id: RunId,
    pub endpoint: String,
}
