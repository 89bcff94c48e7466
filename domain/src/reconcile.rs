//! The one decision of a reconcile pass: given what is stored about a
//! workspace and what was just observed of its executor, which single
//! action comes next. Pure: no I/O, no clock but the `now` it is given.

use sluice_protocol::attest;
use sluice_protocol::capture::{CaptureStatus, IncompleteReason};

use crate::drain::{DrainObservation, DrainProgress, Retention};
use crate::ids::RunId;
use crate::model::{DesiredState, DrainState, Run, RunError, Workspace, WorkspaceStatus};
use crate::transition::unreachable_with_host;

/// Everything stored that a reconcile pass of one workspace decides from.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconcileState {
    pub workspace: Workspace,
    pub current_run: Option<Run>,
    /// Earlier runs whose runtime resource may still exist.
    pub stale_runs: Vec<Run>,
    /// Whether the executor may hold work that must be saved before its disk
    /// goes (the workspace was given a capture token).
    pub has_capture_source: bool,
    /// The current run's drain record (capture-sourced workspaces).
    pub drain: Option<crate::drain::Drain>,
    /// Every report read from the current run's executor.
    pub reports: Vec<sluice_protocol::attest::Report>,
    /// The current run's newest attestation still standing as accepted.
    pub attestation: Option<crate::drain::StoredAttestation>,
    /// The run that holds the capture session's lease now (capture-sourced
    /// workspaces): a newer executor on the session, or this one.
    pub session_holder: Option<RunId>,
    /// The newest session epoch the current run's executor claimed.
    pub claimed_epoch: Option<u64>,
}

/// What the store knows of the run a labelled runtime resource names: the
/// facts the orphan sweep's verdict is made from (see the worker's
/// `decide::orphan_verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceFacts {
    /// The run's own status.
    pub status: WorkspaceStatus,
    /// Whether the run is its workspace's current run.
    pub is_current: bool,
    /// Whether the run recorded a runtime resource.
    pub recorded: bool,
    /// Whether that resource was recorded removed.
    pub removed: bool,
    /// Whether the workspace's executors may hold work only capture can
    /// prove saved (a capture-sourced workspace).
    pub capture_sourced: bool,
}

/// What the pass saw of the current run's executor before deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// The current run has no runtime resource on record (or it was removed),
    /// so nothing was asked.
    NotLaunched,
    /// The runtime knows no such resource.
    Absent,
    /// The executor runs; whether its daemon answered `health`, and whether
    /// this worker holds its watch stream open (then its daemon's end is
    /// heard at once, and the timed look is only the slow safety sweep).
    Running { daemon_healthy: bool, watched: bool },
    /// The executor ended.
    Exited,
    /// The runtime could not be asked; try again later.
    Unknown,
}

/// Limits and cadences the decision applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How long a launched executor's daemon may take to answer.
    pub ready_timeout_ms: i64,
    /// How many launch attempts a workspace gets (the first plus retries).
    pub max_launch_attempts: i64,
    /// How soon to look again at an executor that is starting.
    pub starting_poll_ms: i64,
    /// How often to look at a ready executor that is not watched.
    pub watch_poll_ms: i64,
    /// How often to look at a watched ready executor anyway: the safety
    /// sweep, for what its watch cannot tell (a daemon hung but alive).
    pub sweep_ms: i64,
    /// How soon to look again at a drain whose queue moves.
    pub drain_poll_ms: i64,
    /// How soon to look again at a drain that is kept.
    pub kept_poll_ms: i64,
    /// The first pause before a retained executor's recovery, doubled per
    /// attempt up to `recovery_cap_ms`.
    pub recovery_base_ms: i64,
    pub recovery_cap_ms: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            ready_timeout_ms: 60_000,
            max_launch_attempts: 3,
            starting_poll_ms: 100,
            watch_poll_ms: 10_000,
            sweep_ms: 5 * 60_000,
            drain_poll_ms: 500,
            kept_poll_ms: 5_000,
            recovery_base_ms: 30_000,
            recovery_cap_ms: 30 * 60_000,
        }
    }
}

impl Policy {
    /// The pause after recovery attempt number `attempts` (1 for the first).
    pub fn recovery_backoff(&self, attempts: i64) -> i64 {
        let doubled = self.recovery_base_ms.saturating_mul(1i64 << attempts.clamp(0, 20));
        doubled.min(self.recovery_cap_ms).max(self.recovery_base_ms.min(self.recovery_cap_ms))
    }
}

/// The one thing a pass does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create (or adopt) the run's executor.
    Launch { run_id: RunId },
    /// The run's daemon answered: record it ready.
    RecordReady { run_id: RunId },
    /// The run failed; queue a retry run if `retry`.
    Fail { run_id: RunId, error: RunError, retry: bool },
    /// Remove the run's runtime resource (it holds nothing to save).
    Remove { run_id: RunId },
    /// Keep the run's executor and its disk: its work is not confirmed saved.
    Retain { run_id: RunId, reason: String },
    /// The run never launched and the workspace was asked to stop.
    Cancel { run_id: RunId },
    /// Ask the capture-sourced run's running executor for its FINAL flush
    /// (or how the one under way goes) and record what it answers.
    Drain { run_id: RunId },
    /// Start the retained executor again on its own disk.
    Recover { run_id: RunId },
    /// A recovery is due but must not run now (`reason`): count the attempt
    /// and look again after the backoff.
    HoldRecovery { run_id: RunId, reason: String },
    /// The executor is gone with its disk: nothing is left to save.
    Lose { run_id: RunId, reason: String },
    /// The runtime's deadline is near: begin the final drain now.
    Preserve { run_id: RunId },
    /// Its host is back and the executor runs as before: ready again.
    Readopt { run_id: RunId },
    /// Nothing to change now; look again at `at`.
    Wait { at: i64 },
    /// Nothing left to do until someone asks for something.
    Done,
}

/// Whether a failed launch of `run` gets another attempt.
pub fn retry_allowed(run: &Run, desired: DesiredState, policy: &Policy) -> bool {
    desired == DesiredState::Running && run.launch_attempt < policy.max_launch_attempts
}

fn has_live_runtime(run: &Run) -> bool {
    run.runtime.is_some() && run.runtime_removed_at.is_none()
}

/// The next action and why it was chosen (for logs and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    pub reason: &'static str,
}

fn because(action: Action, reason: &'static str) -> Decision {
    Decision { action, reason }
}

/// Whether the stored attestation of `run` still holds against every
/// report stored of its executor.
pub fn attestation_holds(state: &ReconcileState, run: &Run) -> bool {
    let Some(stored) = &state.attestation else { return false };
    let evidence = crate::drain::Evidence::of(&state.reports, state.claimed_epoch, state.drain.as_ref());
    stored.run_id == run.id && crate::drain::weigh(&stored.attestation, run, evidence).is_ok()
}

/// The earlier run whose executor a pass acts on before the current run:
/// the oldest one still on its runtime and not retained already.
pub fn first_stale_to_act_on(state: &ReconcileState) -> Option<&Run> {
    state.stale_runs.iter().find(|r| has_live_runtime(r) && r.status != WorkspaceStatus::Retained)
}

/// The run a pass acts on next, whose host's workers run it (the store's
/// job claim mirrors this choice).
pub fn run_acted_on(state: &ReconcileState) -> Option<&Run> {
    first_stale_to_act_on(state).or(state.current_run.as_ref())
}

/// The host whose workers take the workspace's next pass: that of the run
/// it acts on, while its executor is not gone from its runtime; `None` (any
/// host) before the run is placed or once its executor is gone. The store
/// claims jobs by this rule written in SQL (`JOB_HOST`), and its suite
/// holds that SQL to this function.
pub fn job_host(state: &ReconcileState) -> Option<&str> {
    run_acted_on(state).filter(|r| r.runtime_removed_at.is_none()).and_then(|r| r.host.as_deref())
}

/// A workspace's stored state for unit tests of policy: its current run
/// `cur` in the workspace's status, with or without a runtime resource.
#[cfg(test)]
pub(crate) fn test_state(
    status: crate::model::WorkspaceStatus,
    desired: crate::model::DesiredState,
    runtime: bool,
    capture: bool,
) -> ReconcileState {
    ReconcileState {
        workspace: crate::testing::workspace(status, desired),
        current_run: Some(crate::testing::run("cur", status, runtime, false)),
        stale_runs: Vec::new(),
        has_capture_source: capture,
        drain: None,
        reports: Vec::new(),
        attestation: None,
        session_holder: None,
        claimed_epoch: None,
    }
}

/// Decides the next action for one workspace.
pub fn decide(state: &ReconcileState, observation: &Observation, now: i64, policy: &Policy) -> Decision {
    let capture = state.has_capture_source;
    let desired = state.workspace.desired_state;

    // Executors of earlier runs go first: a restart's old executor must not
    // outlive the switch. One that may hold unsaved work is kept instead.
    if let Some(stale) = first_stale_to_act_on(state) {
        let run_id = stale.id.clone();
        if !capture {
            return because(Action::Remove { run_id }, "an earlier run's executor is still there");
        }
        let reason = "an earlier executor may hold unsaved work";
        return because(Action::Retain { run_id, reason: reason.into() }, reason);
    }

    let Some(run) = &state.current_run else { return because(Action::Done, "the workspace has no run") };
    let run_id = run.id.clone();
    let live = has_live_runtime(run);
    let ended = matches!(observation, Observation::Exited | Observation::Absent);
    let retain =
        |run_id: RunId, reason: &'static str| because(Action::Retain { run_id, reason: reason.into() }, reason);

    if live && unreachable_with_host(run) {
        let discarded = state.drain.as_ref().is_some_and(|d| d.discard.is_some());
        match observation {
            Observation::Running { daemon_healthy: true, .. } if desired == DesiredState::Running && !discarded => {
                return because(Action::Readopt { run_id }, "its host is back and the executor runs");
            }
            Observation::Unknown | Observation::NotLaunched => {
                return because(Action::Wait { at: now + policy.kept_poll_ms }, "its host is not back yet");
            }
            Observation::Exited if capture => {
                return retain(run_id, "the executor ended while its host was unreachable");
            }
            // Otherwise as any retained or failed executor: drained,
            // removed, or written off once it is gone.
            _ => {}
        }
    }

    if capture && live {
        let discarded = state.drain.as_ref().is_some_and(|d| d.discard.is_some());
        let ending = desired == DesiredState::Stopped
            || discarded
            || !matches!(run.status, WorkspaceStatus::Queued | WorkspaceStatus::Running | WorkspaceStatus::Ready);
        if ending {
            return drain_step(state, run, observation, now, policy);
        }
        let preservation = state.drain.as_ref().and_then(|d| d.preservation_starts_at);
        if preservation.is_some_and(|at| now >= at) && !ended {
            return because(Action::Preserve { run_id }, "the runtime's deadline is near: drain ahead of it");
        }
    }

    match run.status {
        WorkspaceStatus::Queued => match desired {
            // A run placed on a host may have an executor that its launch
            // made and never recorded (the worker died mid-launch): launching
            // again adopts it, and the next pass stops it like any other.
            DesiredState::Stopped if !live && run.host.is_some() => {
                because(Action::Launch { run_id }, "stop asked after a launch began: adopt what it made, then stop it")
            }
            DesiredState::Stopped if !live => because(Action::Cancel { run_id }, "stop asked before any launch"),
            DesiredState::Stopped => because(Action::Remove { run_id }, "stop asked"),
            DesiredState::Running => because(Action::Launch { run_id }, "the run is queued"),
        },
        WorkspaceStatus::Running | WorkspaceStatus::Ready => {
            if desired == DesiredState::Stopped && capture {
                // Launched, yet no executor on record: whatever the runtime
                // has of it is kept (the orphan sweep reports it).
                let error = RunError::coded("the executor's record was lost", "runtime-lost");
                return because(
                    Action::Fail { run_id, error, retry: false },
                    "a launched run has no executor on record",
                );
            }
            if desired == DesiredState::Stopped {
                return because(Action::Remove { run_id }, "stop asked");
            }
            match observation {
                Observation::Unknown => {
                    because(Action::Wait { at: now + policy.starting_poll_ms.max(1_000) }, "the runtime did not answer")
                }
                Observation::NotLaunched if capture && live => {
                    because(Action::Wait { at: now + policy.kept_poll_ms }, "the executor on record was not looked at")
                }
                Observation::NotLaunched => because(
                    Action::Fail {
                        run_id,
                        error: RunError::coded("the executor's record was lost", "runtime-lost"),
                        retry: false,
                    },
                    "a launched run has no executor on record",
                ),
                _ if ended && capture && live => retain(run_id, "the executor ended with work not confirmed saved"),
                _ if ended => {
                    let retry = run.status == WorkspaceStatus::Running && retry_allowed(run, desired, policy);
                    let error = RunError::coded("the executor ended", "executor-exited");
                    because(Action::Fail { run_id, error, retry }, "the executor ended")
                }
                Observation::Running { daemon_healthy: true, .. } if run.status == WorkspaceStatus::Running => {
                    because(Action::RecordReady { run_id }, "the daemon answered")
                }
                Observation::Running { daemon_healthy: false, .. } if run.status == WorkspaceStatus::Running => {
                    let started = run.started_at.unwrap_or(run.updated_at);
                    if now - started <= policy.ready_timeout_ms {
                        because(Action::Wait { at: now + policy.starting_poll_ms }, "the daemon is starting")
                    } else if capture && live {
                        // It may have restored or taken work already.
                        retain(run_id, "the capture launch failed after it started (the daemon did not answer in time)")
                    } else {
                        let retry = retry_allowed(run, desired, policy);
                        let error =
                            RunError::coded("the executor's daemon did not answer in time", "daemon-unreachable");
                        because(Action::Fail { run_id, error, retry }, "the daemon did not answer in time")
                    }
                }
                Observation::Running { daemon_healthy: false, .. } => {
                    // Its watch closing brought this pass, maybe before the
                    // runtime saw the executor end; or it hangs: soon again.
                    let at = next_look(state, false, now, policy).min(now + policy.starting_poll_ms.max(1_000));
                    because(Action::Wait { at }, "a ready executor's daemon does not answer")
                }
                _ => {
                    let watched = matches!(observation, Observation::Running { watched: true, .. });
                    because(Action::Wait { at: next_look(state, watched, now, policy) }, "watching a ready executor")
                }
            }
        }
        WorkspaceStatus::Failed | WorkspaceStatus::Stopped | WorkspaceStatus::Cancelled => {
            if live {
                because(Action::Remove { run_id }, "a finished run's executor is still there")
            } else {
                because(Action::Done, "the run is finished and nothing of it remains")
            }
        }
        WorkspaceStatus::Retained => because(Action::Done, "retained, and nothing of it remains on its runtime"),
    }
}

/// When a ready executor is looked at next: on the watch poll, or on the
/// slow sweep while its watch is open (its end is heard at once), and
/// never later than its planned preservation drain or its runtime's
/// deadline (no daemon says when those come).
pub fn next_look(state: &ReconcileState, watched: bool, now: i64, policy: &Policy) -> i64 {
    let at = now + if watched { policy.sweep_ms } else { policy.watch_poll_ms };
    let preservation = state.drain.as_ref().and_then(|d| d.preservation_starts_at).filter(|_| state.has_capture_source);
    let deadline = state.current_run.as_ref().and_then(|r| r.runtime.as_ref()).and_then(|r| r.deadline);
    preservation.into_iter().chain(deadline).fold(at, |at, due| due.clamp(now + 1, at))
}

/// When a pass that observed a drain in `state` looks again: at once when
/// the work is saved (the removal follows), soon while the queue moves, at
/// the kept cadence otherwise.
pub fn after_drain(state: DrainState, now: i64, policy: &Policy) -> i64 {
    match state {
        DrainState::Saved => now,
        DrainState::Draining => now + policy.drain_poll_ms,
        _ => now + policy.kept_poll_ms,
    }
}

/// How soon a `spec.readyCommand` that has not passed yet is run again.
pub const READY_COMMAND_PAUSE_MS: i64 = 250;

/// What one run of a workspace's `spec.readyCommand` means for its launch.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadyCheck {
    /// It passed: the workspace is ready.
    Ready,
    /// Not yet: run it again at this time.
    Again { at: i64 },
    /// It did not pass within the ready timeout: the launch failed, with
    /// the last answer in the error.
    Fail(RunError),
}

/// Judges one run of the ready command, launched at `started_at`:
/// `outcome` is its exit code, or why it could not run; `said` the tail of
/// what it printed.
pub fn ready_check(started_at: i64, now: i64, policy: &Policy, outcome: Result<i32, String>, said: &str) -> ReadyCheck {
    if outcome == Ok(0) {
        return ReadyCheck::Ready;
    }
    if now - started_at <= policy.ready_timeout_ms {
        return ReadyCheck::Again { at: now + READY_COMMAND_PAUSE_MS };
    }
    let last = match outcome {
        Ok(code) => format!("it last exited {code}"),
        Err(why) => format!("it last could not run: {why}"),
    };
    let said = said.trim();
    let said = if said.is_empty() { String::new() } else { format!(": {said}") };
    ReadyCheck::Fail(RunError::coded(
        format!("spec.readyCommand did not pass within {} s; {last}{said}", policy.ready_timeout_ms / 1000),
        "ready-command-failed",
    ))
}

/// What becomes of a removal the runtime failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailedRemoval {
    /// An executor holding captured work: recorded as a failed stop (the
    /// drain keeps it) and looked at again at the kept cadence, at `next`.
    StopFailed { next: i64 },
    /// Any other executor: the pass fails, and the job's retry tries again.
    Retry,
}

/// See [`FailedRemoval`].
pub fn failed_removal(has_capture_source: bool, now: i64, policy: &Policy) -> FailedRemoval {
    if has_capture_source {
        FailedRemoval::StopFailed { next: now + policy.kept_poll_ms }
    } else {
        FailedRemoval::Retry
    }
}

/// The drain of a capture-sourced run's executor that is ending (asked to
/// stop, discarded, retained, or finished): it goes only once its work is
/// saved (the daemon's complete FINAL flush), covered by an accepted
/// attestation after it ended, or discarded by the owner.
fn drain_step(state: &ReconcileState, run: &Run, observation: &Observation, now: i64, policy: &Policy) -> Decision {
    let run_id = run.id.clone();
    let drain = state.drain.as_ref();
    if drain.is_some_and(|d| d.discard.is_some()) {
        return because(Action::Remove { run_id }, "the owner discarded its unsaved work");
    }
    if drain.is_some_and(|d| d.final_complete) {
        return because(Action::Remove { run_id }, "its daemon reported the final flush complete");
    }
    match observation {
        Observation::Running { .. } => because(Action::Drain { run_id }, "the executor runs: drain it before it goes"),
        Observation::Exited | Observation::Absent if attestation_holds(state, run) => {
            because(Action::Remove { run_id }, "an accepted attestation covers the ended executor")
        }
        Observation::Absent => {
            let reason = "the executor is gone with its disk; what it had not saved is lost";
            because(Action::Lose { run_id, reason: reason.into() }, reason)
        }
        Observation::Exited if run.status != WorkspaceStatus::Retained => {
            let reason = "the executor ended with work not confirmed saved";
            because(Action::Retain { run_id, reason: reason.into() }, reason)
        }
        Observation::Exited => match drain.and_then(|d| d.retention.as_ref()) {
            Some(r) if !r.recoverable => {
                because(Action::Done, "retained: its runtime cannot restart it, so an operator recovers it")
            }
            Some(Retention { next_recovery_at: Some(at), .. }) if *at > now => {
                because(Action::Wait { at: *at }, "retained: the next recovery attempt is due later")
            }
            _ => match &state.session_holder {
                // Its daemon would claim the session again and fence the
                // newer executor that holds it, whose work goes on there.
                Some(holder) if *holder != run.id => {
                    let reason = format!(
                        "the capture session is held by a newer executor (run {holder}); recovering this one would \
                         fence it: discard this one, or stop that one first"
                    );
                    because(Action::HoldRecovery { run_id, reason }, "retained: the session moved on")
                }
                _ => because(Action::Recover { run_id }, "retained: a recovery attempt is due"),
            },
        },
        Observation::Unknown | Observation::NotLaunched => {
            because(Action::Wait { at: now + policy.kept_poll_ms }, "the runtime did not answer")
        }
    }
}

/// What a drain step heard from the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushAnswer {
    /// Its capture status, after (or during) the FINAL flush.
    Status(Box<CaptureStatus>),
    /// No answer in time, or no connection.
    Silent(String),
    /// It answered with a refusal.
    Refused(String),
}

/// Final-flush reasons that more time does not cure.
const STUCK_REASONS: &[IncompleteReason] = &[
    IncompleteReason::Unreadable,
    IncompleteReason::SnapshotFailed,
    IncompleteReason::ProcessesRemain,
    IncompleteReason::Fenced,
    IncompleteReason::Conflict,
    IncompleteReason::Internal,
];

/// Classifies a drain step's answer, given the queue as last observed:
/// saved, draining (the queue moves) or kept (and why).
pub fn drain_observation(answer: &FlushAnswer, previous: Option<&DrainProgress>) -> DrainObservation {
    let status = match answer {
        FlushAnswer::Silent(why) => {
            return DrainObservation {
                state: DrainState::Kept,
                detail: Some(format!("the daemon is silent while the executor runs: {why}")),
                report: None,
                progress: previous.cloned().unwrap_or_default(),
            };
        }
        FlushAnswer::Refused(why) => {
            return DrainObservation {
                state: DrainState::Kept,
                detail: Some(format!("the daemon refused the final flush: {why}")),
                report: None,
                progress: previous.cloned().unwrap_or_default(),
            };
        }
        FlushAnswer::Status(status) => status,
    };
    let progress = DrainProgress {
        pending: Some(status.pending as i64),
        pending_bytes: Some(status.pending_bytes.unwrap_or(status.staged_bytes) as i64),
        registered: Some(status.registered as i64),
        uploaded_bytes: Some(status.uploaded_bytes as i64),
    };
    let saved = status.complete == Some(true);
    let report = status.origin.clone().map(|origin| attest::Report { origin, saved });
    let reason = status.incomplete_reason.unwrap_or(IncompleteReason::NotFinal);
    let (state, detail) = if saved {
        (DrainState::Saved, None)
    } else if let Some(refused) = status.refused.as_ref().filter(|r| !r.is_empty()) {
        let classes: Vec<&str> = refused.iter().map(|c| c.as_str()).collect();
        (DrainState::Kept, Some(format!("the registrar refused class {} (quota)", classes.join(", "))))
    } else if STUCK_REASONS.contains(&reason) {
        let mut detail = format!("final not complete: {reason}");
        if let Some(paths) = status.unreadable_paths.as_ref().filter(|p| !p.is_empty()) {
            detail.push_str(&format!(" ({})", paths.join(", ")));
        }
        (DrainState::Kept, Some(detail))
    } else {
        let moved = match previous {
            None => true,
            Some(p) => {
                p.registered.is_none_or(|r| status.registered as i64 > r)
                    || p.uploaded_bytes.is_none_or(|u| status.uploaded_bytes as i64 > u)
                    || p.pending.is_some_and(|n| (status.pending as i64) < n)
            }
        };
        let pending = status.pending;
        // What shipping waits on (a full store, a store away), in the daemon's words.
        let cause = status.ship_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
        if moved {
            (DrainState::Draining, Some(format!("saving: {pending} captures left ({reason}){cause}")))
        } else {
            (DrainState::Kept, Some(format!("the queue stalled: {pending} captures left ({reason}){cause}")))
        }
    };
    // The daemon's words are the executor's: bounded before they are kept.
    let detail = detail.map(|d| if d.chars().count() > MAX_DETAIL { d.chars().take(MAX_DETAIL).collect() } else { d });
    DrainObservation { state, detail, report, progress }
}

/// The longest drain detail kept (it quotes the daemon).
const MAX_DETAIL: usize = 300;

/// A labelled runtime resource found on a runtime, as the orphan sweep
/// judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceVerdict {
    /// A live record owns it; its reconciler looks after it.
    Owned,
    /// Nothing stored needs it and it cannot hold unsaved work: remove it.
    Orphan,
    /// Nothing stored needs it but it may hold unsaved work: report, keep.
    OrphanKept,
}

/// Judges a resource by what the store knows of its run (`None`: nothing).
pub fn orphan_verdict(facts: Option<&ResourceFacts>) -> ResourceVerdict {
    let Some(facts) = facts else { return ResourceVerdict::Orphan };
    // A resource the run never recorded is still the run's while its launch
    // may be in flight (a worker died between making and recording it).
    let launching = facts.is_current && matches!(facts.status, WorkspaceStatus::Queued | WorkspaceStatus::Running);
    let live = !facts.removed && (facts.recorded || launching);
    match (live, facts.capture_sourced) {
        (true, _) => ResourceVerdict::Owned,
        (false, true) => ResourceVerdict::OrphanKept,
        (false, false) => ResourceVerdict::Orphan,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_ready_command_passes_or_is_tried_until_the_timeout() {
        let p = Policy::default();
        assert_eq!(ready_check(0, 10, &p, Ok(0), ""), ReadyCheck::Ready);
        assert_eq!(ready_check(0, 10, &p, Ok(1), ""), ReadyCheck::Again { at: 10 + READY_COMMAND_PAUSE_MS });
        assert_eq!(
            ready_check(0, 10, &p, Err("unreachable".into()), ""),
            ReadyCheck::Again { at: 10 + READY_COMMAND_PAUSE_MS }
        );
        match ready_check(0, p.ready_timeout_ms + 1, &p, Ok(3), " not yet\n") {
            ReadyCheck::Fail(error) => {
                assert_eq!(error.code.as_deref(), Some("ready-command-failed"));
                assert!(error.message.contains("exited 3: not yet"), "{}", error.message);
            }
            other => panic!("past the timeout the launch fails: {other:?}"),
        }
        assert_eq!(ready_check(0, p.ready_timeout_ms + 1, &p, Ok(0), ""), ReadyCheck::Ready, "late but passing");
    }

    use super::*;

    #[test]
    fn a_drain_observed_is_looked_at_again_by_its_state() {
        let policy = Policy::default();
        for (state, after) in [
            (DrainState::Saved, 0),
            (DrainState::Draining, policy.drain_poll_ms),
            (DrainState::StopFailed, policy.kept_poll_ms),
            (DrainState::Kept, policy.kept_poll_ms),
        ] {
            assert_eq!(after_drain(state, 1_000, &policy), 1_000 + after, "{state}");
        }
    }

    #[test]
    fn a_failed_removal_of_captured_work_is_a_failed_stop_and_any_other_a_retry() {
        let policy = Policy::default();
        assert_eq!(
            failed_removal(true, 1_000, &policy),
            FailedRemoval::StopFailed { next: 1_000 + policy.kept_poll_ms }
        );
        assert_eq!(failed_removal(false, 1_000, &policy), FailedRemoval::Retry);
    }
    use crate::drain::*;
    use crate::model::*;

    use crate::testing::run;

    use super::test_state as state;

    const OBSERVATIONS: [Observation; 7] = [
        Observation::NotLaunched,
        Observation::Absent,
        Observation::Running { daemon_healthy: true, watched: false },
        Observation::Running { daemon_healthy: true, watched: true },
        Observation::Running { daemon_healthy: false, watched: false },
        Observation::Exited,
        Observation::Unknown,
    ];

    const NOW: i64 = 2_000;

    fn drain(state: Option<DrainState>) -> Drain {
        Drain { state, ..Drain::new(&"cur".into(), &"ws".into()) }
    }

    fn retention(recoverable: bool, next: Option<i64>) -> Retention {
        Retention { since: 1, reason: "r".into(), recoverable, attempts: 0, next_recovery_at: next, last_error: None }
    }

    /// Every stored drain a pass can find: no record, each observed state,
    /// and each flag or schedule that changes a decision.
    fn drains() -> Vec<(&'static str, Option<Drain>)> {
        let mut all = vec![("none", None)];
        for &s in DrainState::ALL {
            all.push((s.as_str(), Some(drain(Some(s)))));
        }
        let discard = Discard { requested_by: "alice".into(), requested_at: 1 };
        all.push(("discard", Some(Drain { discard: Some(discard), ..drain(Some(DrainState::Kept)) })));
        all.push(("final-complete", Some(Drain { final_complete: true, ..drain(Some(DrainState::Saved)) })));
        let due = Drain { retention: Some(retention(true, Some(NOW))), ..drain(Some(DrainState::Gone)) };
        all.push(("retained-due", Some(due)));
        let later = Drain { retention: Some(retention(true, Some(NOW + 5))), ..drain(Some(DrainState::Gone)) };
        all.push(("retained-later", Some(later)));
        let stuck = Drain { retention: Some(retention(false, Some(NOW))), ..drain(Some(DrainState::Gone)) };
        all.push(("retained-unrecoverable", Some(stuck)));
        all.push(("preservation-due", Some(Drain { preservation_starts_at: Some(NOW), ..drain(None) })));
        all.push(("preservation-later", Some(Drain { preservation_starts_at: Some(NOW + 5), ..drain(None) })));
        all
    }

    fn origin(epoch: u64, observation: u64) -> sluice_protocol::Origin {
        sluice_protocol::Origin {
            epoch,
            launch: "cur".into(),
            boot_id: "b".into(),
            boot_generation: 1,
            observation,
            head_n: Some(5),
        }
    }

    fn attested(epoch: u64) -> StoredAttestation {
        StoredAttestation {
            id: "att".into(),
            run_id: "cur".into(),
            attestation: attest::Attestation {
                capture_n: 5,
                epoch,
                executor_id: "res".into(),
                launch_id: None,
                origin: Some(origin(epoch, 10)),
            },
            sealed_at: None,
            outcome: AttestationOutcome::Accepted,
            detail: None,
            attested_by: "alice".into(),
            attested_at: 1,
        }
    }

    /// No attestation, one that holds, and one a later report refutes.
    fn attestations() -> Vec<(&'static str, Option<StoredAttestation>, Vec<attest::Report>)> {
        let later_unsaved = attest::Report { origin: origin(1, 11), saved: false };
        vec![
            ("none", None, Vec::new()),
            ("holds", Some(attested(1)), vec![attest::Report { origin: origin(1, 9), saved: false }]),
            ("refuted", Some(attested(1)), vec![later_unsaved]),
        ]
    }

    /// Every status × observation × desired state × runtime on record ×
    /// capture source × stored drain × attestation: the rules that must
    /// hold whatever the combination.
    #[test]
    fn every_combination_keeps_the_invariants() {
        let policy = Policy::default();
        let mut seen = 0;
        for &status in WorkspaceStatus::ALL {
            for observation in &OBSERVATIONS {
                for &desired in DesiredState::ALL {
                    for runtime in [false, true] {
                        for capture in [false, true] {
                            for (drain_label, drain) in drains() {
                                for (attestation_label, attestation, reports) in attestations() {
                                    for host_gone in [false, true] {
                                        let mut s = state(status, desired, runtime, capture);
                                        s.drain = drain.clone();
                                        s.attestation = attestation.clone();
                                        s.reports = reports.clone();
                                        if host_gone {
                                            s.current_run.as_mut().unwrap().error = Some(RunError {
                                                message: "gone".into(),
                                                code: Some(crate::transition::HOST_UNREACHABLE.into()),
                                            });
                                        }
                                        let decision = decide(&s, observation, NOW, &policy);
                                        assert!(!decision.reason.is_empty());
                                        let label = format!(
                                            "{status} {observation:?} {desired} runtime={runtime} capture={capture} \
                                             drain={drain_label} attestation={attestation_label} \
                                             host_gone={host_gone}: {:?}",
                                            decision.action
                                        );
                                        check(&s, observation, &decision.action, &label);
                                        seen += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(seen, 7 * OBSERVATIONS.len() * 2 * 2 * 2 * 15 * 3 * 2);
    }

    fn check(s: &ReconcileState, observation: &Observation, action: &Action, label: &str) {
        let run = s.current_run.as_ref().unwrap();
        let (status, desired, capture) = (run.status, s.workspace.desired_state, s.has_capture_source);
        let runtime = run.runtime.is_some();
        let drain = s.drain.as_ref();
        let discarded = drain.is_some_and(|d| d.discard.is_some());
        let final_complete = drain.is_some_and(|d| d.final_complete);
        let ended = matches!(observation, Observation::Exited | Observation::Absent);
        let running = matches!(observation, Observation::Running { .. });
        let healthy = matches!(observation, Observation::Running { daemon_healthy: true, .. });
        match action {
            Action::Readopt { .. } => {
                assert!(unreachable_with_host(run) && runtime, "only what its host took away is adopted: {label}");
                assert!(healthy, "{label}");
                assert!(desired == DesiredState::Running && !discarded, "{label}");
            }
            Action::Remove { .. } => {
                if capture {
                    assert!(runtime, "{label}");
                    assert!(
                        discarded || final_complete || (ended && attestation_holds(s, run)),
                        "never remove what may hold unsaved work: {label}"
                    );
                }
                let launched = matches!(status, WorkspaceStatus::Running | WorkspaceStatus::Ready);
                assert!(runtime || launched, "nothing to remove: {label}");
            }
            Action::Drain { .. } => {
                assert!(capture && runtime && running, "only a running executor is drained: {label}");
                assert!(!discarded && !final_complete, "{label}");
            }
            Action::Recover { .. } => {
                assert!(capture && status == WorkspaceStatus::Retained, "{label}");
                assert_eq!(*observation, Observation::Exited, "{label}");
                let r = drain.and_then(|d| d.retention.as_ref());
                assert!(r.is_none_or(|r| r.recoverable && r.next_recovery_at.is_none_or(|at| at <= NOW)), "{label}");
            }
            Action::HoldRecovery { .. } => {
                assert!(capture && status == WorkspaceStatus::Retained, "{label}");
                assert!(s.session_holder.as_ref().is_some_and(|h| *h != run.id), "{label}");
            }
            Action::Lose { .. } => {
                assert!(capture && *observation == Observation::Absent, "{label}");
                assert!(!attestation_holds(s, run) && !discarded && !final_complete, "{label}");
            }
            Action::Preserve { .. } => {
                assert!(capture && desired == DesiredState::Running && !ended, "{label}");
                assert!(drain.and_then(|d| d.preservation_starts_at).is_some_and(|at| at <= NOW), "{label}");
            }
            Action::Launch { .. } => {
                assert_eq!(status, WorkspaceStatus::Queued, "{label}");
                assert_eq!(desired, DesiredState::Running, "{label}");
            }
            Action::RecordReady { .. } => {
                assert_eq!(status, WorkspaceStatus::Running, "{label}");
                assert!(healthy, "{label}");
                assert_eq!(desired, DesiredState::Running, "{label}");
            }
            Action::Fail { retry, .. } => {
                assert!(matches!(status, WorkspaceStatus::Running | WorkspaceStatus::Ready), "{label}");
                assert!(!*retry || desired == DesiredState::Running, "{label}");
                assert!(!(capture && runtime), "a capture executor on record is drained or kept: {label}");
            }
            Action::Cancel { .. } => {
                assert_eq!((status, desired), (WorkspaceStatus::Queued, DesiredState::Stopped), "{label}");
                assert!(!runtime, "{label}");
            }
            Action::Retain { .. } => {
                assert!(capture && runtime, "{label}");
                assert!(!healthy, "{label}");
            }
            Action::Wait { at } => assert!(*at > NOW, "{label}"),
            Action::Done => assert!(
                !matches!(status, WorkspaceStatus::Queued | WorkspaceStatus::Running | WorkspaceStatus::Ready),
                "a live workspace is always looked at again: {label}"
            ),
        }
        if desired == DesiredState::Stopped {
            assert!(
                !matches!(action, Action::Launch { .. } | Action::RecordReady { .. }),
                "a stopping workspace never launches: {label}"
            );
        }
    }

    /// A capture-sourced executor asked to stop, for every stored drain
    /// state × every observation: what comes next.
    #[test]
    fn the_drain_table() {
        let p = Policy::default();
        for (label, drain) in drains() {
            for observation in &OBSERVATIONS {
                let mut s = state(WorkspaceStatus::Ready, DesiredState::Stopped, true, true);
                s.drain = drain.clone();
                let action = decide(&s, observation, NOW, &p).action;
                let d = drain.as_ref();
                let expected = if d.is_some_and(|d| d.discard.is_some() || d.final_complete) {
                    Action::Remove { run_id: "cur".into() }
                } else {
                    match observation {
                        Observation::Running { .. } => Action::Drain { run_id: "cur".into() },
                        Observation::Absent => Action::Lose {
                            run_id: "cur".into(),
                            reason: "the executor is gone with its disk; what it had not saved is lost".into(),
                        },
                        Observation::Exited => Action::Retain {
                            run_id: "cur".into(),
                            reason: "the executor ended with work not confirmed saved".into(),
                        },
                        Observation::Unknown | Observation::NotLaunched => Action::Wait { at: NOW + p.kept_poll_ms },
                    }
                };
                assert_eq!(action, expected, "drain={label} {observation:?}");

                // Retained: recovered when due, drained once running again.
                s.current_run.as_mut().unwrap().status = WorkspaceStatus::Retained;
                let action = decide(&s, observation, NOW, &p).action;
                if let (Observation::Exited, false) =
                    (observation, d.is_some_and(|d| d.discard.is_some() || d.final_complete))
                {
                    let expected = match d.and_then(|d| d.retention.as_ref()) {
                        Some(r) if !r.recoverable => Action::Done,
                        Some(Retention { next_recovery_at: Some(at), .. }) if *at > NOW => Action::Wait { at: *at },
                        _ => Action::Recover { run_id: "cur".into() },
                    };
                    assert_eq!(action, expected, "retained drain={label}");
                }
            }
        }
    }

    #[test]
    fn an_attestation_lets_only_an_ended_executor_go_and_a_later_report_revokes_it() {
        let p = Policy::default();
        for (label, attestation, reports) in attestations() {
            let mut s = state(WorkspaceStatus::Ready, DesiredState::Stopped, true, true);
            s.attestation = attestation;
            s.reports = reports;
            let running = decide(&s, &Observation::Running { daemon_healthy: true, watched: false }, NOW, &p).action;
            assert_eq!(running, Action::Drain { run_id: "cur".into() }, "never skips the drain: {label}");
            let ended = decide(&s, &Observation::Exited, NOW, &p).action;
            if label == "holds" {
                assert_eq!(ended, Action::Remove { run_id: "cur".into() });
            } else {
                assert!(matches!(ended, Action::Retain { .. }), "{label}: {ended:?}");
            }
        }
        let mut other = state(WorkspaceStatus::Ready, DesiredState::Stopped, true, true);
        other.attestation = Some(StoredAttestation { run_id: "old".into(), ..attested(1) });
        assert!(!attestation_holds(&other, other.current_run.as_ref().unwrap()), "another run's attestation");
    }

    /// A seal of an earlier boot does not cover an executor started again
    /// on its disk since (it claimed a newer epoch), even when nothing of
    /// its new boot was reported before it ended: it is kept.
    #[test]
    fn an_attestation_of_an_earlier_boot_does_not_cover_a_restarted_executor() {
        let p = Policy::default();
        let (label, attestation, reports) = attestations().into_iter().find(|(l, ..)| *l == "holds").unwrap();
        let mut s = state(WorkspaceStatus::Retained, DesiredState::Stopped, true, true);
        s.current_run.as_mut().unwrap().status = WorkspaceStatus::Retained;
        s.attestation = attestation;
        s.reports = reports;
        let epoch = s.attestation.as_ref().unwrap().attestation.epoch;
        s.claimed_epoch = Some(epoch);
        assert_eq!(
            decide(&s, &Observation::Exited, NOW, &p).action,
            Action::Remove { run_id: "cur".into() },
            "{label}"
        );
        s.claimed_epoch = Some(epoch + 1);
        let action = decide(&s, &Observation::Exited, NOW, &p).action;
        assert!(!matches!(action, Action::Remove { .. }), "kept: {action:?}");
        // A recovery was attempted, and its boot's claim never reached the
        // store: it may have written all the same.
        s.claimed_epoch = Some(epoch);
        let retention = Retention { attempts: 1, ..retention(true, None) };
        s.drain = Some(Drain { retention: Some(retention), ..drain(Some(DrainState::Gone)) });
        let action = decide(&s, &Observation::Exited, NOW, &p).action;
        assert!(!matches!(action, Action::Remove { .. }), "kept after a recovery: {action:?}");
    }

    fn status(complete: Option<bool>, reason: Option<IncompleteReason>) -> CaptureStatus {
        CaptureStatus {
            epoch: 1,
            pending: 2,
            registered: 3,
            uploaded_bytes: 100,
            complete,
            incomplete_reason: reason,
            origin: Some(origin(1, 4)),
            ..Default::default()
        }
    }

    /// Every kind of answer a drain step can get, first and again.
    #[test]
    fn drain_answers_are_classified() {
        let silent = drain_observation(&FlushAnswer::Silent("timed out".into()), None);
        assert_eq!(silent.state, DrainState::Kept);
        assert!(silent.detail.unwrap().contains("silent while the executor runs"));
        assert!(silent.report.is_none());
        let refused = drain_observation(&FlushAnswer::Refused("409: no".into()), None);
        assert_eq!(refused.state, DrainState::Kept);

        let saved = drain_observation(&FlushAnswer::Status(Box::new(status(Some(true), None))), None);
        assert_eq!((saved.state, saved.detail), (DrainState::Saved, None));
        assert!(saved.report.unwrap().saved);

        let mut quota = status(Some(false), Some(IncompleteReason::ShipFailed));
        quota.refused = Some(vec![sluice_protocol::capture::CaptureClass::Bulk]);
        let kept = drain_observation(&FlushAnswer::Status(Box::new(quota)), None);
        assert_eq!(kept.state, DrainState::Kept);
        assert!(kept.detail.unwrap().contains("refused class bulk"));

        for &reason in STUCK_REASONS {
            let mut answer = status(Some(false), Some(reason));
            answer.unreadable_paths = Some(vec!["x".repeat(1000)]);
            let kept = drain_observation(&FlushAnswer::Status(Box::new(answer)), None);
            assert_eq!(kept.state, DrainState::Kept, "{reason}");
            let detail = kept.detail.unwrap();
            assert!(detail.contains(reason.as_str()) && detail.chars().count() <= MAX_DETAIL, "{detail}");
            assert!(!kept.report.unwrap().saved);
        }
        for reason in [
            IncompleteReason::InProgress,
            IncompleteReason::Pending,
            IncompleteReason::Deadline,
            IncompleteReason::ShipFailed,
        ] {
            let answer = FlushAnswer::Status(Box::new(status(Some(false), Some(reason))));
            let first = drain_observation(&answer, None);
            assert_eq!(first.state, DrainState::Draining, "{reason}: the first look");
            let same = drain_observation(&answer, Some(&first.progress));
            assert_eq!(same.state, DrainState::Kept, "{reason}: nothing moved");
            assert!(same.detail.unwrap().contains("stalled"));
            let mut moved = status(Some(false), Some(reason));
            moved.uploaded_bytes += 1;
            let moving = drain_observation(&FlushAnswer::Status(Box::new(moved)), Some(&first.progress));
            assert_eq!(moving.state, DrainState::Draining, "{reason}: bytes moved");
        }

        let mut full = status(Some(false), Some(IncompleteReason::Pending));
        full.ship_error = Some("no space left in the object store".into());
        let answer = FlushAnswer::Status(Box::new(full));
        let first = drain_observation(&answer, None);
        let waiting = drain_observation(&answer, Some(&first.progress));
        assert_eq!(waiting.state, DrainState::Kept);
        assert_eq!(
            waiting.detail.as_deref(),
            Some("the queue stalled: 2 captures left (pending): no space left in the object store"),
            "the cause is named"
        );
    }

    #[test]
    fn a_recovery_never_takes_the_session_from_a_newer_executor() {
        let p = Policy::default();
        let mut s = state(WorkspaceStatus::Retained, DesiredState::Stopped, true, true);
        s.drain = Some(Drain { retention: Some(retention(true, Some(NOW))), ..drain(Some(DrainState::Gone)) });
        s.session_holder = Some("cur".into());
        assert_eq!(decide(&s, &Observation::Exited, NOW, &p).action, Action::Recover { run_id: "cur".into() });
        s.session_holder = Some("newer".into());
        match decide(&s, &Observation::Exited, NOW, &p).action {
            Action::HoldRecovery { reason, .. } => assert!(reason.contains("run newer"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn recovery_backs_off_up_to_its_cap() {
        let p = Policy::default();
        assert_eq!(p.recovery_backoff(0), p.recovery_base_ms);
        assert_eq!(p.recovery_backoff(1), 2 * p.recovery_base_ms);
        assert_eq!(p.recovery_backoff(60), p.recovery_cap_ms);
        let mut last = 0;
        for attempts in 0..30 {
            let pause = p.recovery_backoff(attempts);
            assert!(pause >= last && pause <= p.recovery_cap_ms);
            last = pause;
        }
    }

    #[test]
    fn the_lifecycle_path() {
        let p = Policy::default();
        let queued = state(WorkspaceStatus::Queued, DesiredState::Running, false, false);
        assert_eq!(decide(&queued, &Observation::NotLaunched, 0, &p).action, Action::Launch { run_id: "cur".into() });
        let starting = state(WorkspaceStatus::Running, DesiredState::Running, true, false);
        let healthy = Observation::Running { daemon_healthy: true, watched: false };
        assert_eq!(decide(&starting, &healthy, 0, &p).action, Action::RecordReady { run_id: "cur".into() });
        let unhealthy = Observation::Running { daemon_healthy: false, watched: false };
        assert_eq!(decide(&starting, &unhealthy, 2_000, &p).action, Action::Wait { at: 2_100 });
        match decide(&starting, &unhealthy, 1_000 + p.ready_timeout_ms + 1, &p).action {
            Action::Fail { error, retry: true, .. } => assert_eq!(error.code.as_deref(), Some("daemon-unreachable")),
            other => panic!("a daemon that never answers fails the launch: {other:?}"),
        }
        let ready = state(WorkspaceStatus::Ready, DesiredState::Running, true, false);
        assert_eq!(decide(&ready, &healthy, 0, &p).action, Action::Wait { at: p.watch_poll_ms });
        // A watched one is looked at on the slow safety sweep alone, but
        // never after its runtime's deadline.
        let watched = Observation::Running { daemon_healthy: true, watched: true };
        assert_eq!(decide(&ready, &watched, 0, &p).action, Action::Wait { at: p.sweep_ms });
        assert!(p.sweep_ms > p.watch_poll_ms);
        // One whose daemon stopped answering is looked at again within a second.
        assert_eq!(decide(&ready, &unhealthy, 0, &p).action, Action::Wait { at: 1_000 });
        let mut mortal = ready.clone();
        mortal.current_run.as_mut().unwrap().runtime.as_mut().unwrap().deadline = Some(60_000);
        assert_eq!(decide(&mortal, &watched, 0, &p).action, Action::Wait { at: 60_000 });
        assert_eq!(decide(&mortal, &watched, 70_000, &p).action, Action::Wait { at: 70_001 });
        match decide(&ready, &Observation::Exited, 0, &p).action {
            Action::Fail { retry: false, .. } => {}
            other => panic!("a ready executor that ends fails without a retry: {other:?}"),
        }
        let stopping = state(WorkspaceStatus::Ready, DesiredState::Stopped, true, false);
        assert_eq!(decide(&stopping, &healthy, 0, &p).action, Action::Remove { run_id: "cur".into() });
        let kept = state(WorkspaceStatus::Ready, DesiredState::Stopped, true, true);
        assert!(matches!(decide(&kept, &healthy, 0, &p).action, Action::Drain { .. }));
        let never_launched = state(WorkspaceStatus::Queued, DesiredState::Stopped, false, false);
        assert_eq!(
            decide(&never_launched, &Observation::NotLaunched, 0, &p).action,
            Action::Cancel { run_id: "cur".into() }
        );
        // Placed on a host, its launch may have made an executor it never
        // recorded: that one is adopted (and then stopped), never left.
        for capture in [false, true] {
            let mut placed = state(WorkspaceStatus::Queued, DesiredState::Stopped, false, capture);
            placed.current_run.as_mut().unwrap().host = Some("host-a".into());
            assert_eq!(
                decide(&placed, &Observation::NotLaunched, 0, &p).action,
                Action::Launch { run_id: "cur".into() },
                "capture {capture}"
            );
        }
        let mut stopped = state(WorkspaceStatus::Stopped, DesiredState::Stopped, true, false);
        stopped.current_run = Some(run("cur", WorkspaceStatus::Stopped, true, true));
        assert_eq!(decide(&stopped, &Observation::NotLaunched, 0, &p).action, Action::Done);
    }

    #[test]
    fn earlier_executors_are_removed_first_and_retries_run_out() {
        let p = Policy::default();
        let mut restarted = state(WorkspaceStatus::Queued, DesiredState::Running, false, false);
        restarted.stale_runs.push(run("old", WorkspaceStatus::Ready, true, false));
        assert_eq!(
            decide(&restarted, &Observation::NotLaunched, 0, &p).action,
            Action::Remove { run_id: "old".into() }
        );
        restarted.stale_runs[0].runtime_removed_at = Some(1);
        assert_eq!(
            decide(&restarted, &Observation::NotLaunched, 0, &p).action,
            Action::Launch { run_id: "cur".into() }
        );

        let mut last_try = state(WorkspaceStatus::Running, DesiredState::Running, true, false);
        last_try.current_run.as_mut().unwrap().launch_attempt = p.max_launch_attempts;
        assert!(matches!(decide(&last_try, &Observation::Exited, 0, &p).action, Action::Fail { retry: false, .. }));
        last_try.current_run.as_mut().unwrap().launch_attempt = 1;
        assert!(matches!(decide(&last_try, &Observation::Exited, 0, &p).action, Action::Fail { retry: true, .. }));
    }
}

#[cfg(test)]
mod orphan_tests {
    use super::*;

    /// Every combination of facts: a resource is removed only when no live
    /// record needs it and it cannot hold unsaved work.
    #[test]
    fn every_combination_of_facts_is_judged() {
        assert_eq!(orphan_verdict(None), ResourceVerdict::Orphan, "no record at all");
        for &status in WorkspaceStatus::ALL {
            for bits in 0..16u8 {
                let facts = ResourceFacts {
                    status,
                    is_current: bits & 1 != 0,
                    recorded: bits & 2 != 0,
                    removed: bits & 4 != 0,
                    capture_sourced: bits & 8 != 0,
                };
                let verdict = orphan_verdict(Some(&facts));
                let in_flight =
                    facts.is_current && matches!(status, WorkspaceStatus::Queued | WorkspaceStatus::Running);
                if !facts.removed && (facts.recorded || in_flight) {
                    assert_eq!(verdict, ResourceVerdict::Owned, "{facts:?}");
                }
                if verdict == ResourceVerdict::Orphan {
                    assert!(!facts.capture_sourced, "{facts:?}: may hold unsaved work, never removed");
                }
                if facts.removed {
                    assert_ne!(verdict, ResourceVerdict::Owned, "{facts:?}: a removed resource has no owner");
                }
            }
        }
    }
}
