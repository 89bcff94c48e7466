//! A capture-sourced executor's drain as the store keeps it: the owner's
//! stop intent (who, when, discard, attestation), what was last observed
//! while ending the executor, and retention with its recovery attempts.

use sluice_protocol::attest::{self, Attestation, Refuted, Report};

use crate::ids::{OwnerId, RunId, WorkspaceId};
use crate::model::*;

/// What is known of an executor that an attestation is weighed against:
/// every report stored of it, and the newest capture-session epoch it
/// claimed (a daemon claims the session at every boot, so an executor
/// restarted on its disk holds a newer epoch than any seal of its earlier
/// boots, even before anything of the new boot was reported).
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    pub reports: &'a [Report],
    pub claimed_epoch: Option<u64>,
    /// sluice tried to start the executor again on its disk (a recovery):
    /// a boot whose claim never reached the store may have written since.
    pub restarted: bool,
}

impl<'a> Evidence<'a> {
    /// The evidence the store holds of an executor with `drain`.
    pub fn of(reports: &'a [Report], claimed_epoch: Option<u64>, drain: Option<&Drain>) -> Evidence<'a> {
        let restarted = drain.and_then(|d| d.retention.as_ref()).is_some_and(|r| r.attempts > 0);
        Evidence { reports, claimed_epoch, restarted }
    }
}

/// Weighs an attestation of `run` against the evidence of its executor:
/// the protocol's rule over its reports, and the epoch it claimed last.
/// Applied here for every caller (a stop that brings one, a report that
/// may revoke one, a drain that relies on one). A run with no runtime
/// resource has no executor to attest.
pub fn weigh(attestation: &Attestation, run: &Run, evidence: Evidence<'_>) -> Result<(), Refuted> {
    let Some(runtime) = &run.runtime else {
        let rule = attest::Rule::Executor;
        return Err(Refuted { rule, detail: format!("{}: the run has no executor to attest", rule.as_str()) });
    };
    let executor = attest::Executor {
        run_id: &run.id,
        resource_id: &runtime.resource_id,
        reference: &runtime.reference,
        launch_id: run.launch_id.as_deref(),
    };
    attest::weigh(attestation, executor, evidence.reports)?;
    if let Some(claimed) = evidence.claimed_epoch.filter(|e| *e > attestation.epoch) {
        let rule = attest::Rule::OlderEpoch;
        let detail = format!(
            "{}: epoch {} is older than epoch {claimed} the executor claimed since (it was started again)",
            rule.as_str(),
            attestation.epoch
        );
        return Err(Refuted { rule, detail });
    }
    if evidence.restarted {
        let rule = attest::Rule::OlderEpoch;
        let detail = format!(
            "{}: the executor was started again on its disk since it was retained; a seal of an earlier boot \
             does not cover what a later one wrote (it goes once its final flush completes, or by a discard)",
            rule.as_str()
        );
        return Err(Refuted { rule, detail });
    }
    Ok(())
}

/// Who asked for a discard, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discard {
    pub requested_by: String,
    pub requested_at: i64,
}

/// Why an executor is retained and how its recovery goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    pub since: i64,
    pub reason: String,
    pub recoverable: bool,
    pub attempts: i64,
    pub next_recovery_at: Option<i64>,
    pub last_error: Option<String>,
}

/// The daemon's queue as last read (for following a drain).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrainProgress {
    pub pending: Option<i64>,
    pub pending_bytes: Option<i64>,
    pub registered: Option<i64>,
    pub uploaded_bytes: Option<i64>,
}

/// One run's drain record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drain {
    pub run_id: RunId,
    pub workspace_id: WorkspaceId,
    /// `None` until something was observed.
    pub state: Option<DrainState>,
    pub detail: Option<String>,
    pub observed_at: Option<i64>,
    pub preservation_starts_at: Option<i64>,
    pub stop_requested: Option<(String, i64)>,
    pub discard: Option<Discard>,
    /// The daemon answered `complete: true` for a FINAL flush.
    pub final_complete: bool,
    pub progress: DrainProgress,
    /// Kept on record after retention ends; the run's status says whether
    /// it still holds.
    pub retention: Option<Retention>,
}

impl Drain {
    /// A run's drain before anything was recorded of it.
    pub fn new(run_id: &RunId, workspace_id: &WorkspaceId) -> Drain {
        Drain {
            run_id: run_id.clone(),
            workspace_id: workspace_id.clone(),
            state: None,
            detail: None,
            observed_at: None,
            preservation_starts_at: None,
            stop_requested: None,
            discard: None,
            final_complete: false,
            progress: DrainProgress::default(),
            retention: None,
        }
    }

    /// The state a reader is shown, with what is happening: what was last
    /// observed; else, nothing observed yet, a stop (or discard) waiting
    /// for the worker's first look, or an executor that runs on until its
    /// preservation starts.
    pub fn shown(&self) -> (DrainState, Option<String>) {
        let stopping = self.stop_requested.is_some() || self.discard.is_some();
        match self.state {
            Some(state) => (state, self.detail.clone()),
            None if stopping => (
                DrainState::Draining,
                self.stop_requested.is_some().then(|| "stop recorded; the drain has not started yet".into()),
            ),
            None => (DrainState::Kept, Some("running; the final drain starts at preservationStartsAt".into())),
        }
    }

    /// The retention a reader is shown: only while `run_status` says the
    /// executor is still retained (the record outlives it).
    pub fn retention_shown(&self, run_status: WorkspaceStatus) -> Option<&Retention> {
        self.retention.as_ref().filter(|_| run_status == WorkspaceStatus::Retained)
    }
}

/// An attestation as stored, with what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAttestation {
    pub id: String,
    pub run_id: RunId,
    pub attestation: Attestation,
    pub sealed_at: Option<String>,
    pub outcome: AttestationOutcome,
    pub detail: Option<String>,
    pub attested_by: String,
    pub attested_at: i64,
}

/// What one drain step observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainObservation {
    pub state: DrainState,
    pub detail: Option<String>,
    /// The daemon's stamped report, when it answered.
    pub report: Option<Report>,
    pub progress: DrainProgress,
}

/// An owner's stop.
#[derive(Debug, Clone, Default)]
pub struct StopIntent {
    pub discard: bool,
    pub attestation: Option<(Attestation, Option<String>)>,
}

/// A retained executor, for operators.
#[derive(Debug, Clone)]
pub struct RetainedExecutor {
    pub workspace_id: WorkspaceId,
    pub owner_user_id: OwnerId,
    pub run: Run,
    pub drain: Drain,
}

/// Whether `report` only repeats the newest stored one: the same boot of
/// the same executor at the same head, saying the same, seen again later.
/// The store keeps such a run of reports as one row with the newest stamp
/// (the later stamp is the one that weighs).
pub fn repeats(previous: &Report, previous_detail: Option<&str>, report: &Report, detail: Option<&str>) -> bool {
    let (p, o) = (&previous.origin, &report.origin);
    p.epoch == o.epoch
        && p.launch == o.launch
        && p.boot_id == o.boot_id
        && p.head_n == o.head_n
        && p.observation <= o.observation
        && previous.saved == report.saved
        && previous_detail == detail
}

/// Why an executor that holds a capture session has work not confirmed
/// saved, so that a new executor must not take the session over (fence
/// it) unless the owner says to discard that work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsavedHolder {
    pub run_id: RunId,
    pub workspace_id: WorkspaceId,
    /// `retained` or `stopping`.
    pub state: &'static str,
}

/// Judges the run that holds a session (`None`: no executor claimed it).
/// Its work is unsaved while its executor may exist and is retained, or
/// is being stopped with neither a complete FINAL nor a discard. A live
/// executor no one asked to stop is taken over as before: its daemon was
/// shipping all along and the newest head is its work.
pub fn unsaved_holder(holder: Option<(&Run, Option<&Drain>)>) -> Option<UnsavedHolder> {
    let (run, drain) = holder?;
    if run.runtime_removed_at.is_some() || run.runtime.is_none() {
        return None;
    }
    let saved_or_discarded =
        drain.is_some_and(|d| d.discard.is_some() || d.final_complete || d.state == Some(DrainState::Saved));
    if saved_or_discarded {
        return None;
    }
    let state = match (run.status, drain.and_then(|d| d.stop_requested.as_ref())) {
        (WorkspaceStatus::Retained, _) => "retained",
        (status, _) if status.is_finished() => return None,
        (_, Some(_)) => "stopping",
        (_, None) => return None,
    };
    Some(UnsavedHolder { run_id: run.id.clone(), workspace_id: run.workspace_id.clone(), state })
}

/// Whether an executor's capture is fenced: its daemon says so, or a newer
/// epoch of its session is held by another executor. A daemon that has not
/// heard of the newer claim yet is fenced all the same; one that never
/// claimed (epoch 0) is not. `session` is the session's epoch and the run
/// that holds it, where the session is known.
pub fn fenced(daemon_says: bool, claimed_epoch: u64, session: Option<(u64, Option<&str>)>, run_id: &RunId) -> bool {
    if daemon_says {
        return true;
    }
    match session {
        Some((epoch, holder)) if claimed_epoch > 0 => holder != Some(run_id) && epoch > claimed_epoch,
        _ => false,
    }
}

#[cfg(test)]
mod unsaved_holder_tests {
    use super::*;
    use crate::testing::run;

    #[test]
    fn a_session_is_held_against_a_takeover_while_its_holder_has_unsaved_work() {
        let stopping = |state: Option<DrainState>| Drain {
            stop_requested: Some(("alice".into(), 1)),
            state,
            ..Drain::new(&"r".into(), &"ws".into())
        };
        let discarded =
            Drain { discard: Some(Discard { requested_by: "alice".into(), requested_at: 2 }), ..stopping(None) };
        let complete = Drain { final_complete: true, ..stopping(Some(DrainState::Saved)) };
        use WorkspaceStatus::*;
        // (run status, runtime on record, removed, drain) → held as
        type Row = (WorkspaceStatus, bool, bool, Option<Drain>, Option<&'static str>);
        let table: Vec<Row> = vec![
            (Ready, true, false, None, None),
            (Ready, true, false, Some(stopping(None)), Some("stopping")),
            (Ready, true, false, Some(stopping(Some(DrainState::Draining))), Some("stopping")),
            (Ready, true, false, Some(stopping(Some(DrainState::Kept))), Some("stopping")),
            (Ready, true, false, Some(complete.clone()), None),
            (Ready, true, false, Some(discarded.clone()), None),
            (Retained, true, false, Some(stopping(Some(DrainState::Gone))), Some("retained")),
            (Retained, true, false, None, Some("retained")),
            (Retained, true, false, Some(discarded), None),
            (Retained, true, true, None, None),
            (Stopped, true, true, Some(complete), None),
            (Running, false, false, None, None),
            (Failed, true, false, None, None),
        ];
        for (status, recorded, removed, drain, want) in table {
            let mut holder = run("r", status, recorded, false);
            holder.runtime_removed_at = removed.then_some(5);
            let got = unsaved_holder(Some((&holder, drain.as_ref())));
            assert_eq!(
                got.as_ref().map(|h| h.state),
                want,
                "{status:?} recorded={recorded} removed={removed} {drain:?}"
            );
            if let Some(h) = got {
                assert_eq!((h.run_id.as_str(), h.workspace_id.as_str()), ("r", holder.workspace_id.as_str()));
            }
        }
        assert_eq!(unsaved_holder(None), None, "no executor claimed the session");
    }
}

#[cfg(test)]
mod shown_tests {
    use super::*;

    #[test]
    fn a_reader_sees_what_was_observed_else_what_waits() {
        let fresh = Drain::new(&"r".into(), &"ws".into());
        let stop = Drain { stop_requested: Some(("alice".into(), 1)), ..fresh.clone() };
        let discard =
            Drain { discard: Some(Discard { requested_by: "alice".into(), requested_at: 2 }), ..fresh.clone() };
        let observed = Drain { state: Some(DrainState::Saved), detail: Some("saved".into()), ..stop.clone() };
        let silent = Drain { state: Some(DrainState::Gone), detail: None, ..stop.clone() };
        let table = [
            (&fresh, DrainState::Kept, Some("running; the final drain starts at preservationStartsAt")),
            (&stop, DrainState::Draining, Some("stop recorded; the drain has not started yet")),
            (&discard, DrainState::Draining, None),
            (&observed, DrainState::Saved, Some("saved")),
            (&silent, DrainState::Gone, None),
        ];
        for (drain, state, detail) in table {
            assert_eq!(drain.shown(), (state, detail.map(str::to_owned)), "{drain:?}");
        }
    }

    #[test]
    fn retention_is_shown_only_while_the_executor_is_retained() {
        let retention = Retention {
            since: 1,
            reason: "r".into(),
            recoverable: true,
            attempts: 0,
            next_recovery_at: None,
            last_error: None,
        };
        let drain = Drain { retention: Some(retention), ..Drain::new(&"r".into(), &"ws".into()) };
        for &status in WorkspaceStatus::ALL {
            assert_eq!(drain.retention_shown(status).is_some(), status == WorkspaceStatus::Retained, "{status}");
        }
    }
}

#[cfg(test)]
mod fenced_tests {
    use super::*;

    #[test]
    fn an_executor_is_fenced_by_its_daemon_or_by_a_newer_holder() {
        let newer_elsewhere = Some((3, Some("run_b")));
        for (daemon_says, claimed, session, expected) in [
            (true, 0, None, true),
            (false, 0, newer_elsewhere, false),
            (false, 2, newer_elsewhere, true),
            (false, 3, newer_elsewhere, false),
            (false, 2, Some((3, Some("run_a"))), false),
            (false, 2, Some((3, None)), true),
            (false, 2, None, false),
        ] {
            assert_eq!(
                fenced(daemon_says, claimed, session, &"run_a".into()),
                expected,
                "{daemon_says} {claimed} {session:?}"
            );
        }
    }
}
