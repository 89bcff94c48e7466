//! Sleep and wake. A capture-sourced workspace unused past its timeout (or
//! asked to) is drained exactly as a stop: its runtime goes only once its
//! work is saved in its capture session, or it is retained. While it
//! sleeps, the first request that needs its runtime wakes it: a new run
//! (relation `resume`) restores the session's head. What counts as use,
//! when a sleep is due, and what a sleep or a wake may do, decided here.

use serde::{Deserialize, Serialize};

use crate::model::*;
pub use crate::model::{Sleep, SleepReason};

named_enum!(
    /// What woke a sleeping workspace: the request that needed its runtime
    /// (`requested`: `POST …/wake`).
    WakeCause {
        Requested => "requested",
        Exec => "exec",
        Process => "process",
        Files => "files",
        Capture => "capture",
        Ssh => "ssh",
        Preview => "preview",
    }
);

/// A sleeping workspace: its runtime is gone with its work saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sleeping {
    /// When its runtime went (Unix ms).
    pub since: i64,
    pub reason: SleepReason,
}

/// Whether `workspace` sleeps now (asked to, and its runtime gone).
pub fn sleeping(workspace: &Workspace) -> Option<Sleeping> {
    let sleep = workspace.sleep.filter(|_| workspace.status == WorkspaceStatus::Stopped)?;
    Some(Sleeping { since: workspace.finished_at.unwrap_or(sleep.asked_at), reason: sleep.reason })
}

/// How long a workspace may go unused before it sleeps: its spec's
/// timeout, else the install's default; never for a workspace without a
/// capture session (nothing would hold its work), nor for a spec's `0`.
pub fn sleep_after(spec: &crate::spec::Spec, install_default: Option<u64>) -> Option<u64> {
    spec.capture_session()?;
    spec.typed().sleep_after_seconds.or(install_default).filter(|s| *s > 0)
}

pub use sluice_protocol::Activity;

/// Whether a workspace used as `activity` says is due to sleep after
/// `after_seconds`: nothing open, and unused at least that long.
pub fn idle_due(after_seconds: u64, activity: Activity) -> bool {
    activity.in_use == 0 && activity.idle_ms >= after_seconds.saturating_mul(1000)
}

/// What a sleep request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepStep {
    /// Drain it as a stop and release its runtime.
    Begin,
    /// It sleeps already, or its sleep is under way.
    Already,
}

/// A workspace may sleep when it has a capture session to hold its work
/// and runs now, ready; asking again while it sleeps changes nothing.
pub fn sleep_allowed(workspace: &Workspace) -> Result<SleepStep, Refusal> {
    let id = &workspace.id;
    if workspace.spec.capture_session().is_none() {
        return Err(Refusal {
            message: format!(
                "workspace {id} has no capture session (spec.source) to hold its work while it sleeps; stop it instead"
            ),
            code: ConflictCode::SleepUnsupported,
        });
    }
    if workspace.sleep.is_some() && workspace.status != WorkspaceStatus::Retained {
        return Ok(SleepStep::Already);
    }
    if workspace.status == WorkspaceStatus::Ready && workspace.desired_state == DesiredState::Running {
        return Ok(SleepStep::Begin);
    }
    let starting = matches!(workspace.status, WorkspaceStatus::Queued | WorkspaceStatus::Running)
        && workspace.desired_state == DesiredState::Running;
    if starting {
        return Err(Refusal {
            message: format!("workspace {id} is mid-launch; it can sleep once it is ready"),
            code: ConflictCode::MidLaunch,
        });
    }
    Err(Refusal {
        message: format!("workspace {id} is {} and not running: there is nothing to put to sleep", workspace.status),
        code: ConflictCode::NoLiveRuntime,
    })
}

/// What a request that needs the runtime finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakefulness {
    /// It sleeps: a wake queues a run that resumes it.
    Asleep,
    /// Its sleep is still saving its work: wake it once that is done.
    FallingAsleep,
    /// It runs, or is launching (perhaps woken by another request).
    Awake,
}

/// Whether a request that needs `workspace`'s runtime may wake it; a
/// workspace stopped, failed or retained is refused (it is not asleep: a
/// restart or a recovery brings it back, not a use).
pub fn wakefulness(workspace: &Workspace) -> Result<Wakefulness, Refusal> {
    let id = &workspace.id;
    if sleeping(workspace).is_some() {
        return Ok(Wakefulness::Asleep);
    }
    if workspace.status == WorkspaceStatus::Retained {
        return Err(Refusal {
            message: format!(
                "workspace {id} has a retained executor with work not confirmed saved; recover or discard it first"
            ),
            code: ConflictCode::Retained,
        });
    }
    if workspace.sleep.is_some() && !workspace.status.is_finished() {
        return Ok(Wakefulness::FallingAsleep);
    }
    if workspace.desired_state == DesiredState::Running && !workspace.status.is_finished() {
        return Ok(Wakefulness::Awake);
    }
    Err(Refusal {
        message: format!("workspace {id} is {}, not asleep: restart it to run it again", workspace.status),
        code: ConflictCode::NotSleeping,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use DesiredState as D;
    use WorkspaceStatus as S;
    use serde_json::json;

    fn capture(status: S, desired: D, sleep: Option<SleepReason>) -> Workspace {
        let mut w = testing::workspace(status, desired);
        w.spec = crate::spec::Spec::parse(json!({"source": {"kind": "capture", "sessionId": "cs"}})).unwrap();
        w.sleep = sleep.map(|reason| Sleep { reason, asked_at: 5 });
        w.finished_at = status.is_finished().then_some(9);
        w
    }

    #[test]
    fn a_sleep_is_allowed_only_of_a_ready_capture_workspace() {
        use SleepStep::*;
        let idle = Some(SleepReason::Idle);
        let rows: Vec<(Workspace, Result<SleepStep, ConflictCode>)> = vec![
            (capture(S::Ready, D::Running, None), Ok(Begin)),
            (capture(S::Ready, D::Stopped, idle), Ok(Already)),
            (capture(S::Stopped, D::Stopped, idle), Ok(Already)),
            (capture(S::Queued, D::Running, None), Err(ConflictCode::MidLaunch)),
            (capture(S::Running, D::Running, None), Err(ConflictCode::MidLaunch)),
            (capture(S::Stopped, D::Stopped, None), Err(ConflictCode::NoLiveRuntime)),
            (capture(S::Ready, D::Stopped, None), Err(ConflictCode::NoLiveRuntime)),
            (capture(S::Retained, D::Stopped, idle), Err(ConflictCode::NoLiveRuntime)),
            (testing::workspace(S::Ready, D::Running), Err(ConflictCode::SleepUnsupported)),
        ];
        for (i, (workspace, want)) in rows.into_iter().enumerate() {
            assert_eq!(sleep_allowed(&workspace).map_err(|r| r.code), want, "row {i}");
        }
    }

    #[test]
    fn only_a_sleeping_workspace_is_woken_by_use() {
        use Wakefulness::*;
        let idle = Some(SleepReason::Idle);
        let rows: Vec<(Workspace, Result<Wakefulness, ConflictCode>)> = vec![
            (capture(S::Stopped, D::Stopped, idle), Ok(Asleep)),
            (capture(S::Ready, D::Stopped, idle), Ok(FallingAsleep)),
            (capture(S::Ready, D::Running, None), Ok(Awake)),
            (capture(S::Queued, D::Running, None), Ok(Awake)),
            (capture(S::Retained, D::Stopped, idle), Err(ConflictCode::Retained)),
            (capture(S::Stopped, D::Stopped, None), Err(ConflictCode::NotSleeping)),
            (capture(S::Failed, D::Running, None), Err(ConflictCode::NotSleeping)),
            (capture(S::Ready, D::Stopped, None), Err(ConflictCode::NotSleeping)),
        ];
        for (i, (workspace, want)) in rows.into_iter().enumerate() {
            assert_eq!(wakefulness(&workspace).map_err(|r| r.code), want, "row {i}");
        }
        let asleep = capture(S::Stopped, D::Stopped, Some(SleepReason::Requested));
        assert_eq!(sleeping(&asleep), Some(Sleeping { since: 9, reason: SleepReason::Requested }));
        assert_eq!(sleeping(&capture(S::Ready, D::Stopped, idle)), None, "still saving its work");
    }

    #[test]
    fn a_sleep_is_due_once_nothing_is_open_and_it_went_unused_long_enough() {
        let rows = [
            (3, Activity { idle_ms: 3_000, in_use: 0 }, true),
            (3, Activity { idle_ms: 2_999, in_use: 0 }, false),
            (3, Activity { idle_ms: 60_000, in_use: 1 }, false),
            (u64::MAX, Activity { idle_ms: u64::MAX, in_use: 0 }, true),
        ];
        for (after, activity, due) in rows {
            assert_eq!(idle_due(after, activity), due, "{after} {activity:?}");
        }
    }

    #[test]
    fn the_timeout_is_the_specs_else_the_installs_and_only_with_a_capture_session() {
        let spec = |v| crate::spec::Spec::parse(v).unwrap();
        let source = json!({"kind": "capture", "sessionId": "cs"});
        let own = spec(json!({"source": source, "idle": {"sleepAfterSeconds": 30}}));
        let never = spec(json!({"source": source, "idle": {"sleepAfterSeconds": 0}}));
        let plain = spec(json!({"source": source}));
        assert_eq!(sleep_after(&own, Some(600)), Some(30));
        assert_eq!(sleep_after(&never, Some(600)), None, "0 opts out of the install's default");
        assert_eq!(sleep_after(&plain, Some(600)), Some(600));
        assert_eq!(sleep_after(&plain, None), None);
        assert_eq!(sleep_after(&spec(json!({})), Some(600)), None, "nothing would hold its work");
    }
}
