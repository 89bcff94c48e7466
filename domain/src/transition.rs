//! The one place a workspace's lifecycle moves. [`transition`] takes the
//! stored state (a workspace, the run a change concerns, that run's drain,
//! its executor's reports and accepted attestations) and one change (an
//! outcome the worker observed and carried out, or a request of the owner,
//! an operator or a sweep) and answers the complete next state: the
//! workspace, the run, the drain, a run it queues, the attestations it
//! writes, the events to append and whether a reconcile is due now. The
//! store persists that in one fenced transaction and decides nothing.

use serde_json::Value;
use sluice_protocol::attest::Report;

use crate::drain::*;
use crate::event_data;
use crate::feed::NewSluiceEvent;
use crate::ids::{IdempotencyKey, LaunchId, OwnerId, RunId, WorkspaceId};
use crate::lifecycle::{restart_allowed, stop_allowed};
use crate::model::*;
use crate::sleep::{Sleep, SleepReason, SleepStep, WakeCause, Wakefulness, sleep_allowed, wakefulness};

/// What a transition starts from, as read inside its transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub workspace: Workspace,
    /// The run the change concerns: the one an outcome names, or the
    /// current run for a request (none when the workspace has none).
    pub run: Option<Run>,
    pub drain: Option<Drain>,
    /// Every report stored of the run's executor, oldest first.
    pub reports: Vec<Report>,
    /// The run's attestations that stand accepted.
    pub accepted: Vec<StoredAttestation>,
    /// The newest capture-session epoch the run's executor claimed.
    pub claimed_epoch: Option<u64>,
}

/// What the worker observed and did to a run's executor.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The executor exists and runs on its runtime; a capture-sourced one
    /// with a deadline is drained from `preservation_starts_at`.
    Launched { runtime: RuntimeRecord, published: Option<PublishedImage>, preservation_starts_at: Option<i64> },
    /// Its daemon answers: the executor is ready.
    Ready,
    /// The launch, or the executor while it ran, failed; `retry` queues a
    /// new run.
    Failed { error: RunError, retry: bool },
    /// The runtime resource is gone.
    Removed,
    /// A queued run was cancelled before it launched anything.
    Cancelled,
    /// The executor is kept with its disk: its work is not confirmed saved.
    Retained { reason: String, recoverable: bool, first_attempt_at: i64 },
    /// One drain step.
    DrainObserved(DrainObservation),
    /// Removing a drained executor failed; the worker retries.
    StopFailed { error: String },
    /// A recovery attempt of a retained executor, and when the next is due.
    RecoveryAttempted { error: Option<String>, next_at: i64 },
    /// A retained or kept executor is gone with its disk.
    Lost { reason: String },
    /// The final drain starts ahead of the runtime's deadline.
    PreservationBegun,
    /// Its host came back and the executor runs with its daemon answering,
    /// as nobody asked it to stop: it is ready again.
    Readopted,
    /// No worker of the run's host beat within the grace (a sweep saw it):
    /// its executor cannot be reached, and may hold unsaved work.
    HostUnreachable { host: String },
    /// An operator declared the run's host lost, with its executors.
    HostLost { host: String, by: String },
}

/// What the owner, an operator or a sweep asks of a workspace.
#[derive(Debug, Clone)]
pub enum Request {
    /// Stop, perhaps discarding unsaved work or attesting a sealed final.
    Stop { by: String, intent: StopIntent },
    /// End the workspace whatever it has come to: the execution broker's
    /// release and its reaper's ends (expiry, idleness, a revoked lease).
    /// Never refused: one that never launched is simply wanted stopped;
    /// one that did is stopped like any stop, its intent recorded as `by`.
    End { by: String },
    /// A fresh executor: a new run from the workspace's spec.
    Restart,
    /// A recovery attempt of the retained executor, now.
    Recover,
    /// The workspace's expiry has passed.
    Expire,
    /// Drain it as a stop and release its runtime; the first use wakes it.
    Sleep { reason: SleepReason },
    /// A request needs the runtime of a workspace that may be asleep.
    Wake { cause: WakeCause },
    /// A capture status read from the executor outside a drain (through
    /// the API), with the daemon's detail.
    Report { report: Report, detail: Option<String> },
}

/// What a create asks for, with the ids chosen for it.
#[derive(Debug, Clone)]
pub struct Asked {
    pub workspace_id: WorkspaceId,
    pub run_id: RunId,
    pub owner: OwnerId,
    pub name: String,
    pub registry_id: String,
    pub repository: String,
    pub tag: String,
    pub spec: crate::spec::Spec,
    /// The launch id the caller chose for the first run, if any.
    pub launch_id: Option<LaunchId>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// When it expires (Unix ms), if it does.
    pub expires_at: Option<i64>,
}

/// What a create makes: the workspace, queued and wanted running; its
/// first run, a launch the API queued; and the events that record them.
#[derive(Debug, Clone)]
pub struct Created {
    pub workspace: Workspace,
    pub run: Run,
    /// In order: `workspace.created` (with what was asked for), then the
    /// first run's `attempt.queued`.
    pub events: Vec<NewEvent>,
}

/// A create at `now`; `expires_at_text` is the expiry as its event
/// records it (RFC 3339).
pub fn create(asked: Asked, expires_at_text: Option<String>, now: i64) -> Created {
    let run = Run::queued(asked.run_id.clone(), asked.workspace_id.clone(), asked.spec.clone(), asked.launch_id, now);
    let created = event_data::json(event_data::Created {
        name: &asked.name,
        registry_id: &asked.registry_id,
        repository: &asked.repository,
        tag: &asked.tag,
        expires_at: expires_at_text.as_deref(),
    });
    let queued = event_data::json(event_data::Queued::launch(&run));
    let events = vec![
        NewEvent {
            attempt_id: None,
            event_type: EventType::WorkspaceCreated,
            message: Some(format!("workspace {} created", asked.name)),
            data: Some(created),
        },
        NewEvent {
            attempt_id: Some(run.id.clone()),
            event_type: EventType::AttemptQueued,
            message: Some("launch queued".into()),
            data: Some(queued),
        },
    ];
    let workspace = Workspace {
        id: asked.workspace_id,
        owner_user_id: asked.owner,
        name: asked.name,
        registry_id: asked.registry_id,
        repository: asked.repository,
        tag: asked.tag,
        spec: asked.spec,
        status: WorkspaceStatus::Queued,
        desired_state: DesiredState::Running,
        current_run_id: Some(run.id.clone()),
        idempotency_key: asked.idempotency_key,
        expires_at: asked.expires_at,
        created_at: now,
        updated_at: now,
        started_at: None,
        finished_at: None,
        sleep: None,
    };
    Created { workspace, run, events }
}

/// The error code of a run whose host stopped answering.
pub const HOST_UNREACHABLE: &str = "host-unreachable";

/// Whether `run` was written off as unreachable with its host (and so may
/// be adopted again when the host comes back).
pub fn unreachable_with_host(run: &Run) -> bool {
    run.error.as_ref().and_then(|e| e.code.as_deref()) == Some(HOST_UNREACHABLE)
        && matches!(run.status, WorkspaceStatus::Retained | WorkspaceStatus::Failed)
}

#[derive(Debug, Clone)]
pub enum Change {
    Outcome(Outcome),
    Request(Request),
}

/// One event to append to the workspace's log.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub attempt_id: Option<RunId>,
    pub event_type: EventType,
    pub message: Option<String>,
    pub data: Option<Value>,
}

/// What a request's caller is told, beyond the next state.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Answer {
    #[default]
    None,
    /// A stop: what became of its attestation and, when ignored, why.
    Stop { completion: Option<(AttestationOutcome, Option<String>)> },
    /// A recovery request: `None` when nothing is retained, else whether
    /// the runtime can restart the executor on its disk.
    Recover { recoverable: Option<bool> },
    /// A sleep request: begun now, or asked before.
    Sleep(SleepStep),
    /// A wake: what the request found (`Asleep`: the queued run resumes it).
    Wake(Wakefulness),
}

/// The complete next state.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub workspace: Workspace,
    pub run: Option<Run>,
    pub drain: Option<Drain>,
    /// A run queued by the change (a retry, a restart); it becomes the
    /// workspace's current run.
    pub queued_run: Option<Run>,
    /// Attestations to write: new ones, and accepted ones now revoked.
    pub attestations: Vec<StoredAttestation>,
    /// A report of the run's executor to append, with its detail.
    pub report: Option<(Report, Option<String>)>,
    pub events: Vec<NewEvent>,
    /// sluice's own events (on the global feed): a sleep, a wake.
    pub sluice_events: Vec<NewSluiceEvent>,
    /// Sealed secrets of the workspace no longer needed.
    pub forget_secrets: Vec<SecretKind>,
    /// A reconcile of the workspace is due now.
    pub wake: bool,
    pub answer: Answer,
}

/// Why a change cannot apply to the state it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// A rule of the lifecycle refuses the request.
    Refused(Refusal),
    /// The outcome names a run the state does not hold.
    NoRun,
}

impl From<Refusal> for Rejection {
    fn from(refusal: Refusal) -> Rejection {
        Rejection::Refused(refusal)
    }
}

/// Sets a workspace's status with its start and finish times: started at
/// its first `running`, finished while stopped, failed or cancelled.
fn set_status(workspace: &mut Workspace, status: WorkspaceStatus, now: i64) {
    workspace.status = status;
    workspace.updated_at = now;
    if status == WorkspaceStatus::Running && workspace.started_at.is_none() {
        workspace.started_at = Some(now);
    }
    let finished = status.is_finished();
    workspace.finished_at = finished.then_some(now);
}

fn set_runtime_status(run: &mut Run, status: RuntimeStatus) {
    if let Some(runtime) = &mut run.runtime {
        runtime.status = status;
    }
}

/// The accepted attestations that `evidence` now refutes, revoked with the
/// rule's detail.
fn revoked(run: &Run, accepted: &[StoredAttestation], evidence: Evidence<'_>, now: i64) -> Vec<StoredAttestation> {
    if run.runtime.is_none() {
        return Vec::new();
    }
    accepted
        .iter()
        .filter_map(|stored| {
            let refuted = weigh(&stored.attestation, run, evidence).err()?;
            Some(StoredAttestation {
                outcome: AttestationOutcome::Revoked,
                detail: Some(format!("revoked at {now}: {}", refuted.detail)),
                ..stored.clone()
            })
        })
        .collect()
}

/// The drain's retention, begun at `now` unless one is on record: a
/// retention kept from before goes on (its start, attempts and schedule).
fn retention_from(drain: &mut Drain, now: i64) -> &mut Retention {
    drain.retention.get_or_insert(Retention {
        since: now,
        reason: String::new(),
        recoverable: false,
        attempts: 0,
        next_recovery_at: None,
        last_error: None,
    })
}

/// Builds the next state step by step; each change starts from the stored
/// state unchanged.
struct Next<'a> {
    stored: &'a Stored,
    now: i64,
    t: Transition,
}

impl Next<'_> {
    fn run(&mut self) -> Result<&mut Run, Rejection> {
        self.t.run.as_mut().ok_or(Rejection::NoRun)
    }

    /// The run's drain, made when there is none yet.
    fn drain(&mut self) -> Result<&mut Drain, Rejection> {
        let run = self.t.run.as_ref().ok_or(Rejection::NoRun)?;
        let (run_id, workspace_id) = (run.id.clone(), run.workspace_id.clone());
        Ok(self.t.drain.get_or_insert_with(|| Drain::new(&run_id, &workspace_id)))
    }

    fn event(&mut self, event_type: EventType, message: impl Into<String>, data: Option<Value>) {
        let attempt_id = self.t.run.as_ref().map(|r| r.id.clone());
        self.t.events.push(NewEvent { attempt_id, event_type, message: Some(message.into()), data });
    }

    /// A `runtime.*` event of the run's executor (`retained`: why it was).
    fn runtime_event(&mut self, event_type: EventType, message: impl Into<String>, retained: Option<&str>) {
        let Some(run) = &self.t.run else { return };
        let Some(runtime) = &run.runtime else { return };
        let data =
            event_data::json(event_data::RuntimeEvent { retained, ..event_data::RuntimeEvent::of(runtime, run) });
        self.event(event_type, message, Some(data));
    }

    fn is_current(&self) -> bool {
        let run_id = self.stored.run.as_ref().map(|r| r.id.as_str());
        run_id.is_some() && self.stored.workspace.current_run_id.as_deref() == run_id
    }

    /// Asks the workspace to stop; true when it was not asked before.
    fn want_stopped(&mut self) -> bool {
        let workspace = &mut self.t.workspace;
        if workspace.desired_state == DesiredState::Stopped {
            return false;
        }
        workspace.desired_state = DesiredState::Stopped;
        workspace.updated_at = self.now;
        true
    }

    /// Wants the workspace running again, its new run queued: a restart's
    /// or a wake's.
    fn want_running(&mut self) {
        let workspace = &mut self.t.workspace;
        workspace.desired_state = DesiredState::Running;
        workspace.status = WorkspaceStatus::Queued;
        workspace.updated_at = self.now;
        workspace.finished_at = None;
        workspace.sleep = None;
        self.t.wake = true;
    }

    /// Wakes a sleeping workspace: a run that resumes it from its capture
    /// session's head, queued as its current run.
    fn resume(&mut self, cause: WakeCause, ids: &mut dyn FnMut(&'static str) -> String) {
        let (now, workspace) = (self.now, &self.stored.workspace);
        let asleep = crate::sleep::sleeping(workspace);
        let previous = workspace.current_run_id.clone();
        let run = Run {
            relation: RunRelation::Resume,
            trigger_ref: previous.as_ref().map(|r| r.to_string()),
            ..Run::queued(ids("run").into(), workspace.id.clone(), workspace.spec.clone(), None, now)
        };
        let data = event_data::json(event_data::Queued::resume(previous.as_ref(), cause));
        let woken =
            event_data::json(event_data::Woken { run_id: &run.id, cause, slept_since: asleep.map(|s| s.since) });
        self.t.sluice_events.push(NewSluiceEvent {
            event_type: SluiceEventType::WorkspaceWoken,
            workspace_id: Some(workspace.id.clone()),
            attempt_id: Some(run.id.clone()),
            message: format!("workspace woken by {cause}"),
            data: woken,
        });
        self.queue(run, "resume queued", data);
        self.want_running();
    }

    /// Queues `run` as the workspace's current run.
    fn queue(&mut self, run: Run, message: &str, data: Value) {
        self.t.workspace.current_run_id = Some(run.id.clone());
        self.t.events.push(NewEvent {
            attempt_id: Some(run.id.clone()),
            event_type: EventType::AttemptQueued,
            message: Some(message.into()),
            data: Some(data),
        });
        self.t.queued_run = Some(run);
    }

    fn outcome(&mut self, outcome: &Outcome, ids: &mut dyn FnMut(&'static str) -> String) -> Result<(), Rejection> {
        let now = self.now;
        match outcome {
            Outcome::Launched { runtime, published, preservation_starts_at } => {
                let run = self.run()?;
                run.status = WorkspaceStatus::Running;
                run.runtime = Some(runtime.clone());
                run.published_image = published.clone();
                run.updated_at = now;
                run.started_at = run.started_at.or(Some(now));
                set_status(&mut self.t.workspace, WorkspaceStatus::Running, now);
                if let Some(at) = preservation_starts_at {
                    self.drain()?.preservation_starts_at = Some(*at);
                }
                self.event(EventType::AttemptRunning, "launch started", None);
                if let Some(image) = published {
                    let data = event_data::json(event_data::ImagePublished::of(image));
                    self.event(EventType::ImagePublished, "image resolved", Some(data));
                }
                let message = format!("{} executor {} running", runtime.adapter, runtime.reference);
                self.runtime_event(EventType::RuntimeRunning, message, None);
            }
            Outcome::Ready => {
                let run = self.run()?;
                run.status = WorkspaceStatus::Ready;
                run.updated_at = now;
                set_runtime_status(run, RuntimeStatus::Ready);
                set_status(&mut self.t.workspace, WorkspaceStatus::Ready, now);
                self.runtime_event(EventType::RuntimeReady, "daemon healthy", None);
                self.event(EventType::AttemptSucceeded, "executor ready", None);
                // A broker workspace's env is kept only until its executor
                // has it. The capture token stays sealed: a restart's new
                // executor claims the session with it.
                self.t.forget_secrets = vec![SecretKind::ExecEnv];
            }
            Outcome::Failed { error, retry } => self.failed(error, *retry, ids)?,
            Outcome::Removed => self.removed()?,
            Outcome::Cancelled => {
                let run = self.run()?;
                run.status = WorkspaceStatus::Cancelled;
                run.updated_at = now;
                run.finished_at = Some(now);
                set_status(&mut self.t.workspace, WorkspaceStatus::Stopped, now);
                self.event(EventType::AttemptCancelled, "stopped before launch", None);
            }
            Outcome::Retained { reason, recoverable, first_attempt_at } => {
                let run = self.run()?;
                if unreachable_with_host(run) {
                    // Its host is back: it is retained for what it holds now.
                    run.error = None;
                }
                run.status = WorkspaceStatus::Retained;
                run.updated_at = now;
                set_runtime_status(run, RuntimeStatus::Retained);
                set_status(&mut self.t.workspace, WorkspaceStatus::Retained, now);
                let drain = self.drain()?;
                drain.state = Some(DrainState::Gone);
                drain.detail = Some(reason.clone());
                drain.observed_at = Some(now);
                let retention = retention_from(drain, now);
                retention.reason = reason.clone();
                retention.recoverable = *recoverable;
                retention.next_recovery_at = retention.next_recovery_at.or(Some(*first_attempt_at));
                self.runtime_event(
                    EventType::RuntimeFailed,
                    format!("executor retained: {reason}"),
                    Some(reason.as_str()),
                );
            }
            Outcome::DrainObserved(observation) => {
                let drain = self.drain()?;
                drain.state = Some(observation.state);
                drain.detail = observation.detail.clone();
                drain.observed_at = Some(now);
                drain.final_complete |= observation.state == DrainState::Saved;
                drain.progress = observation.progress.clone();
                if let Some(report) = &observation.report {
                    self.report(report.clone(), observation.detail.clone())?;
                }
            }
            Outcome::StopFailed { error } => {
                let drain = self.drain()?;
                drain.state = Some(DrainState::StopFailed);
                drain.detail = Some(error.clone());
                drain.observed_at = Some(now);
            }
            Outcome::RecoveryAttempted { error, next_at } => {
                self.run()?;
                if let Some(retention) = self.t.drain.as_mut().and_then(|d| d.retention.as_mut()) {
                    retention.attempts += 1;
                    retention.last_error = error.clone();
                    retention.next_recovery_at = Some(*next_at);
                }
            }
            Outcome::Lost { reason } => {
                let is_current = self.is_current();
                let run = self.run()?;
                run.status = WorkspaceStatus::Failed;
                set_runtime_status(run, RuntimeStatus::Failed);
                run.runtime_removed_at = Some(now);
                run.error = Some(RunError { message: reason.clone(), code: Some("executor-lost".into()) });
                run.updated_at = now;
                run.finished_at = run.finished_at.or(Some(now));
                let drain = self.drain()?;
                drain.state = Some(DrainState::Gone);
                drain.detail = Some(reason.clone());
                drain.observed_at = Some(now);
                if is_current {
                    set_status(&mut self.t.workspace, WorkspaceStatus::Failed, now);
                }
                let failed = event_data::AttemptFailed { message: reason, code: Some("executor-lost"), retry: false };
                let data = event_data::json(failed);
                self.event(EventType::AttemptFailed, reason.clone(), Some(data));
            }
            Outcome::PreservationBegun => {
                self.run()?;
                self.want_stopped();
                let drain = self.drain()?;
                drain.stop_requested = drain.stop_requested.take().or(Some(("sluice:preservation".into(), now)));
            }
            Outcome::Readopted => {
                let is_current = self.is_current();
                let run = self.run()?;
                if !unreachable_with_host(run) || !is_current {
                    return Ok(());
                }
                run.status = WorkspaceStatus::Ready;
                run.error = None;
                run.finished_at = None;
                run.updated_at = now;
                set_runtime_status(run, RuntimeStatus::Ready);
                let host = run.host.clone().unwrap_or_default();
                if let Some(drain) = self.t.drain.as_mut() {
                    drain.state = None;
                    drain.detail = None;
                    drain.retention = None;
                    drain.observed_at = Some(now);
                }
                set_status(&mut self.t.workspace, WorkspaceStatus::Ready, now);
                self.runtime_event(EventType::RuntimeReady, format!("host {host} is back: executor adopted"), None);
            }
            Outcome::HostUnreachable { host } => self.host_unreachable(host)?,
            Outcome::HostLost { host, by } => self.host_lost(host, by)?,
        }
        Ok(())
    }

    /// The run's host stopped answering: a launched executor that may hold
    /// unsaved work is retained (never written off, never relaunched over
    /// its session while the host may come back); any other fails.
    fn host_unreachable(&mut self, host: &str) -> Result<(), Rejection> {
        let now = self.now;
        let is_current = self.is_current();
        let capture = self.stored.workspace.spec.capture_session().is_some();
        let run = self.run()?;
        let live = run.runtime.is_some() && run.runtime_removed_at.is_none();
        if !live || !matches!(run.status, WorkspaceStatus::Running | WorkspaceStatus::Ready) {
            return Ok(());
        }
        let message = format!("host {host} is unreachable: none of its workers beat within the grace");
        run.error = Some(RunError { message: message.clone(), code: Some(HOST_UNREACHABLE.into()) });
        run.updated_at = now;
        if capture {
            run.status = WorkspaceStatus::Retained;
            set_runtime_status(run, RuntimeStatus::Retained);
            let drain = self.drain()?;
            drain.state = Some(DrainState::Kept);
            drain.detail = Some(message.clone());
            drain.observed_at = Some(now);
            let retention = retention_from(drain, now);
            retention.reason = HOST_UNREACHABLE.into();
            retention.recoverable = false;
            retention.next_recovery_at = None;
            if is_current {
                set_status(&mut self.t.workspace, WorkspaceStatus::Retained, now);
            }
            self.runtime_event(
                EventType::RuntimeFailed,
                format!("executor retained: {message}"),
                Some(HOST_UNREACHABLE),
            );
        } else {
            run.status = WorkspaceStatus::Failed;
            run.finished_at = Some(now);
            set_runtime_status(run, RuntimeStatus::Failed);
            if is_current {
                set_status(&mut self.t.workspace, WorkspaceStatus::Failed, now);
            }
            self.runtime_event(EventType::RuntimeFailed, message.clone(), None);
            let failed = event_data::AttemptFailed { message: &message, code: Some(HOST_UNREACHABLE), retry: false };
            let data = event_data::json(failed);
            self.event(EventType::AttemptFailed, message, Some(data));
        }
        self.t.wake = true;
        Ok(())
    }

    /// An operator declared the run's host lost: its executor is gone with
    /// its disk, so a new executor may take its session.
    fn host_lost(&mut self, host: &str, by: &str) -> Result<(), Rejection> {
        let run = self.run()?;
        if run.runtime.is_none() || run.runtime_removed_at.is_some() {
            return Ok(());
        }
        let reason = format!("host {host} was declared lost by {by}");
        self.outcome(&Outcome::Lost { reason }, &mut |_| unreachable!("a loss queues no run"))?;
        self.t.wake = true;
        Ok(())
    }

    /// The run failed; with `retry`, a new run is queued in its place.
    fn failed(
        &mut self,
        error: &RunError,
        retry: bool,
        ids: &mut dyn FnMut(&'static str) -> String,
    ) -> Result<(), Rejection> {
        let now = self.now;
        let run = self.run()?;
        run.status = WorkspaceStatus::Failed;
        set_runtime_status(run, RuntimeStatus::Failed);
        run.error = Some(error.clone());
        run.updated_at = now;
        run.finished_at = Some(now);
        let failed = run.clone();
        self.runtime_event(EventType::RuntimeFailed, error.message.clone(), None);
        let why = event_data::AttemptFailed { message: &error.message, code: error.code.as_deref(), retry };
        let data = event_data::json(why);
        self.event(EventType::AttemptFailed, error.message.clone(), Some(data));
        if retry {
            let queued = Run::queued(
                ids("run").into(),
                failed.workspace_id.clone(),
                failed.spec.clone(),
                failed.launch_id.clone(),
                now,
            );
            let retry_run = Run {
                relation: RunRelation::Retry,
                trigger_type: TriggerType::Retry,
                trigger_ref: Some(failed.id.to_string()),
                launch_attempt: failed.launch_attempt + 1,
                ..queued
            };
            let data = event_data::json(event_data::Queued::retry(&failed.id, retry_run.launch_attempt));
            self.queue(retry_run, "retry queued", data);
            set_status(&mut self.t.workspace, WorkspaceStatus::Queued, now);
        } else {
            set_status(&mut self.t.workspace, WorkspaceStatus::Failed, now);
        }
        Ok(())
    }

    /// The run's runtime resource is gone: the workspace ends with it when it
    /// was asked to stop, or when a retained executor that ended on its own
    /// was removed once its work was saved.
    fn removed(&mut self) -> Result<(), Rejection> {
        let now = self.now;
        let is_current = self.is_current();
        let stopping = self.stored.workspace.desired_state == DesiredState::Stopped;
        let run = self.run()?;
        run.runtime_removed_at = Some(now);
        run.updated_at = now;
        if run.runtime.as_ref().is_some_and(|r| r.status != RuntimeStatus::Failed) {
            set_runtime_status(run, RuntimeStatus::Stopped);
        }
        let ended_on_its_own = is_current && !stopping && run.status == WorkspaceStatus::Retained;
        if ended_on_its_own {
            // It ended on its own and was kept until its work was saved.
            run.status = WorkspaceStatus::Failed;
            run.error = run.error.take().or_else(|| {
                Some(RunError {
                    message: "the executor ended on its own; its work was saved before it was removed".into(),
                    code: Some("executor-exited".into()),
                })
            });
            run.finished_at = run.finished_at.or(Some(now));
        }
        if is_current && stopping {
            if run.status != WorkspaceStatus::Failed {
                run.status = WorkspaceStatus::Stopped;
            }
            run.finished_at = run.finished_at.or(Some(now));
        }
        if let Some(drain) = &mut self.t.drain {
            drain.state = Some(if drain.discard.is_some() { DrainState::Discarded } else { DrainState::Stopped });
            drain.detail = None;
            drain.observed_at = Some(now);
            if let Some(retention) = &mut drain.retention {
                retention.next_recovery_at = None;
            }
        }
        if ended_on_its_own {
            set_status(&mut self.t.workspace, WorkspaceStatus::Failed, now);
        }
        if is_current && stopping {
            set_status(&mut self.t.workspace, WorkspaceStatus::Stopped, now);
            if let Some(sleep) = self.t.workspace.sleep {
                let run_id = self.t.run.as_ref().map(|r| r.id.clone());
                let data = event_data::json(event_data::Slept { run_id: run_id.as_ref(), reason: sleep.reason });
                self.t.sluice_events.push(NewSluiceEvent {
                    event_type: SluiceEventType::WorkspaceSlept,
                    workspace_id: Some(self.t.workspace.id.clone()),
                    attempt_id: run_id,
                    message: format!("workspace asleep ({}): its work is saved and its runtime released", sleep.reason),
                    data,
                });
            }
        }
        if let Some(runtime) = self.t.run.as_ref().and_then(|r| r.runtime.as_ref()) {
            let message = format!("{} executor {} removed", runtime.adapter, runtime.reference);
            self.runtime_event(EventType::RuntimeStopped, message, None);
        }
        Ok(())
    }

    /// Appends `report` and revokes the accepted attestations it refutes.
    fn report(&mut self, report: Report, detail: Option<String>) -> Result<(), Rejection> {
        let run = self.t.run.as_ref().ok_or(Rejection::NoRun)?;
        if !report.saved {
            let mut reports = self.stored.reports.clone();
            reports.push(report.clone());
            let evidence = Evidence::of(&reports, self.stored.claimed_epoch, self.stored.drain.as_ref());
            self.t.attestations = revoked(run, &self.stored.accepted, evidence, self.now);
        }
        self.t.report = Some((report, detail));
        Ok(())
    }

    /// The owner's stop: intent recorded on the drain of a launched
    /// capture-sourced executor, its attestation weighed once here.
    fn stop(
        &mut self,
        by: &str,
        intent: &StopIntent,
        ids: &mut dyn FnMut(&'static str) -> String,
    ) -> Result<(), Rejection> {
        let now = self.now;
        stop_allowed(&self.stored.workspace, self.stored.run.as_ref())?;
        // A stop of a sleeping workspace keeps it stopped: no use wakes it.
        self.t.workspace.sleep = None;
        self.t.wake = self.want_stopped();
        let capture = self.stored.workspace.spec.capture_session().is_some();
        let mut completion = None;
        if let Some(run) = self.stored.run.as_ref().filter(|r| r.runtime.is_some() && capture) {
            let drain = self.drain()?;
            drain.stop_requested = drain.stop_requested.take().or(Some((by.to_owned(), now)));
            if intent.discard {
                drain.discard =
                    drain.discard.take().or(Some(Discard { requested_by: by.to_owned(), requested_at: now }));
                self.t.wake = true;
            }
            if let Some((attestation, sealed_at)) = &intent.attestation {
                let evidence =
                    Evidence::of(&self.stored.reports, self.stored.claimed_epoch, self.stored.drain.as_ref());
                let (outcome, detail) = match weigh(attestation, run, evidence) {
                    Ok(()) => (AttestationOutcome::Accepted, None),
                    Err(refuted) => (AttestationOutcome::Ignored, Some(refuted.detail)),
                };
                self.t.attestations.push(StoredAttestation {
                    id: ids("att"),
                    run_id: run.id.clone(),
                    attestation: attestation.clone(),
                    sealed_at: sealed_at.clone(),
                    outcome,
                    detail: detail.clone(),
                    attested_by: by.to_owned(),
                    attested_at: now,
                });
                self.t.wake |= outcome == AttestationOutcome::Accepted;
                completion = Some((outcome, detail));
            }
        } else if intent.attestation.is_some() {
            let detail = if capture {
                "executor: the workspace has no executor for the attestation to name"
            } else {
                "executor: the workspace is not capture-sourced; its executor holds nothing to attest"
            };
            completion = Some((AttestationOutcome::Ignored, Some(detail.to_owned())));
        }
        self.t.answer = Answer::Stop { completion };
        Ok(())
    }

    fn request(&mut self, request: &Request, ids: &mut dyn FnMut(&'static str) -> String) -> Result<(), Rejection> {
        let now = self.now;
        match request {
            Request::Stop { by, intent } => self.stop(by, intent, ids)?,
            Request::End { by } => {
                if stop_allowed(&self.stored.workspace, self.stored.run.as_ref()).is_ok() {
                    self.stop(by, &StopIntent::default(), ids)?;
                } else {
                    self.t.wake = self.want_stopped();
                }
            }
            Request::Restart => {
                let workspace = &self.stored.workspace;
                restart_allowed(workspace, self.stored.run.as_ref())?;
                let run = Run::queued(ids("run").into(), workspace.id.clone(), workspace.spec.clone(), None, now);
                let data = event_data::json(event_data::Queued::restart(workspace.current_run_id.as_ref()));
                self.queue(run, "restart queued", data);
                self.want_running();
            }
            Request::Recover => {
                let retained = self.is_current()
                    && self.stored.run.as_ref().is_some_and(|r| r.status == WorkspaceStatus::Retained);
                let retention = self.t.drain.as_mut().and_then(|d| d.retention.as_mut()).filter(|_| retained);
                let recoverable = match retention {
                    Some(retention) => {
                        retention.next_recovery_at = Some(now);
                        self.t.wake = true;
                        Some(retention.recoverable)
                    }
                    None => None,
                };
                self.t.answer = Answer::Recover { recoverable };
            }
            Request::Expire => {
                let due = self.stored.workspace.expires_at.is_some_and(|at| at <= now);
                if due {
                    self.t.workspace.sleep = None;
                    self.t.wake = self.want_stopped();
                }
            }
            Request::Sleep { reason } => {
                let step = sleep_allowed(&self.stored.workspace)?;
                if step == SleepStep::Begin {
                    let sleep = Sleep { reason: *reason, asked_at: now };
                    self.stop(&sleep.by(), &StopIntent::default(), ids)?;
                    self.t.workspace.sleep = Some(sleep);
                }
                self.t.answer = Answer::Sleep(step);
            }
            Request::Wake { cause } => {
                let found = wakefulness(&self.stored.workspace)?;
                if found == Wakefulness::Asleep {
                    self.resume(*cause, ids);
                }
                self.t.answer = Answer::Wake(found);
            }
            Request::Report { report, detail } => self.report(report.clone(), detail.clone())?,
        }
        Ok(())
    }
}

/// The next state after `change`, at `now`; `ids` names new records by
/// their kind ("run", "att"). A rejection leaves everything as stored.
pub fn transition(
    stored: &Stored,
    change: &Change,
    now: i64,
    ids: &mut dyn FnMut(&'static str) -> String,
) -> Result<Transition, Rejection> {
    let t = Transition {
        workspace: stored.workspace.clone(),
        run: stored.run.clone(),
        drain: stored.drain.clone(),
        queued_run: None,
        attestations: Vec::new(),
        report: None,
        events: Vec::new(),
        sluice_events: Vec::new(),
        forget_secrets: Vec::new(),
        wake: false,
        answer: Answer::None,
    };
    let mut next = Next { stored, now, t };
    match change {
        Change::Outcome(outcome) => next.outcome(outcome, ids)?,
        Change::Request(request) => next.request(request, ids)?,
    }
    Ok(next.t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{run, workspace};
    use DesiredState as D;
    use DrainState as Ds;
    use EventType as E;
    use RuntimeStatus as Rt;
    use WorkspaceStatus as S;
    use sluice_protocol::Origin;
    use sluice_protocol::attest::Attestation;

    const NOW: i64 = 9_000;

    /// A workspace in `status` wanting `desired`, with its current run in
    /// `run_status`, launched or not, capture-sourced or not.
    fn stored(status: S, desired: D, run_status: S, launched: bool, capture: bool) -> Stored {
        let mut workspace = workspace(status, desired);
        if capture {
            workspace.spec =
                crate::spec::Spec::parse(serde_json::json!({"source": {"kind": "capture", "sessionId": "cs_1"}}))
                    .unwrap();
        }
        Stored {
            workspace,
            run: Some(run("cur", run_status, launched, false)),
            drain: None,
            reports: vec![],
            accepted: vec![],
            claimed_epoch: None,
        }
    }

    fn origin(observation: u64, head_n: u64) -> Origin {
        Origin {
            epoch: 2,
            launch: "cur".into(),
            boot_id: "b".into(),
            boot_generation: 1,
            observation,
            head_n: Some(head_n),
        }
    }

    fn attestation(head_n: u64) -> Attestation {
        Attestation {
            capture_n: head_n,
            epoch: 2,
            executor_id: "res".into(),
            launch_id: None,
            origin: Some(origin(10, head_n)),
        }
    }

    fn apply(stored: &Stored, change: Change) -> Result<Transition, Rejection> {
        let mut n = 0;
        transition(stored, &change, NOW, &mut |kind| {
            n += 1;
            format!("{kind}_{n}")
        })
    }

    fn outcome(o: Outcome) -> Change {
        Change::Outcome(o)
    }

    fn launched() -> Outcome {
        let runtime = RuntimeRecord {
            adapter: RuntimeAdapter::Docker,
            resource_id: "res".into(),
            reference: "ref".into(),
            status: Rt::Running,
            endpoint: None,
            deadline: Some(50_000),
        };
        Outcome::Launched { runtime, published: None, preservation_starts_at: Some(40_000) }
    }

    fn failed(retry: bool) -> Outcome {
        Outcome::Failed { error: RunError { message: "boom".into(), code: Some("x".into()) }, retry }
    }

    fn retained() -> Outcome {
        Outcome::Retained { reason: "unsaved".into(), recoverable: true, first_attempt_at: NOW + 1 }
    }

    fn observed(state: Ds, saved: bool) -> Outcome {
        let report = Some(Report { origin: origin(20, 5), saved });
        Outcome::DrainObserved(DrainObservation { state, detail: None, report, progress: DrainProgress::default() })
    }

    fn end() -> Change {
        Change::Request(Request::End { by: "broker: released".into() })
    }

    fn stop(discard: bool, attest: Option<u64>) -> Change {
        let attestation = attest.map(|n| (attestation(n), None));
        Change::Request(Request::Stop { by: "o".into(), intent: StopIntent { discard, attestation } })
    }

    /// What one row expects of the next state.
    struct Expect {
        workspace: S,
        desired: D,
        run: S,
        runtime: Option<Rt>,
        drain: Option<Ds>,
        events: &'static [E],
        queued: bool,
        wake: bool,
    }

    /// A row's expectation: (workspace, desired, run) statuses, runtime and
    /// drain state, events, whether a run is queued, whether a reconcile is due.
    #[allow(clippy::too_many_arguments)]
    fn expect(
        (workspace, desired, run): (S, D, S),
        runtime: Option<Rt>,
        drain: Option<Ds>,
        events: &'static [E],
        queued: bool,
        wake: bool,
    ) -> Expect {
        Expect { workspace, desired, run, runtime, drain, events, queued, wake }
    }

    fn check(name: &str, stored: &Stored, change: Change, e: Expect) -> Transition {
        let t = apply(stored, change).unwrap_or_else(|r| panic!("{name}: rejected {r:?}"));
        let run = t.run.as_ref().unwrap();
        assert_eq!(t.workspace.status, e.workspace, "{name}: workspace status");
        assert_eq!(t.workspace.desired_state, e.desired, "{name}: desired state");
        assert_eq!(run.status, e.run, "{name}: run status");
        assert_eq!(run.runtime.as_ref().map(|r| r.status), e.runtime, "{name}: runtime status");
        assert_eq!(t.drain.as_ref().and_then(|d| d.state), e.drain, "{name}: drain state");
        let events: Vec<E> = t.events.iter().map(|e| e.event_type).collect();
        assert_eq!(events, e.events, "{name}: events");
        assert_eq!(t.queued_run.is_some(), e.queued, "{name}: queued run");
        assert_eq!(t.wake, e.wake, "{name}: wake");
        t
    }

    /// The table: each change from the states it is made in.
    #[test]
    fn each_change_moves_to_its_complete_next_state() {
        let base = |ws, d, r, l, c| stored(ws, d, r, l, c);
        let rows: Vec<(&str, Stored, Change, Expect)> = vec![
            (
                "launched",
                base(S::Queued, D::Running, S::Queued, false, true),
                outcome(launched()),
                expect(
                    (S::Running, D::Running, S::Running),
                    Some(Rt::Running),
                    None,
                    &[E::AttemptRunning, E::RuntimeRunning],
                    false,
                    false,
                ),
            ),
            (
                "ready",
                base(S::Running, D::Running, S::Running, true, false),
                outcome(Outcome::Ready),
                expect(
                    (S::Ready, D::Running, S::Ready),
                    Some(Rt::Ready),
                    None,
                    &[E::RuntimeReady, E::AttemptSucceeded],
                    false,
                    false,
                ),
            ),
            (
                "failed, retried",
                base(S::Running, D::Running, S::Running, true, false),
                outcome(failed(true)),
                expect(
                    (S::Queued, D::Running, S::Failed),
                    Some(Rt::Failed),
                    None,
                    &[E::RuntimeFailed, E::AttemptFailed, E::AttemptQueued],
                    true,
                    false,
                ),
            ),
            (
                "failed before a runtime",
                base(S::Queued, D::Running, S::Queued, false, false),
                outcome(failed(false)),
                expect((S::Failed, D::Running, S::Failed), None, None, &[E::AttemptFailed], false, false),
            ),
            (
                "removed while stopping",
                base(S::Ready, D::Stopped, S::Ready, true, false),
                outcome(Outcome::Removed),
                expect(
                    (S::Stopped, D::Stopped, S::Stopped),
                    Some(Rt::Stopped),
                    None,
                    &[E::RuntimeStopped],
                    false,
                    false,
                ),
            ),
            (
                "failed run removed while stopping",
                base(S::Failed, D::Stopped, S::Failed, true, false),
                outcome(Outcome::Removed),
                expect(
                    (S::Stopped, D::Stopped, S::Failed),
                    Some(Rt::Stopped),
                    None,
                    &[E::RuntimeStopped],
                    false,
                    false,
                ),
            ),
            (
                "retained executor that ended on its own, removed once saved",
                base(S::Retained, D::Running, S::Retained, true, true),
                outcome(Outcome::Removed),
                expect((S::Failed, D::Running, S::Failed), Some(Rt::Stopped), None, &[E::RuntimeStopped], false, false),
            ),
            (
                "cancelled",
                base(S::Queued, D::Stopped, S::Queued, false, false),
                outcome(Outcome::Cancelled),
                expect((S::Stopped, D::Stopped, S::Cancelled), None, None, &[E::AttemptCancelled], false, false),
            ),
            (
                "retained",
                base(S::Ready, D::Stopped, S::Ready, true, true),
                outcome(retained()),
                expect(
                    (S::Retained, D::Stopped, S::Retained),
                    Some(Rt::Retained),
                    Some(Ds::Gone),
                    &[E::RuntimeFailed],
                    false,
                    false,
                ),
            ),
            (
                "drain saved",
                base(S::Ready, D::Stopped, S::Ready, true, true),
                outcome(observed(Ds::Saved, true)),
                expect((S::Ready, D::Stopped, S::Ready), Some(Rt::Running), Some(Ds::Saved), &[], false, false),
            ),
            (
                "stop failed",
                base(S::Ready, D::Stopped, S::Ready, true, true),
                outcome(Outcome::StopFailed { error: "e".into() }),
                expect((S::Ready, D::Stopped, S::Ready), Some(Rt::Running), Some(Ds::StopFailed), &[], false, false),
            ),
            (
                "lost",
                base(S::Retained, D::Stopped, S::Retained, true, true),
                outcome(Outcome::Lost { reason: "gone".into() }),
                expect(
                    (S::Failed, D::Stopped, S::Failed),
                    Some(Rt::Failed),
                    Some(Ds::Gone),
                    &[E::AttemptFailed],
                    false,
                    false,
                ),
            ),
            (
                "preservation",
                base(S::Ready, D::Running, S::Ready, true, true),
                outcome(Outcome::PreservationBegun),
                expect((S::Ready, D::Stopped, S::Ready), Some(Rt::Running), None, &[], false, false),
            ),
            (
                "stop",
                base(S::Ready, D::Running, S::Ready, true, false),
                stop(false, None),
                expect((S::Ready, D::Stopped, S::Ready), Some(Rt::Running), None, &[], false, true),
            ),
            (
                "stop again",
                base(S::Ready, D::Stopped, S::Ready, true, false),
                stop(false, None),
                expect((S::Ready, D::Stopped, S::Ready), Some(Rt::Running), None, &[], false, false),
            ),
            (
                "a broker's end of a launched executor",
                base(S::Ready, D::Running, S::Ready, true, false),
                end(),
                expect((S::Ready, D::Stopped, S::Ready), Some(Rt::Running), None, &[], false, true),
            ),
            (
                "a broker's end before anything launched",
                base(S::Queued, D::Running, S::Queued, false, false),
                end(),
                expect((S::Queued, D::Stopped, S::Queued), None, None, &[], false, true),
            ),
            (
                "a broker's end again",
                base(S::Queued, D::Stopped, S::Queued, false, false),
                end(),
                expect((S::Queued, D::Stopped, S::Queued), None, None, &[], false, false),
            ),
            (
                "discard after a stop",
                base(S::Retained, D::Stopped, S::Retained, true, true),
                stop(true, None),
                expect((S::Retained, D::Stopped, S::Retained), Some(Rt::Running), None, &[], false, true),
            ),
            (
                "restart",
                base(S::Ready, D::Running, S::Ready, true, false),
                Change::Request(Request::Restart),
                expect((S::Queued, D::Running, S::Ready), Some(Rt::Running), None, &[E::AttemptQueued], true, true),
            ),
        ];
        for (name, stored, change, expect) in rows {
            check(name, &stored, change, expect);
        }
    }

    /// Details the table does not show: what is kept, counted and queued.
    #[test]
    fn what_each_change_keeps_and_counts() {
        let capture = stored(S::Queued, D::Running, S::Queued, false, true);
        let t = apply(&capture, outcome(launched())).unwrap();
        assert_eq!(t.drain.unwrap().preservation_starts_at, Some(40_000), "drained ahead of the deadline");
        assert_eq!(t.workspace.started_at, Some(NOW));

        let ready = stored(S::Running, D::Running, S::Running, true, true);
        let t = apply(&ready, outcome(Outcome::Ready)).unwrap();
        assert_eq!(t.forget_secrets, [SecretKind::ExecEnv]);

        let t = apply(&ready, outcome(failed(true))).unwrap();
        let retry = t.queued_run.unwrap();
        assert_eq!(
            (retry.relation, retry.trigger_ref.as_deref(), retry.launch_attempt),
            (RunRelation::Retry, Some("cur"), 2)
        );
        assert_eq!(t.workspace.current_run_id.as_deref(), Some(retry.id.as_str()));
        assert_eq!(t.events[2].attempt_id.as_deref(), Some(retry.id.as_str()), "the queued event names the retry");

        // A retention on record goes on: its start and attempts stay.
        let mut again = stored(S::Ready, D::Stopped, S::Ready, true, true);
        let earlier = Retention {
            since: 7,
            reason: "old".into(),
            recoverable: false,
            attempts: 3,
            next_recovery_at: Some(8),
            last_error: None,
        };
        again.drain = Some(Drain { retention: Some(earlier), ..Drain::new(&"cur".into(), &"ws".into()) });
        let t = apply(&again, outcome(retained())).unwrap();
        let retention = t.drain.unwrap().retention.unwrap();
        assert_eq!((retention.since, retention.attempts, retention.next_recovery_at), (7, 3, Some(8)));
        assert_eq!((retention.reason.as_str(), retention.recoverable), ("unsaved", true));

        let t = apply(&again, outcome(Outcome::RecoveryAttempted { error: Some("no".into()), next_at: 99 })).unwrap();
        let retention = t.drain.unwrap().retention.unwrap();
        assert_eq!(
            (retention.attempts, retention.last_error.as_deref(), retention.next_recovery_at),
            (4, Some("no"), Some(99))
        );

        // A discarded drain ends discarded; its retention's schedule ends.
        let mut discarded = again.clone();
        discarded.drain.as_mut().unwrap().discard = Some(Discard { requested_by: "o".into(), requested_at: 1 });
        discarded.workspace.status = S::Retained;
        let t = apply(&discarded, outcome(Outcome::Removed)).unwrap();
        let drain = t.drain.unwrap();
        assert_eq!(drain.state, Some(Ds::Discarded));
        assert_eq!(drain.retention.unwrap().next_recovery_at, None);

        // A drain that reads saved once stays final-complete.
        let t = apply(&again, outcome(observed(Ds::Saved, true))).unwrap();
        let mut saved = again.clone();
        saved.drain = t.drain;
        let t = apply(&saved, outcome(observed(Ds::Kept, false))).unwrap();
        assert!(t.drain.unwrap().final_complete);

        // A stale run's removal leaves the workspace as it is.
        let mut stale = stored(S::Ready, D::Running, S::Ready, true, false);
        stale.run.as_mut().unwrap().id = "old".into();
        let t = apply(&stale, outcome(Outcome::Removed)).unwrap();
        assert_eq!(t.workspace, stale.workspace);
        assert_eq!(t.run.unwrap().runtime_removed_at, Some(NOW));
    }

    #[test]
    fn attestations_are_weighed_once_and_revoked_by_what_refutes_them() {
        let s = stored(S::Ready, D::Running, S::Ready, true, true);
        let t = apply(&s, stop(false, Some(5))).unwrap();
        let [accepted] = t.attestations.as_slice() else { panic!("one attestation: {:?}", t.attestations) };
        assert_eq!(accepted.outcome, AttestationOutcome::Accepted);
        assert!(t.wake);
        assert_eq!(t.answer, Answer::Stop { completion: Some((AttestationOutcome::Accepted, None)) });

        // A later report of unsaved work past the seal revokes it.
        let mut later = s.clone();
        later.accepted = vec![accepted.clone()];
        let report = Report { origin: origin(20, 5), saved: false };
        let t = apply(&later, Change::Request(Request::Report { report: report.clone(), detail: None })).unwrap();
        assert_eq!(t.attestations.len(), 1);
        assert_eq!(t.attestations[0].outcome, AttestationOutcome::Revoked);
        assert!(t.attestations[0].detail.as_deref().unwrap().starts_with(&format!("revoked at {NOW}: ")));
        assert_eq!(t.report, Some((report, None)));
        // A saved report revokes nothing.
        let saved = Report { origin: origin(20, 5), saved: true };
        let t = apply(&later, Change::Request(Request::Report { report: saved, detail: None })).unwrap();
        assert!(t.attestations.is_empty());

        // Contradicted at arrival (a stored report already refutes it): ignored.
        let mut contradicted = s.clone();
        contradicted.workspace.desired_state = D::Stopped;
        contradicted.reports = vec![Report { origin: origin(20, 5), saved: false }];
        let t = apply(&contradicted, stop(false, Some(5))).unwrap();
        assert_eq!(t.attestations[0].outcome, AttestationOutcome::Ignored);
        assert!(!t.wake, "asked to stop again, with nothing accepted: nothing new to do");
        // Forged (another executor) is ignored too.
        let mut forged = attestation(5);
        forged.executor_id = "someone-else".into();
        let intent = StopIntent { discard: false, attestation: Some((forged, None)) };
        let t = apply(&s, Change::Request(Request::Stop { by: "o".into(), intent })).unwrap();
        assert_eq!(t.attestations[0].outcome, AttestationOutcome::Ignored);

        // Started again since (it claimed a newer epoch): the seal of its
        // earlier boot no longer covers it, reported or not.
        let mut restarted = s.clone();
        restarted.claimed_epoch = Some(3);
        let t = apply(&restarted, stop(false, Some(5))).unwrap();
        assert_eq!(t.attestations[0].outcome, AttestationOutcome::Ignored);
        assert!(t.attestations[0].detail.as_deref().unwrap().starts_with("older-epoch:"));
        restarted.accepted = vec![accepted.clone()];
        let saved = Report { origin: origin(30, 5), saved: false };
        let t = apply(&restarted, Change::Request(Request::Report { report: saved, detail: None })).unwrap();
        assert_eq!(t.attestations[0].outcome, AttestationOutcome::Revoked);

        // Nothing to attest: not capture-sourced, or nothing launched.
        let plain = stored(S::Ready, D::Running, S::Ready, true, false);
        let t = apply(&plain, stop(false, Some(5))).unwrap();
        assert!(t.attestations.is_empty());
        assert!(matches!(t.answer, Answer::Stop { completion: Some((AttestationOutcome::Ignored, Some(_))) }));
    }

    #[test]
    fn requests_the_rules_refuse_change_nothing() {
        let never = stored(S::Queued, D::Running, S::Queued, false, false);
        let refused = apply(&never, stop(false, None)).unwrap_err();
        assert!(matches!(refused, Rejection::Refused(Refusal { code: ConflictCode::NeverLaunched, .. })));
        let retained = stored(S::Retained, D::Stopped, S::Retained, true, false);
        let refused = apply(&retained, Change::Request(Request::Restart)).unwrap_err();
        assert!(matches!(refused, Rejection::Refused(Refusal { code: ConflictCode::Retained, .. })));
        let mut no_run = retained.clone();
        no_run.run = None;
        assert_eq!(apply(&no_run, outcome(Outcome::Ready)).unwrap_err(), Rejection::NoRun);
    }

    /// A broker's end of a capture-sourced executor is a stop: its intent is
    /// recorded under the broker's name, and the drain runs as for any stop.
    #[test]
    fn a_brokers_end_records_its_intent_like_any_stop() {
        let capture = stored(S::Ready, D::Running, S::Ready, true, true);
        let ended = apply(&capture, end()).unwrap();
        let stopped = apply(
            &capture,
            Change::Request(Request::Stop { by: "broker: released".into(), intent: StopIntent::default() }),
        )
        .unwrap();
        assert_eq!(ended, stopped);
        let intent = ended.drain.as_ref().and_then(|d| d.stop_requested.clone());
        assert_eq!(intent.map(|(by, _)| by), Some("broker: released".to_owned()));
        assert_eq!(ended.workspace.desired_state, D::Stopped);
    }

    /// Its state after `t`, as the next change reads it.
    fn after(t: &Transition) -> Stored {
        Stored {
            workspace: t.workspace.clone(),
            run: t.queued_run.clone().or_else(|| t.run.clone()),
            drain: t.drain.clone().filter(|_| t.queued_run.is_none()),
            reports: vec![],
            accepted: vec![],
            claimed_epoch: None,
        }
    }

    /// A sleep drains as a stop under its own name; once the runtime is gone
    /// the workspace sleeps (and says so on the feed); the first wake
    /// queues one resume run, and a second wake finds it awake.
    #[test]
    fn a_sleep_drains_as_a_stop_and_a_wake_resumes_on_a_new_run() {
        let ready = stored(S::Ready, D::Running, S::Ready, true, true);
        let asleep = apply(&ready, Change::Request(Request::Sleep { reason: SleepReason::Idle })).unwrap();
        assert_eq!(asleep.answer, Answer::Sleep(SleepStep::Begin));
        assert_eq!((asleep.workspace.desired_state, asleep.wake), (D::Stopped, true));
        let by = asleep.drain.as_ref().and_then(|d| d.stop_requested.clone()).map(|(by, _)| by);
        assert_eq!(by.as_deref(), Some("sleep: idle"));
        assert!(asleep.sluice_events.is_empty(), "not asleep until its runtime is gone");
        let again = apply(&after(&asleep), Change::Request(Request::Sleep { reason: SleepReason::Requested })).unwrap();
        assert_eq!((again.answer, again.workspace.sleep), (Answer::Sleep(SleepStep::Already), asleep.workspace.sleep));

        let early = apply(&after(&asleep), Change::Request(Request::Wake { cause: WakeCause::Exec })).unwrap();
        assert_eq!((early.answer, early.queued_run.is_none()), (Answer::Wake(Wakefulness::FallingAsleep), true));

        let gone = apply(&after(&asleep), outcome(Outcome::Removed)).unwrap();
        assert_eq!(gone.workspace.status, S::Stopped);
        let slept: Vec<_> = gone.sluice_events.iter().map(|e| e.event_type).collect();
        assert_eq!(slept, [SluiceEventType::WorkspaceSlept]);
        assert_eq!(gone.sluice_events[0].data["reason"], "idle");
        assert!(crate::sleep::sleeping(&gone.workspace).is_some());

        let woken = apply(&after(&gone), Change::Request(Request::Wake { cause: WakeCause::Preview })).unwrap();
        assert_eq!(woken.answer, Answer::Wake(Wakefulness::Asleep));
        let run = woken.queued_run.clone().expect("a resume run");
        assert_eq!((run.relation, run.trigger_ref.as_deref()), (RunRelation::Resume, Some("cur")));
        assert_eq!(woken.workspace.current_run_id.as_ref(), Some(&run.id));
        assert_eq!((woken.workspace.status, woken.workspace.desired_state), (S::Queued, D::Running));
        assert_eq!((woken.workspace.sleep, woken.wake), (None, true));
        let events: Vec<_> = woken.events.iter().map(|e| e.event_type).collect();
        assert_eq!(events, [E::AttemptQueued]);
        assert_eq!(woken.events[0].data.as_ref().unwrap()["wokenBy"], "preview");
        assert_eq!(woken.sluice_events[0].event_type, SluiceEventType::WorkspaceWoken);

        let twice = apply(&after(&woken), Change::Request(Request::Wake { cause: WakeCause::Exec })).unwrap();
        assert_eq!((twice.answer, twice.queued_run), (Answer::Wake(Wakefulness::Awake), None));
    }

    /// A stop or an expiry of a sleeping workspace ends its sleep: no use
    /// wakes it after that.
    #[test]
    fn a_stop_or_expiry_of_a_sleeping_workspace_keeps_it_stopped() {
        let mut sleeping = stored(S::Stopped, D::Stopped, S::Stopped, true, true);
        sleeping.workspace.sleep = Some(Sleep { reason: SleepReason::Idle, asked_at: 1 });
        sleeping.workspace.expires_at = Some(NOW);
        for change in [stop(false, None), Change::Request(Request::Expire)] {
            let t = apply(&sleeping, change).unwrap();
            assert_eq!(t.workspace.sleep, None);
            let refused = apply(&after(&t), Change::Request(Request::Wake { cause: WakeCause::Exec })).unwrap_err();
            assert!(matches!(refused, Rejection::Refused(Refusal { code: ConflictCode::NotSleeping, .. })));
        }
        let plain = stored(S::Ready, D::Running, S::Ready, true, false);
        let refused = apply(&plain, Change::Request(Request::Sleep { reason: SleepReason::Requested })).unwrap_err();
        assert!(matches!(refused, Rejection::Refused(Refusal { code: ConflictCode::SleepUnsupported, .. })));
    }

    #[test]
    fn a_create_makes_a_queued_workspace_and_launch_and_records_both() {
        let asked = Asked {
            workspace_id: "ws_1".into(),
            run_id: "run_1".into(),
            owner: "alice".into(),
            name: "box".into(),
            registry_id: "local".into(),
            repository: "busybox".into(),
            tag: "1".into(),
            spec: crate::spec::Spec::default(),
            launch_id: Some("launch-a".into()),
            idempotency_key: None,
            expires_at: Some(9_000),
        };
        let Created { workspace, run, events } = create(asked.clone(), Some("then".into()), 7);
        assert_eq!((workspace.status, workspace.desired_state), (S::Queued, D::Running));
        assert_eq!(workspace.current_run_id.as_deref(), Some("run_1"));
        assert_eq!((workspace.created_at, workspace.expires_at), (7, Some(9_000)));
        assert_eq!((run.status, run.relation, run.trigger_type), (S::Queued, RunRelation::Launch, TriggerType::Api));
        assert_eq!(run.launch(), "launch-a");
        let kinds: Vec<E> = events.iter().map(|e| e.event_type).collect();
        assert_eq!(kinds, [E::WorkspaceCreated, E::AttemptQueued]);
        assert_eq!(events[0].attempt_id, None);
        assert_eq!(events[0].data.as_ref().unwrap()["repository"], "busybox");
        assert_eq!(events[0].data.as_ref().unwrap()["expiresAt"], "then");
        assert_eq!(events[1].attempt_id.as_deref(), Some("run_1"));
        let queued = events[1].data.as_ref().unwrap();
        assert_eq!((queued["relation"].as_str(), queued["triggerType"].as_str()), (Some("launch"), Some("api")));
        assert_eq!(queued["launchId"], "launch-a");
        let plain = create(Asked { launch_id: None, ..asked }, None, 7);
        assert!(plain.events[1].data.as_ref().unwrap().get("launchId").is_none());
        assert_eq!(plain.run.launch(), "run_1");
    }

    #[test]
    fn recovery_and_expiry_requests() {
        let mut retained = stored(S::Retained, D::Stopped, S::Retained, true, true);
        let retention = Retention {
            since: 1,
            reason: "r".into(),
            recoverable: true,
            attempts: 2,
            next_recovery_at: Some(50_000),
            last_error: None,
        };
        retained.drain = Some(Drain { retention: Some(retention), ..Drain::new(&"cur".into(), &"ws".into()) });
        let t = apply(&retained, Change::Request(Request::Recover)).unwrap();
        assert_eq!(t.answer, Answer::Recover { recoverable: Some(true) });
        assert_eq!(t.drain.unwrap().retention.unwrap().next_recovery_at, Some(NOW));
        assert!(t.wake);
        let ready = stored(S::Ready, D::Running, S::Ready, true, true);
        let t = apply(&ready, Change::Request(Request::Recover)).unwrap();
        assert_eq!(t.answer, Answer::Recover { recoverable: None });
        assert!(!t.wake);

        let mut expiring = ready.clone();
        expiring.workspace.expires_at = Some(NOW);
        let t = apply(&expiring, Change::Request(Request::Expire)).unwrap();
        assert_eq!((t.workspace.desired_state, t.wake), (D::Stopped, true));
        expiring.workspace.expires_at = Some(NOW + 1);
        let t = apply(&expiring, Change::Request(Request::Expire)).unwrap();
        assert_eq!((t.workspace.desired_state, t.wake), (D::Running, false), "not due yet");
    }

    #[test]
    fn a_host_that_goes_away_keeps_what_may_be_unsaved_and_adopts_it_back() {
        let unreachable = || outcome(Outcome::HostUnreachable { host: "h1".into() });
        // A capture-sourced executor is retained, with the host as its reason.
        let t = apply(&stored(S::Ready, D::Running, S::Ready, true, true), unreachable()).unwrap();
        let run = t.run.clone().unwrap();
        assert_eq!((t.workspace.status, run.status, run.runtime_removed_at), (S::Retained, S::Retained, None));
        let retention = t.drain.clone().unwrap().retention.unwrap();
        assert_eq!((retention.reason.as_str(), retention.recoverable), (HOST_UNREACHABLE, false));
        assert_eq!(retention.next_recovery_at, None, "never relaunched while the host may come back");
        assert!(t.wake && unreachable_with_host(&run));
        // Back, and running as before: ready again, retention over.
        let mut back = stored(S::Retained, D::Running, S::Retained, true, true);
        back.run = t.run.clone();
        back.drain = t.drain.clone();
        let t = apply(&back, outcome(Outcome::Readopted)).unwrap();
        let run = t.run.clone().unwrap();
        assert_eq!((t.workspace.status, run.status, run.error), (S::Ready, S::Ready, None));
        assert_eq!(t.drain.unwrap().retention, None);
        assert_eq!(t.events.last().unwrap().event_type, E::RuntimeReady);
        // Retained again for what it holds once it ended: the host's mark goes.
        let t = apply(&back, outcome(retained())).unwrap();
        assert!(!unreachable_with_host(t.run.as_ref().unwrap()));

        // Any other executor fails with the host's code, and is not retried.
        let t = apply(&stored(S::Ready, D::Running, S::Ready, true, false), unreachable()).unwrap();
        let run = t.run.clone().unwrap();
        assert_eq!((t.workspace.status, run.status, t.queued_run), (S::Failed, S::Failed, None));
        assert_eq!(run.error.unwrap().code.as_deref(), Some(HOST_UNREACHABLE));
        // Nothing launched, or nothing left on the runtime: nothing to mark.
        for s in [
            stored(S::Queued, D::Running, S::Queued, false, true),
            stored(S::Stopped, D::Stopped, S::Stopped, true, true),
        ] {
            let t = apply(&s, unreachable()).unwrap();
            assert_eq!((t.run, t.workspace), (s.run, s.workspace));
        }
        // Readopting an executor that was never written off changes nothing.
        let ready = stored(S::Ready, D::Running, S::Ready, true, true);
        assert_eq!(apply(&ready, outcome(Outcome::Readopted)).unwrap().run, ready.run);

        // Declared lost: gone with its disk, failed as executor-lost.
        let t = apply(&back, outcome(Outcome::HostLost { host: "h1".into(), by: "ops".into() })).unwrap();
        let run = t.run.unwrap();
        assert!(run.runtime_removed_at.is_some());
        assert_eq!((run.status, run.error.unwrap().code.as_deref()), (S::Failed, Some("executor-lost")));
        assert_eq!(t.workspace.status, S::Failed);
    }

    fn every_change() -> Vec<Change> {
        let mut changes: Vec<Change> = [
            launched(),
            Outcome::Ready,
            failed(true),
            failed(false),
            Outcome::Removed,
            Outcome::Cancelled,
            retained(),
            observed(Ds::Saved, true),
            observed(Ds::Kept, false),
            observed(Ds::Draining, false),
            Outcome::StopFailed { error: "e".into() },
            Outcome::RecoveryAttempted { error: None, next_at: NOW + 5 },
            Outcome::Lost { reason: "gone".into() },
            Outcome::PreservationBegun,
            Outcome::Readopted,
            Outcome::HostUnreachable { host: "h".into() },
            Outcome::HostLost { host: "h".into(), by: "ops".into() },
        ]
        .into_iter()
        .map(Change::Outcome)
        .collect();
        changes.extend([stop(false, None), stop(true, None), stop(false, Some(5)), end()]);
        changes.extend([Request::Restart, Request::Recover, Request::Expire].map(Change::Request));
        changes
    }

    /// Every change from every state: the rules every next state keeps.
    #[test]
    fn every_change_from_every_state_keeps_the_rules() {
        for &status in S::ALL {
            for &desired in D::ALL {
                for &run_status in S::ALL {
                    for launched in [false, true] {
                        for capture in [false, true] {
                            let s = stored(status, desired, run_status, launched, capture);
                            for change in every_change() {
                                let name = format!(
                                    "{change:?} from {status}/{desired}, run {run_status}, launched {launched}, capture {capture}"
                                );
                                let Ok(t) = apply(&s, change.clone()) else { continue };
                                assert_eq!(apply(&s, change.clone()).ok(), Some(t.clone()), "{name}: deterministic");
                                let finished = t.workspace.status.is_finished();
                                if t.workspace.status != s.workspace.status {
                                    assert_eq!(t.workspace.finished_at.is_some(), finished, "{name}: finish time");
                                }
                                // Only a stop, a broker's end, an expiry or a
                                // preservation asks for a stop; only a restart
                                // asks to run again.
                                if t.workspace.desired_state != s.workspace.desired_state {
                                    let asks_stop = matches!(
                                        &change,
                                        Change::Request(Request::Stop { .. } | Request::End { .. } | Request::Expire)
                                            | Change::Outcome(Outcome::PreservationBegun)
                                    );
                                    let asks_run = matches!(&change, Change::Request(Request::Restart));
                                    assert!(asks_stop || asks_run, "{name}: desired state moved");
                                }
                                // A request never changes the run itself.
                                if let Change::Request(_) = &change {
                                    let before = s.run.as_ref().map(|r| (r.status, r.runtime_removed_at));
                                    let after = t.run.as_ref().map(|r| (r.status, r.runtime_removed_at));
                                    assert_eq!(before, after, "{name}: a request moved the run");
                                }
                                // Every event names the run it is about.
                                let runs = [t.run.as_ref(), t.queued_run.as_ref()];
                                for event in &t.events {
                                    let named = runs.iter().flatten().any(|r| Some(&r.id) == event.attempt_id.as_ref());
                                    assert!(named, "{name}: {:?} names no run of the change", event.event_type);
                                }
                                // The runtime is gone only where the worker said so.
                                let removed = t.run.as_ref().is_some_and(|r| r.runtime_removed_at.is_some());
                                if removed {
                                    assert!(
                                        matches!(
                                            &change,
                                            Change::Outcome(
                                                Outcome::Removed | Outcome::Lost { .. } | Outcome::HostLost { .. }
                                            )
                                        ),
                                        "{name}: removed without a removal"
                                    );
                                }
                                // A retained run leaves retention only by its runtime going.
                                let was_retained = run_status == S::Retained;
                                let still = t.run.as_ref().is_some_and(|r| r.status == S::Retained);
                                if was_retained && !still {
                                    assert!(
                                        removed
                                            || matches!(
                                                &change,
                                                Change::Outcome(
                                                    Outcome::Launched { .. }
                                                        | Outcome::Ready
                                                        | Outcome::Failed { .. }
                                                        | Outcome::Cancelled
                                                        | Outcome::Readopted
                                                )
                                            ),
                                        "{name}: retention ended with the runtime in place"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
