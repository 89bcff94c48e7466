//! The one decision of a reconcile pass: given what is stored about a
//! workspace and what was just observed of its executor, which single
//! action comes next. Pure: no I/O, no clock but the `now` it is given.

use sluice_store::{DesiredState, ReconcileState, ResourceFacts, Run, RunError, WorkspaceStatus};

/// What the pass saw of the current run's executor before deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// The current run has no runtime resource on record (or it was removed),
    /// so nothing was asked.
    NotLaunched,
    /// The runtime knows no such resource.
    Absent,
    /// The executor runs; whether its daemon answered `health`.
    Running { daemon_healthy: bool },
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
    /// How often to look at a ready executor.
    pub watch_poll_ms: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy { ready_timeout_ms: 60_000, max_launch_attempts: 3, starting_poll_ms: 100, watch_poll_ms: 10_000 }
    }
}

/// The one thing a pass does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create (or adopt) the run's executor.
    Launch { run_id: String },
    /// The run's daemon answered: record it ready.
    RecordReady { run_id: String },
    /// The run failed; queue a retry run if `retry`.
    Fail { run_id: String, error: RunError, retry: bool },
    /// Remove the run's runtime resource (it holds nothing to save).
    Remove { run_id: String },
    /// Keep the run's executor and its disk: its work is not confirmed saved.
    Retain { run_id: String, reason: String },
    /// The run never launched and the workspace was asked to stop.
    Cancel { run_id: String },
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

fn error(message: &str, code: &str) -> RunError {
    RunError { message: message.to_owned(), code: Some(code.to_owned()) }
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

/// Decides the next action for one workspace.
pub fn decide(state: &ReconcileState, observation: &Observation, now: i64, policy: &Policy) -> Decision {
    let capture = state.has_capture_source;
    let desired = state.workspace.desired_state;

    // Executors of earlier runs go first: a restart's old executor must not
    // outlive the switch. One that may hold unsaved work is kept instead.
    if let Some(stale) = state.stale_runs.iter().find(|r| has_live_runtime(r)) {
        let run_id = stale.id.clone();
        if !capture {
            return because(Action::Remove { run_id }, "an earlier run's executor is still there");
        }
        if stale.status != WorkspaceStatus::Retained {
            let reason = "an earlier executor may hold unsaved work";
            return because(Action::Retain { run_id, reason: reason.into() }, reason);
        }
    }

    let Some(run) = &state.current_run else { return because(Action::Done, "the workspace has no run") };
    let run_id = run.id.clone();
    let live = has_live_runtime(run);
    let ended = matches!(observation, Observation::Exited | Observation::Absent);
    let retain =
        |run_id: String, reason: &'static str| because(Action::Retain { run_id, reason: reason.into() }, reason);

    match run.status {
        WorkspaceStatus::Queued => match desired {
            DesiredState::Stopped if !live => because(Action::Cancel { run_id }, "stop asked before any launch"),
            DesiredState::Stopped if !capture => because(Action::Remove { run_id }, "stop asked"),
            DesiredState::Stopped => retain(run_id, "its work is not confirmed saved"),
            DesiredState::Running => because(Action::Launch { run_id }, "the run is queued"),
        },
        WorkspaceStatus::Running | WorkspaceStatus::Ready => {
            if desired == DesiredState::Stopped {
                return if !capture {
                    because(Action::Remove { run_id }, "stop asked")
                } else {
                    retain(run_id, "its work is not confirmed saved (no capture drain)")
                };
            }
            match observation {
                Observation::Unknown => {
                    because(Action::Wait { at: now + policy.starting_poll_ms.max(1_000) }, "the runtime did not answer")
                }
                Observation::NotLaunched => because(
                    Action::Fail {
                        run_id,
                        error: error("the executor's record was lost", "runtime-lost"),
                        retry: false,
                    },
                    "a launched run has no executor on record",
                ),
                _ if ended && capture => retain(run_id, "the executor ended with work not confirmed saved"),
                _ if ended => {
                    let retry = run.status == WorkspaceStatus::Running && retry_allowed(run, desired, policy);
                    let error = error("the executor ended", "executor-exited");
                    because(Action::Fail { run_id, error, retry }, "the executor ended")
                }
                Observation::Running { daemon_healthy: true } if run.status == WorkspaceStatus::Running => {
                    because(Action::RecordReady { run_id }, "the daemon answered")
                }
                Observation::Running { daemon_healthy: false } if run.status == WorkspaceStatus::Running => {
                    let started = run.started_at.unwrap_or(run.updated_at);
                    if now - started > policy.ready_timeout_ms {
                        let retry = retry_allowed(run, desired, policy);
                        let error = error("the executor's daemon did not answer in time", "daemon-unreachable");
                        because(Action::Fail { run_id, error, retry }, "the daemon did not answer in time")
                    } else {
                        because(Action::Wait { at: now + policy.starting_poll_ms }, "the daemon is starting")
                    }
                }
                _ => because(Action::Wait { at: now + policy.watch_poll_ms }, "watching a ready executor"),
            }
        }
        WorkspaceStatus::Failed | WorkspaceStatus::Stopped | WorkspaceStatus::Cancelled => {
            if live && !capture {
                because(Action::Remove { run_id }, "a finished run's executor is still there")
            } else if live && run.status != WorkspaceStatus::Stopped {
                retain(run_id, "the executor ended with work not confirmed saved")
            } else {
                because(Action::Done, "the run is finished and nothing of it remains")
            }
        }
        WorkspaceStatus::Retained => because(Action::Done, "retained: only an operator's recovery changes it"),
    }
}

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
    use super::*;
    use serde_json::json;
    use sluice_store::*;

    fn run(id: &str, status: WorkspaceStatus, runtime: bool, removed: bool) -> Run {
        Run {
            id: id.into(),
            workspace_id: "ws".into(),
            relation: RunRelation::Launch,
            trigger_type: TriggerType::Api,
            trigger_ref: None,
            status,
            launch_id: None,
            spec: json!({}),
            runtime: runtime.then(|| RuntimeRecord {
                adapter: RuntimeAdapter::Local,
                resource_id: "res".into(),
                reference: "ref".into(),
                status: RuntimeStatus::Running,
                endpoint: None,
                deadline: None,
            }),
            published_image: None,
            error: None,
            queued_at: 0,
            created_at: 0,
            updated_at: 0,
            linked_at: 0,
            started_at: Some(1_000),
            finished_at: None,
            runtime_removed_at: removed.then_some(5),
            launch_attempt: 1,
        }
    }

    fn state(status: WorkspaceStatus, desired: DesiredState, runtime: bool, capture: bool) -> ReconcileState {
        ReconcileState {
            workspace: sluice_store::testing::workspace(status, desired),
            current_run: Some(run("cur", status, runtime, false)),
            stale_runs: Vec::new(),
            has_capture_source: capture,
        }
    }

    const OBSERVATIONS: [Observation; 6] = [
        Observation::NotLaunched,
        Observation::Absent,
        Observation::Running { daemon_healthy: true },
        Observation::Running { daemon_healthy: false },
        Observation::Exited,
        Observation::Unknown,
    ];

    /// Every status × observation × desired state × runtime on record ×
    /// capture source: the rules that must hold whatever the combination.
    #[test]
    fn every_combination_keeps_the_invariants() {
        let policy = Policy::default();
        let mut seen = 0;
        for &status in WorkspaceStatus::ALL {
            for observation in &OBSERVATIONS {
                for &desired in DesiredState::ALL {
                    for runtime in [false, true] {
                        for capture in [false, true] {
                            let s = state(status, desired, runtime, capture);
                            let decision = decide(&s, observation, 2_000, &policy);
                            assert!(!decision.reason.is_empty());
                            let action = decision.action;
                            let label = format!(
                                "{status} {observation:?} {desired} runtime={runtime} capture={capture}: {action:?}"
                            );
                            seen += 1;
                            match &action {
                                Action::Remove { .. } => {
                                    assert!(!capture, "never remove what may hold unsaved work: {label}");
                                    // A run that says it launched but lost its record is
                                    // removed by name, which settles it either way.
                                    let launched = matches!(status, WorkspaceStatus::Running | WorkspaceStatus::Ready);
                                    assert!(runtime || launched, "nothing to remove: {label}");
                                }
                                Action::Launch { .. } => {
                                    assert_eq!(status, WorkspaceStatus::Queued, "{label}");
                                    assert_eq!(desired, DesiredState::Running, "{label}");
                                }
                                Action::RecordReady { .. } => {
                                    assert_eq!(status, WorkspaceStatus::Running, "{label}");
                                    assert_eq!(*observation, Observation::Running { daemon_healthy: true }, "{label}");
                                    assert_eq!(desired, DesiredState::Running, "{label}");
                                }
                                Action::Fail { retry, .. } => {
                                    assert!(
                                        matches!(status, WorkspaceStatus::Running | WorkspaceStatus::Ready),
                                        "{label}"
                                    );
                                    assert!(!*retry || desired == DesiredState::Running, "{label}");
                                }
                                Action::Cancel { .. } => {
                                    assert_eq!(
                                        (status, desired),
                                        (WorkspaceStatus::Queued, DesiredState::Stopped),
                                        "{label}"
                                    );
                                }
                                Action::Retain { .. } => assert!(capture, "{label}"),
                                Action::Wait { at } => assert!(*at > 2_000, "{label}"),
                                Action::Done => assert!(
                                    !matches!(
                                        status,
                                        WorkspaceStatus::Queued | WorkspaceStatus::Running | WorkspaceStatus::Ready
                                    ),
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
                    }
                }
            }
        }
        assert_eq!(seen, 7 * 6 * 2 * 2 * 2);
    }

    #[test]
    fn the_lifecycle_path() {
        let p = Policy::default();
        let queued = state(WorkspaceStatus::Queued, DesiredState::Running, false, false);
        assert_eq!(decide(&queued, &Observation::NotLaunched, 0, &p).action, Action::Launch { run_id: "cur".into() });
        let starting = state(WorkspaceStatus::Running, DesiredState::Running, true, false);
        let healthy = Observation::Running { daemon_healthy: true };
        assert_eq!(decide(&starting, &healthy, 0, &p).action, Action::RecordReady { run_id: "cur".into() });
        let unhealthy = Observation::Running { daemon_healthy: false };
        assert_eq!(decide(&starting, &unhealthy, 2_000, &p).action, Action::Wait { at: 2_100 });
        match decide(&starting, &unhealthy, 1_000 + p.ready_timeout_ms + 1, &p).action {
            Action::Fail { error, retry: true, .. } => assert_eq!(error.code.as_deref(), Some("daemon-unreachable")),
            other => panic!("a daemon that never answers fails the launch: {other:?}"),
        }
        let ready = state(WorkspaceStatus::Ready, DesiredState::Running, true, false);
        assert_eq!(decide(&ready, &healthy, 0, &p).action, Action::Wait { at: p.watch_poll_ms });
        match decide(&ready, &Observation::Exited, 0, &p).action {
            Action::Fail { retry: false, .. } => {}
            other => panic!("a ready executor that ends fails without a retry: {other:?}"),
        }
        let stopping = state(WorkspaceStatus::Ready, DesiredState::Stopped, true, false);
        assert_eq!(decide(&stopping, &healthy, 0, &p).action, Action::Remove { run_id: "cur".into() });
        let kept = state(WorkspaceStatus::Ready, DesiredState::Stopped, true, true);
        assert!(matches!(decide(&kept, &healthy, 0, &p).action, Action::Retain { .. }));
        let never_launched = state(WorkspaceStatus::Queued, DesiredState::Stopped, false, false);
        assert_eq!(
            decide(&never_launched, &Observation::NotLaunched, 0, &p).action,
            Action::Cancel { run_id: "cur".into() }
        );
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
