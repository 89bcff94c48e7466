//! An exec run's lifecycle: how it begins, what a worker that claims its
//! job does with it as stored, what each command's answer means for the
//! rest, and how it ends. The store persists what is decided here; the
//! runner (the API process that took the run, or a worker) asks.

use crate::ids::RunId;
use crate::lifecycle::exec_allowed;
use crate::model::{ConflictCode, ExecRunStatus, Refusal, RunError, Workspace, WorkspaceStatus};
use crate::reconcile::ReconcileState;

/// The code of a run that its executor's final flush ended.
pub const FINAL_FLUSH: &str = "final-flush";
/// The code of a run whose runner was lost mid-command.
pub const WORKER_LOST: &str = "worker-lost";
/// The code of a run whose executor was gone before it could start.
pub const NO_LIVE_RUNTIME: &str = "no-live-runtime";
/// The code of a run the transport to the daemon broke.
pub const TRANSPORT: &str = "transport";

/// The workspace run whose executor a new exec run runs in: the current
/// one of a ready workspace, or the refusal (nothing is written then).
pub fn runs_in(workspace: &Workspace) -> Result<&RunId, Refusal> {
    exec_allowed(workspace)?;
    workspace.current_run_id.as_ref().ok_or_else(|| Refusal {
        message: format!("workspace {} has no run to exec in", workspace.id),
        code: ConflictCode::NoLiveRuntime,
    })
}

/// How a new run begins: `running` when its creator takes it at once (its
/// executor has an endpoint to run in), else `queued` for a worker.
pub fn begins(taken: bool) -> ExecRunStatus {
    if taken { ExecRunStatus::Running } else { ExecRunStatus::Queued }
}

/// What a worker that claimed a run's job does with the run as stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// It has ended (or is gone): the job is done.
    Ended,
    /// Whoever ran it was lost mid-command: running the commands again
    /// could repeat their effects, so it ends failed with what was recorded.
    Lost(RunError),
    /// Not started: the worker starts it.
    Start,
}

pub fn on_claim(status: ExecRunStatus) -> Claimed {
    match status {
        ExecRunStatus::Completed | ExecRunStatus::Failed => Claimed::Ended,
        ExecRunStatus::Running => Claimed::Lost(RunError::coded(
            "the worker running these commands was lost; results recorded so far are kept",
            WORKER_LOST,
        )),
        ExecRunStatus::Queued => Claimed::Start,
    }
}

/// Where a run a worker started reaches its executor: the control
/// endpoint of the workspace's current run, while the workspace is ready
/// and that run is the run's own, ready; else why the run ends.
pub fn endpoint_for<'a>(state: Option<&'a ReconcileState>, runs_in: &RunId) -> Result<&'a str, RunError> {
    state
        .filter(|s| s.workspace.status == WorkspaceStatus::Ready)
        .and_then(|s| s.current_run.as_ref())
        .filter(|run| &run.id == runs_in && run.status == WorkspaceStatus::Ready)
        .and_then(|run| run.runtime.as_ref()?.endpoint.as_deref())
        .ok_or_else(|| RunError::coded("the workspace's executor is no longer ready", NO_LIVE_RUNTIME))
}

/// What the daemon made of one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// It ran to its exit (whatever the code); `stopped_by_final` when the
    /// executor's final flush stopped it.
    Exited { stopped_by_final: bool },
    /// The executor's final flush had begun: it takes no new command.
    Finalized,
    /// The call broke (the transport, or the daemon's answer).
    Broke,
}

/// What comes after command `index` (from 0) of `of`.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Record the results so far and run the next command.
    Command,
    /// End the run: completed (`None`), or failed with why.
    End(Option<RunError>),
}

/// What command `index` of `of` answering `answered` means for the run;
/// `broken` says how the call broke (it is never the daemon's own text).
pub fn after(index: usize, of: usize, answered: Answered, broken: impl FnOnce() -> String) -> Next {
    let number = index + 1;
    match answered {
        Answered::Exited { stopped_by_final: true } => Next::End(Some(RunError::coded(
            format!("the executor's final flush stopped command {number} of {of}"),
            FINAL_FLUSH,
        ))),
        Answered::Exited { stopped_by_final: false } if number < of => Next::Command,
        Answered::Exited { stopped_by_final: false } => Next::End(None),
        Answered::Finalized => Next::End(Some(RunError::coded(
            format!(
                "the executor's final flush began before command {number} of {of} could start: it takes no new work"
            ),
            FINAL_FLUSH,
        ))),
        Answered::Broke => {
            Next::End(Some(RunError::coded(format!("command {number} of {of}: {}", broken()), TRANSPORT)))
        }
    }
}

/// How a run ends: failed when the machinery broke, else completed (a
/// nonzero exit is a result, not a failure).
pub fn ends(error: Option<&RunError>) -> ExecRunStatus {
    if error.is_some() { ExecRunStatus::Failed } else { ExecRunStatus::Completed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::workspace;

    fn code(next: &Next) -> Option<&str> {
        match next {
            Next::End(Some(error)) => error.code.as_deref(),
            _ => None,
        }
    }

    #[test]
    fn a_run_begins_in_a_ready_workspaces_current_run_only() {
        for &status in WorkspaceStatus::ALL {
            let mut ws = workspace(status, crate::model::DesiredState::Running);
            let judged = runs_in(&ws).map(RunId::to_string);
            if status == WorkspaceStatus::Ready {
                assert_eq!(judged.as_deref(), Ok(ws.current_run_id.as_deref().unwrap()), "{status}");
                ws.current_run_id = None;
                assert_eq!(runs_in(&ws).unwrap_err().code, ConflictCode::NoLiveRuntime);
            } else {
                assert_eq!(judged.unwrap_err().code, ConflictCode::NoLiveRuntime, "{status}");
            }
        }
        assert_eq!((begins(true), begins(false)), (ExecRunStatus::Running, ExecRunStatus::Queued));
    }

    #[test]
    fn a_claimed_run_is_left_ended_started_or_ended_as_lost() {
        let table = [
            (ExecRunStatus::Queued, "start"),
            (ExecRunStatus::Running, WORKER_LOST),
            (ExecRunStatus::Completed, "ended"),
            (ExecRunStatus::Failed, "ended"),
        ];
        for (status, want) in table {
            let got = match on_claim(status) {
                Claimed::Start => "start",
                Claimed::Ended => "ended",
                Claimed::Lost(error) => {
                    assert!(error.message.contains("results recorded so far are kept"));
                    WORKER_LOST
                }
            };
            assert_eq!(got, want, "{status}");
        }
    }

    #[test]
    fn a_started_run_needs_its_own_ready_executor_and_its_endpoint() {
        use crate::model::DesiredState::Running as Wanted;
        use crate::reconcile::test_state as reconcile_state;
        let own = RunId::from("cur");
        let ready = || {
            let mut state = reconcile_state(WorkspaceStatus::Ready, Wanted, true, false);
            state.current_run.as_mut().unwrap().runtime.as_mut().unwrap().endpoint = Some("unix:///c".into());
            state
        };
        let mut no_endpoint = ready();
        no_endpoint.current_run.as_mut().unwrap().runtime.as_mut().unwrap().endpoint = None;
        let mut starting = ready();
        starting.current_run.as_mut().unwrap().status = WorkspaceStatus::Running;
        let mut retained = ready();
        retained.workspace.status = WorkspaceStatus::Retained;
        let mut no_run = ready();
        no_run.current_run = None;
        let table = [
            (Some(ready()), &own, Some("unix:///c")),
            (Some(ready()), &RunId::from("other"), None),
            (Some(no_endpoint), &own, None),
            (Some(starting), &own, None),
            (Some(retained), &own, None),
            (Some(no_run), &own, None),
            (None, &own, None),
        ];
        for (state, runs_in, want) in table {
            let found = endpoint_for(state.as_ref(), runs_in);
            assert_eq!(found.as_ref().ok().copied(), want, "{runs_in} {state:?}");
            if let Err(error) = found {
                assert_eq!(error.code.as_deref(), Some(NO_LIVE_RUNTIME));
            }
        }
    }

    #[test]
    fn each_answer_moves_the_run_on_or_ends_it() {
        let exited = Answered::Exited { stopped_by_final: false };
        let stopped = Answered::Exited { stopped_by_final: true };
        let why = || "the daemon went away".to_owned();
        assert_eq!(after(0, 2, exited, why), Next::Command);
        assert_eq!(after(1, 2, exited, why), Next::End(None), "the last command's exit completes the run");
        assert_eq!(code(&after(0, 2, stopped, why)), Some(FINAL_FLUSH), "no command runs after a final flush");
        assert_eq!(code(&after(1, 2, stopped, why)), Some(FINAL_FLUSH));
        let refused = after(0, 3, Answered::Finalized, why);
        assert_eq!(code(&refused), Some(FINAL_FLUSH));
        let broken = after(2, 3, Answered::Broke, why);
        assert_eq!(code(&broken), Some(TRANSPORT));
        let Next::End(Some(error)) = broken else { unreachable!() };
        assert_eq!(error.message, "command 3 of 3: the daemon went away");
    }

    #[test]
    fn only_broken_machinery_fails_a_run() {
        assert_eq!(ends(None), ExecRunStatus::Completed);
        assert_eq!(ends(Some(&RunError::coded("x", TRANSPORT))), ExecRunStatus::Failed);
    }
}
