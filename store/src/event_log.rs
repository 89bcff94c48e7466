//! The two writers of the events table: a workspace's own event (with the
//! next number of its log) and one of sluice's own (a feed position only).
//! Each runs inside the caller's transaction and checks the data with the
//! never-send guard first.

use serde_json::Value;
use sluice_domain::feed::NewSluiceEvent;
use sluice_domain::guard;

use crate::clock::new_id;
use crate::db::{Tx, args};
use crate::error::StoreError;
use crate::model::{Event, EventType};
use sluice_domain::ids::{RunId, WorkspaceId};

/// Appends one event to a workspace's log inside the caller's transaction,
/// taking the next per-workspace sequence number.
pub(crate) async fn append_event(
    tx: &mut Tx,
    workspace_id: &WorkspaceId,
    attempt_id: Option<&RunId>,
    event_type: EventType,
    message: Option<String>,
    data: Option<Value>,
    now: i64,
) -> Result<Event, StoreError> {
    if let Some(data) = &data {
        guard::check("event.data", data)?;
    }
    tx.appended_events();
    let seq = tx
        .fetch_one(
            "UPDATE workspaces SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq",
            args![workspace_id],
        )
        .await?
        .int("event_seq")?;
    let event = Event {
        id: new_id("evt").into(),
        workspace_id: workspace_id.clone(),
        seq,
        attempt_id: attempt_id.cloned(),
        event_type,
        occurred_at: now,
        message,
        data,
    };
    tx.execute(
        "INSERT INTO events (id, workspace_id, seq, attempt_id, type, occurred_at, message, data) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        args![
            &event.id,
            workspace_id,
            seq,
            event.attempt_id.clone(),
            event_type.as_str(),
            now,
            event.message.clone(),
            event.data.as_ref().map(Value::to_string)
        ],
    )
    .await?;
    Ok(event)
}

/// Appends one of sluice's own events to the feed inside the caller's
/// transaction: it takes a feed position but no workspace sequence number.
pub(crate) async fn append_sluice_event(tx: &mut Tx, event: &NewSluiceEvent, now: i64) -> Result<(), StoreError> {
    guard::check("event.data", &event.data)?;
    tx.appended_events();
    tx.execute(
        "INSERT INTO events (id, workspace_id, seq, attempt_id, type, occurred_at, message, data) \
         VALUES ($1, $2, NULL, $3, $4, $5, $6, $7)",
        args![
            new_id("evt"),
            event.workspace_id.clone(),
            event.attempt_id.clone(),
            event.event_type.as_str(),
            now,
            event.message.clone(),
            event.data.to_string()
        ],
    )
    .await?;
    Ok(())
}
