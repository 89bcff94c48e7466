//! Work at risk: whether a live capture executor holds work that is not
//! registered yet, read from its daemon's capture status. Staged captures
//! waiting to ship, snaps that fail, classes refused for the quota, a
//! registration refused and a lost claim (fenced) all leave changes that
//! exist only on the executor.

use sluice_protocol::capture::CaptureStatus;

/// What an at-risk executor holds unsaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Risk {
    /// Bytes staged on the executor and not registered.
    pub unsaved_bytes: u64,
    /// Since its newest registered capture (or its start, if none).
    pub for_ms: i64,
    /// Capture classes whose snaps fail.
    pub failing_classes: u64,
}

/// `saved_at_ms`: when the executor last had a capture registered, or
/// started. `None` when nothing it holds is at risk.
pub fn assess(status: &CaptureStatus, saved_at_ms: i64, now_ms: i64) -> Option<Risk> {
    let failing_classes = status
        .snaps
        .iter()
        .flatten()
        .filter(|class| class.last_snap_error.is_some() || class.snap_failing_since_unix_ms.is_some())
        .count() as u64;
    let refused = status.refused.as_ref().is_some_and(|classes| !classes.is_empty());
    let at_risk =
        status.pending > 0 || failing_classes > 0 || refused || status.register_refused.is_some() || status.fenced;
    at_risk.then(|| Risk {
        unsaved_bytes: status.pending_bytes.unwrap_or(0).max(status.staged_bytes),
        for_ms: (now_ms - saved_at_ms).max(0),
        failing_classes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::capture::{CaptureClass, ClassSnaps};

    fn failing(class: CaptureClass) -> ClassSnaps {
        ClassSnaps {
            class,
            snaps_failed: 2,
            last_snap_error: Some("permission denied".into()),
            snap_failing_since_unix_ms: Some(1),
        }
    }

    #[test]
    fn what_puts_work_at_risk() {
        let saved = CaptureStatus { registered: 4, ..Default::default() };
        let staged = CaptureStatus { pending: 1, staged_bytes: 700, pending_bytes: Some(700), ..saved.clone() };
        let snaps = CaptureStatus { snaps: Some(vec![failing(CaptureClass::Small)]), ..saved.clone() };
        let quota = CaptureStatus { refused: Some(vec![CaptureClass::Bulk]), ..saved.clone() };
        let no_refusal = CaptureStatus { refused: Some(vec![]), ..saved.clone() };
        let refused = CaptureStatus { register_refused: Some("quota".into()), ..saved.clone() };
        let fenced = CaptureStatus { fenced: true, ..saved.clone() };
        let table: [(&str, &CaptureStatus, Option<Risk>); 7] = [
            ("everything registered", &saved, None),
            ("an empty refusal list", &no_refusal, None),
            ("a staged capture", &staged, Some(Risk { unsaved_bytes: 700, for_ms: 9_000, failing_classes: 0 })),
            ("a failing snap", &snaps, Some(Risk { unsaved_bytes: 0, for_ms: 9_000, failing_classes: 1 })),
            ("a class over quota", &quota, Some(Risk { unsaved_bytes: 0, for_ms: 9_000, failing_classes: 0 })),
            ("a refused registration", &refused, Some(Risk { unsaved_bytes: 0, for_ms: 9_000, failing_classes: 0 })),
            ("a lost claim", &fenced, Some(Risk { unsaved_bytes: 0, for_ms: 9_000, failing_classes: 0 })),
        ];
        for (case, status, expected) in table {
            assert_eq!(assess(status, 1_000, 10_000), expected, "{case}");
        }
        assert_eq!(assess(&staged, 20_000, 10_000).unwrap().for_ms, 0, "a clock behind the record reads 0");
    }
}
