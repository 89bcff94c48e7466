//! The rules that decide whether an owner's lifecycle request may go ahead,
//! judged against the workspace as the store reads it inside the request's
//! own transaction (so nothing changes between the judgement and the write).

use crate::model::*;

/// A restart makes a new run with a fresh disk: not while a launch is under
/// way (it would race the launch), and not over a retained executor (its
/// unsaved work must be recovered first). A capture-sourced workspace
/// restarts only once it has ended and its runtime is gone: its work is
/// then saved in its session, and the new run goes on from the session's
/// head (a live executor would be fenced with work not yet captured).
pub fn restart_allowed(workspace: &Workspace, current: Option<&Run>) -> Result<(), Refusal> {
    let ended =
        matches!(workspace.status, WorkspaceStatus::Stopped | WorkspaceStatus::Failed | WorkspaceStatus::Cancelled)
            && !current.is_some_and(|run| run.runtime.is_some() && run.runtime_removed_at.is_none());
    if workspace.spec.capture_session().is_some() && !ended && workspace.status != WorkspaceStatus::Retained {
        return Err(Refusal {
            message: format!(
                "workspace {} is capture-sourced and {}: stop it first (the stop saves its work), then \
                 restart it to go on from its session's head",
                workspace.id, workspace.status
            ),
            code: ConflictCode::CaptureRestartUnsupported,
        });
    }
    if still_starting(workspace) {
        return Err(Refusal {
            message: format!("workspace {} is mid-launch; restart it once it is ready", workspace.id),
            code: ConflictCode::MidLaunch,
        });
    }
    if workspace.status == WorkspaceStatus::Retained {
        return Err(Refusal {
            message: format!("workspace {} has a retained executor; recover it before a restart", workspace.id),
            code: ConflictCode::Retained,
        });
    }
    Ok(())
}

/// Whether the workspace's launch is under way: queued or starting, and
/// still wanted running. A wait for ready lasts exactly this long; once it
/// is false the workspace is ready or never will be by itself (it failed,
/// ended, was retained, or was asked to stop).
pub fn still_starting(workspace: &Workspace) -> bool {
    matches!(workspace.status, WorkspaceStatus::Queued | WorkspaceStatus::Running)
        && workspace.desired_state == DesiredState::Running
}

/// A stop needs something launched: a workspace that never launched an
/// executor has nothing to stop yet (409). Stopping a stopped workspace is
/// accepted again (so a discard reaches a kept runtime).
pub fn stop_allowed(workspace: &Workspace, current: Option<&Run>) -> Result<(), Refusal> {
    let launched = current.is_some_and(|r| r.runtime.is_some());
    if launched || matches!(workspace.status, WorkspaceStatus::Stopped | WorkspaceStatus::Cancelled) {
        return Ok(());
    }
    Err(Refusal {
        message: format!("workspace {} has never launched an executor; there is nothing to stop yet", workspace.id),
        code: ConflictCode::NeverLaunched,
    })
}

/// A workspace may be deleted (gone from lists and reads; its events stay
/// on the feed) once it has ended: stopped, failed or cancelled, with no
/// runtime left that could hold work. A retained executor is recovered or
/// discarded first; anything else is still live.
pub fn delete_allowed(workspace: &Workspace, current: Option<&Run>) -> Result<(), Refusal> {
    if workspace.status == WorkspaceStatus::Retained {
        return Err(Refusal {
            message: format!(
                "workspace {} has a retained executor with work not confirmed saved; recover or discard it first",
                workspace.id
            ),
            code: ConflictCode::Retained,
        });
    }
    if !workspace.status.is_finished() {
        return Err(Refusal {
            message: format!("workspace {} is {}; stop it before deleting it", workspace.id, workspace.status),
            code: ConflictCode::NotEnded,
        });
    }
    if current.is_some_and(|run| run.runtime.is_some() && run.runtime_removed_at.is_none()) {
        return Err(Refusal {
            message: format!("workspace {} still has a runtime that is not removed; it cannot go yet", workspace.id),
            code: ConflictCode::NotEnded,
        });
    }
    Ok(())
}

/// Commands run only in a ready executor.
pub fn exec_allowed(workspace: &Workspace) -> Result<(), Refusal> {
    if workspace.status == WorkspaceStatus::Ready && workspace.current_run_id.is_some() {
        return Ok(());
    }
    Err(Refusal {
        message: format!("workspace {} has no live runtime to exec in (it is {})", workspace.id, workspace.status),
        code: ConflictCode::NoLiveRuntime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::workspace;

    /// Every status and desired state: restart is refused exactly while a
    /// launch is under way or an executor is retained; exec needs ready; a
    /// wait for ready lasts while the launch is under way.
    #[test]
    fn every_state_is_judged() {
        for &status in WorkspaceStatus::ALL {
            for &desired in DesiredState::ALL {
                let w = workspace(status, desired);
                let restart = restart_allowed(&w, None).map_err(|r| r.code);
                let expected = match (status, desired) {
                    (WorkspaceStatus::Queued | WorkspaceStatus::Running, DesiredState::Running) => {
                        Err(ConflictCode::MidLaunch)
                    }
                    (WorkspaceStatus::Retained, _) => Err(ConflictCode::Retained),
                    _ => Ok(()),
                };
                assert_eq!(restart, expected, "restart of {status} wanting {desired}");
                let exec = exec_allowed(&w).map_err(|r| r.code);
                let expected = if status == WorkspaceStatus::Ready { Ok(()) } else { Err(ConflictCode::NoLiveRuntime) };
                assert_eq!(exec, expected, "exec in {status} wanting {desired}");
                let starting = matches!(
                    (status, desired),
                    (WorkspaceStatus::Queued | WorkspaceStatus::Running, DesiredState::Running)
                );
                assert_eq!(still_starting(&w), starting, "a wait on {status} wanting {desired}");
            }
        }
        for &status in WorkspaceStatus::ALL {
            let mut capture = workspace(status, DesiredState::Stopped);
            capture.spec =
                crate::spec::Spec::parse(serde_json::json!({"source": {"kind": "capture", "sessionId": "cs_1"}}))
                    .unwrap();
            let expected = match status {
                WorkspaceStatus::Stopped | WorkspaceStatus::Failed | WorkspaceStatus::Cancelled => Ok(()),
                WorkspaceStatus::Retained => Err(ConflictCode::Retained),
                _ => Err(ConflictCode::CaptureRestartUnsupported),
            };
            let removed = crate::testing::run("r", status, true, true);
            assert_eq!(restart_allowed(&capture, Some(&removed)).map_err(|r| r.code), expected, "capture, {status}");
            let kept = crate::testing::run("r", status, true, false);
            let refused = restart_allowed(&capture, Some(&kept)).map_err(|r| r.code);
            let expected = if status == WorkspaceStatus::Retained {
                ConflictCode::Retained
            } else {
                ConflictCode::CaptureRestartUnsupported
            };
            assert_eq!(refused, Err(expected), "capture-sourced with its runtime not removed, {status}");
        }
        for &status in WorkspaceStatus::ALL {
            let w = workspace(status, DesiredState::Stopped);
            let expected = match status {
                WorkspaceStatus::Stopped | WorkspaceStatus::Failed | WorkspaceStatus::Cancelled => Ok(()),
                WorkspaceStatus::Retained => Err(ConflictCode::Retained),
                _ => Err(ConflictCode::NotEnded),
            };
            assert_eq!(delete_allowed(&w, None).map_err(|r| r.code), expected, "delete of {status}");
        }
        let stopped = workspace(WorkspaceStatus::Stopped, DesiredState::Stopped);
        let kept = crate::testing::run("r", WorkspaceStatus::Stopped, true, false);
        let kept = delete_allowed(&stopped, Some(&kept)).map_err(|r| r.code);
        assert_eq!(kept, Err(ConflictCode::NotEnded), "a runtime not removed");
        let removed = crate::testing::run("r", WorkspaceStatus::Stopped, true, true);
        assert_eq!(delete_allowed(&stopped, Some(&removed)), Ok(()), "its runtime removed");
        let never = crate::testing::run("r", WorkspaceStatus::Cancelled, false, false);
        assert_eq!(delete_allowed(&stopped, Some(&never)), Ok(()), "nothing launched");
        let mut never_launched = workspace(WorkspaceStatus::Ready, DesiredState::Running);
        never_launched.current_run_id = None;
        assert!(exec_allowed(&never_launched).is_err());
    }
}
