//! Which of sluice's own events a change of a run's drain makes: a change
//! of its state or its queue, the start of a retention, a recovery
//! attempt. Pure: the store writes them in the transaction of the change.

use crate::event_data;

use crate::drain::Drain;
use crate::ids::{RunId, WorkspaceId};
use crate::model::SluiceEventType;

/// One of sluice's own events to append to the feed.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSluiceEvent {
    pub event_type: SluiceEventType,
    pub workspace_id: Option<WorkspaceId>,
    pub attempt_id: Option<RunId>,
    pub message: String,
    pub data: serde_json::Value,
}

/// The events of a drain going from `before` to `after`.
pub fn drain_events(before: Option<&Drain>, after: &Drain) -> Vec<NewSluiceEvent> {
    let event = |event_type, message: String, data| NewSluiceEvent {
        event_type,
        workspace_id: Some(after.workspace_id.clone()),
        attempt_id: Some(after.run_id.clone()),
        message,
        data,
    };
    let mut events = Vec::new();
    let moved = before.is_none_or(|b| {
        b.state != after.state || b.progress != after.progress || b.final_complete != after.final_complete
    });
    if moved && after.state.is_some() {
        let p = &after.progress;
        let state = after.state.map(|s| s.as_str());
        let message = match p.pending {
            Some(pending) => format!("drain {}: {pending} left", state.unwrap_or("unknown")),
            None => format!("drain {}", state.unwrap_or("unknown")),
        };
        let data = event_data::json(event_data::DrainChanged {
            run_id: &after.run_id,
            state,
            pending: p.pending,
            pending_bytes: p.pending_bytes,
            registered: p.registered,
            uploaded_bytes: p.uploaded_bytes,
            final_complete: after.final_complete,
        });
        events.push(event(SluiceEventType::DrainChanged, message, data));
    }
    let Some(retention) = &after.retention else { return events };
    let earlier = before.and_then(|b| b.retention.as_ref()).filter(|r| r.since == retention.since);
    match earlier {
        None => {
            let data = event_data::json(event_data::ExecutorRetained {
                run_id: &after.run_id,
                reason: &retention.reason,
                since: retention.since,
                recoverable: retention.recoverable,
            });
            events.push(event(
                SluiceEventType::ExecutorRetained,
                format!("executor retained: {}", retention.reason),
                data,
            ));
        }
        Some(earlier) if retention.attempts > earlier.attempts => {
            let data = event_data::json(event_data::RecoveryAttempted {
                run_id: &after.run_id,
                attempt: retention.attempts,
                error: retention.last_error.as_deref(),
                next_attempt_at: retention.next_recovery_at,
            });
            let message = match &retention.last_error {
                Some(error) => format!("recovery attempt {} failed: {error}", retention.attempts),
                None => format!("recovery attempt {}", retention.attempts),
            };
            events.push(event(SluiceEventType::RecoveryAttempted, message, data));
        }
        Some(_) => {}
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drain::{DrainProgress, Retention};
    use crate::model::DrainState;

    fn drain(state: Option<DrainState>, pending: Option<i64>, retention: Option<(i64, i64)>) -> Drain {
        Drain {
            state,
            progress: DrainProgress { pending, ..DrainProgress::default() },
            retention: retention.map(|(since, attempts)| Retention {
                since,
                reason: "the daemon did not answer".into(),
                recoverable: true,
                attempts,
                next_recovery_at: None,
                last_error: None,
            }),
            ..Drain::new(&"run_1".into(), &"ws_1".into())
        }
    }

    #[test]
    fn drain_changes_make_the_events_they_should() {
        use DrainState::*;
        use SluiceEventType::*;
        let table: Vec<(Option<Drain>, Drain, Vec<SluiceEventType>)> = vec![
            // Nothing observed yet: nothing to say.
            (None, drain(None, None, None), vec![]),
            (None, drain(Some(Draining), Some(3), None), vec![DrainChanged]),
            // The queue moved, the state did not.
            (Some(drain(Some(Draining), Some(3), None)), drain(Some(Draining), Some(1), None), vec![DrainChanged]),
            // Nothing moved: nothing to say.
            (Some(drain(Some(Draining), Some(3), None)), drain(Some(Draining), Some(3), None), vec![]),
            (Some(drain(Some(Draining), Some(1), None)), drain(Some(Saved), Some(0), None), vec![DrainChanged]),
            // Kept: the retention starts with it.
            (
                Some(drain(Some(Draining), Some(1), None)),
                drain(Some(Kept), Some(1), Some((10, 0))),
                vec![DrainChanged, ExecutorRetained],
            ),
            // A recovery attempt, the drain unchanged.
            (
                Some(drain(Some(Kept), Some(1), Some((10, 0)))),
                drain(Some(Kept), Some(1), Some((10, 1))),
                vec![RecoveryAttempted],
            ),
            // The same retention seen again.
            (Some(drain(Some(Kept), Some(1), Some((10, 1)))), drain(Some(Kept), Some(1), Some((10, 1))), vec![]),
            // A later retention of the same run is a new one.
            (
                Some(drain(Some(Saved), Some(0), Some((10, 2)))),
                drain(Some(Kept), Some(0), Some((50, 0))),
                vec![DrainChanged, ExecutorRetained],
            ),
        ];
        for (i, (before, after, want)) in table.into_iter().enumerate() {
            let got: Vec<_> = drain_events(before.as_ref(), &after).into_iter().map(|e| e.event_type).collect();
            assert_eq!(got, want, "row {i}");
        }
    }

    #[test]
    fn drain_events_name_their_workspace_and_run() {
        let events = drain_events(None, &drain(Some(DrainState::Kept), Some(2), Some((10, 0))));
        for event in events {
            assert_eq!(event.workspace_id.as_deref(), Some("ws_1"));
            assert_eq!(event.attempt_id.as_deref(), Some("run_1"));
            assert_eq!(event.data["runId"], "run_1");
        }
    }
}
