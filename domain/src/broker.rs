//! The execution broker's workspaces: when one ends, and why it says it
//! did. The broker and the store's reaper ask; the store records the first
//! reason and ends the workspace through the transition.

use crate::model::{TerminationReason, WorkspaceStatus};

/// Whether the broker's instance admits work, as its reaper weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    Open,
    Paused,
    EmergencyStopped,
}

/// Why the reaper ends a live broker workspace now, if it does: its
/// instance has no token left, its instance is stopped or paused, or it
/// has been idle past its timeout.
pub fn reaped(tokens_left: bool, admitted: Admitted, idle: bool) -> Option<TerminationReason> {
    match admitted {
        _ if !tokens_left => Some(TerminationReason::LeaseRevoked),
        Admitted::EmergencyStopped => Some(TerminationReason::EmergencyStopped),
        Admitted::Paused => Some(TerminationReason::Paused),
        Admitted::Open if idle => Some(TerminationReason::Idle),
        Admitted::Open => None,
    }
}

/// Why a workspace still in use ends at `now`, if it does: past its hard
/// end, or idle past its timeout (the call that finds it so ends it).
pub fn lapsed(now: i64, expires_at: i64, idle_at: i64) -> Option<TerminationReason> {
    if now >= expires_at {
        Some(TerminationReason::Expired)
    } else if now >= idle_at {
        Some(TerminationReason::Idle)
    } else {
        None
    }
}

/// The reason an ended workspace gives: the one recorded when it was
/// ended, else what its end shows (a failure, its hard end, or a release).
pub fn ended_because(
    recorded: Option<TerminationReason>,
    status: WorkspaceStatus,
    finished_at: Option<i64>,
    expires_at: i64,
) -> TerminationReason {
    recorded.unwrap_or(match status {
        WorkspaceStatus::Failed => TerminationReason::Failed,
        _ if finished_at.is_some_and(|at| at >= expires_at) => TerminationReason::Expired,
        _ => TerminationReason::Released,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use TerminationReason as R;

    #[test]
    fn the_reaper_ends_for_a_lost_lease_a_stop_a_pause_or_idleness_in_that_order() {
        let table = [
            (false, Admitted::Open, false, Some(R::LeaseRevoked)),
            (false, Admitted::Paused, true, Some(R::LeaseRevoked)),
            (true, Admitted::EmergencyStopped, true, Some(R::EmergencyStopped)),
            (true, Admitted::Paused, true, Some(R::Paused)),
            (true, Admitted::Open, true, Some(R::Idle)),
            (true, Admitted::Open, false, None),
        ];
        for (tokens_left, admitted, idle, want) in table {
            assert_eq!(reaped(tokens_left, admitted, idle), want, "{tokens_left} {admitted:?} {idle}");
        }
    }

    #[test]
    fn a_use_finds_a_workspace_expired_before_idle() {
        assert_eq!(lapsed(10, 10, 5), Some(R::Expired));
        assert_eq!(lapsed(9, 10, 5), Some(R::Idle));
        assert_eq!(lapsed(4, 10, 5), None);
    }

    #[test]
    fn an_ended_workspace_says_the_first_reason_else_what_its_end_shows() {
        assert_eq!(ended_because(Some(R::Idle), WorkspaceStatus::Failed, Some(20), 10), R::Idle);
        assert_eq!(ended_because(None, WorkspaceStatus::Failed, Some(20), 10), R::Failed);
        assert_eq!(ended_because(None, WorkspaceStatus::Stopped, Some(20), 10), R::Expired);
        assert_eq!(ended_because(None, WorkspaceStatus::Stopped, Some(5), 10), R::Released);
        assert_eq!(ended_because(None, WorkspaceStatus::Cancelled, None, 10), R::Released);
    }
}
