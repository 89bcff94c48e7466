//! Events read in order for streams: a workspace's after a sequence
//! number, and every workspace's after a feed cursor. The feed's order is
//! the order events became durable, so a reader that resumes from a
//! cursor meets every event once: PostgreSQL reads only events of
//! transactions that ended before every one still running, ordered by
//! (transaction, position) (see the `event_feed` migration); SQLite
//! commits positions in the order it takes them.

use serde::Serialize;
use serde_json::Value;

use crate::Store;
use crate::clock::rfc3339;
use crate::db::{BackendKind, DbRow, FeedDialect, Tx, args};
use crate::error::StoreError;
use crate::model::{Event, EventType, FeedItem, SluiceEvent, SluiceEventType};
use crate::rows::{EVENT_COLUMNS, event_from_row, parse_json};
use sluice_domain::ids::{EventId, OwnerId, RunId, WorkspaceId};

/// A place in the feed: after the event it names. Written `TX.POSITION`
/// (`0.POSITION` on SQLite).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FeedCursor {
    pub tx: i64,
    pub position: i64,
}

impl FeedCursor {
    pub fn parse(text: &str) -> Option<FeedCursor> {
        let (tx, position) = text.split_once('.')?;
        let number = |t: &str| t.parse::<i64>().ok().filter(|n| *n >= 0 && !t.starts_with('+'));
        Some(FeedCursor { tx: number(tx)?, position: number(position)? })
    }
}

impl std::fmt::Display for FeedCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.tx, self.position)
    }
}

/// An event and its place in the feed.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedEvent {
    pub cursor: FeedCursor,
    pub item: FeedItem,
}

/// A workspace event as the API lists it, streams carry it and webhooks
/// deliver it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceEvent {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub event_id: EventId,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub workspace_id: WorkspaceId,
    /// Position in the workspace's own event log, from 1.
    pub sequence: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub attempt_id: Option<RunId>,
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(rename = "type"))]
    pub event_type: EventType,
    pub occurred_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub data: Option<Value>,
}

impl From<&Event> for WorkspaceEvent {
    fn from(e: &Event) -> Self {
        WorkspaceEvent {
            event_id: e.id.clone(),
            workspace_id: e.workspace_id.clone(),
            sequence: e.seq,
            attempt_id: e.attempt_id.clone(),
            event_type: e.event_type,
            occurred_at: rfc3339(e.occurred_at),
            message: e.message.clone(),
            data: e.data.clone(),
        }
    }
}

/// One of sluice's own events as the global stream carries it and
/// webhooks deliver it: no sequence number, a `sluice.` type.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SluiceEventBody {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub event_id: EventId,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub workspace_id: Option<WorkspaceId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub attempt_id: Option<RunId>,
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(rename = "type"))]
    pub event_type: SluiceEventType,
    pub occurred_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub data: Option<Value>,
}

impl From<&SluiceEvent> for SluiceEventBody {
    fn from(e: &SluiceEvent) -> Self {
        SluiceEventBody {
            event_id: e.id.clone(),
            workspace_id: e.workspace_id.clone(),
            attempt_id: e.attempt_id.clone(),
            event_type: e.event_type,
            occurred_at: rfc3339(e.occurred_at),
            message: e.message.clone(),
            data: e.data.clone(),
        }
    }
}

impl FeedEvent {
    /// The event as streams and webhooks carry it.
    pub fn body(&self) -> Value {
        let body = match &self.item {
            FeedItem::Workspace(e) => serde_json::to_value(WorkspaceEvent::from(e)),
            FeedItem::Sluice(e) => serde_json::to_value(SluiceEventBody::from(e)),
        };
        body.expect("an event serializes")
    }
}

/// The feed's newest readable place: a reader that wants only what
/// comes next starts after it.
pub(crate) async fn feed_end(tx: &mut Tx, kind: BackendKind) -> Result<FeedCursor, StoreError> {
    cursor_of(tx.fetch_optional(&feed_end_sql(kind), args![]).await?)
}

fn feed_end_sql(kind: BackendKind) -> String {
    let FeedDialect { tx, visible, newest_first, .. } = kind.feed();
    format!("SELECT {tx} AS tx, position FROM events WHERE {visible} ORDER BY {newest_first} LIMIT 1")
}

fn cursor_of(row: Option<DbRow>) -> Result<FeedCursor, StoreError> {
    match row {
        Some(row) => Ok(FeedCursor { tx: row.int("tx")?, position: row.int("position")? }),
        None => Ok(FeedCursor::default()),
    }
}

/// A feed row: the contract's event when it has a sequence number, else
/// one of sluice's own.
fn item_from_row(row: &DbRow) -> Result<FeedItem, StoreError> {
    if row.opt_int("seq")?.is_some() {
        return Ok(FeedItem::Workspace(event_from_row(row)?));
    }
    Ok(FeedItem::Sluice(SluiceEvent {
        id: row.id("id")?,
        workspace_id: row.opt_id("workspace_id")?,
        attempt_id: row.opt_id("attempt_id")?,
        event_type: row.parsed("type")?,
        occurred_at: row.int("occurred_at")?,
        message: row.opt_text("message")?,
        data: row.opt_text("data")?.map(|d| parse_json("events.data", &d)).transpose()?,
    }))
}

impl Store {
    /// The owner's workspace's events after sequence number `after`, at
    /// most `limit`; `None` if it is not the owner's.
    pub async fn events_after(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        after: i64,
        limit: i64,
    ) -> Result<Option<Vec<Event>>, StoreError> {
        if !self.owns(owner, workspace_id).await? {
            return Ok(None);
        }
        let sql =
            format!("SELECT {EVENT_COLUMNS} FROM events WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3");
        let rows = self.pool.fetch_all(&sql, args![workspace_id, after, limit]).await?;
        rows.iter().map(event_from_row).collect::<Result<Vec<_>, _>>().map(Some)
    }

    /// A workspace's newest `limit` events, the contract's and sluice's
    /// own, oldest first (what the console shows as its timeline).
    pub async fn timeline(&self, workspace_id: &WorkspaceId, limit: i64) -> Result<Vec<FeedItem>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM (SELECT {EVENT_COLUMNS}, position FROM events WHERE workspace_id = $1 \
             ORDER BY position DESC LIMIT $2) newest ORDER BY position"
        );
        let rows = self.pool.fetch_all(&sql, args![workspace_id, limit]).await?;
        rows.iter().map(item_from_row).collect()
    }

    /// The feed's newest readable place (see [`feed_end`]).
    /// A read: it takes no write lock.
    pub async fn feed_end(&self) -> Result<FeedCursor, StoreError> {
        cursor_of(self.pool.fetch_optional(&feed_end_sql(self.pool.kind()), args![]).await?)
    }

    /// Every workspace's events and sluice's own after `after` in feed
    /// order, at most `limit`.
    pub async fn feed_after(&self, after: FeedCursor, limit: i64) -> Result<Vec<FeedEvent>, StoreError> {
        let feed = self.pool.kind().feed();
        let FeedDialect { tx, visible, order, .. } = feed;
        let sql = format!(
            "SELECT {EVENT_COLUMNS}, {tx} AS tx, position FROM events WHERE {visible} AND {} ORDER BY {order} LIMIT $3",
            feed.after
        );
        let rows = self.pool.fetch_all(&sql, args![after.tx.to_string(), after.position, limit]).await?;
        rows.iter()
            .map(|row| {
                Ok(FeedEvent {
                    cursor: FeedCursor { tx: row.int("tx")?, position: row.int("position")? },
                    item: item_from_row(row)?,
                })
            })
            .collect()
    }

    /// The workspace each event after `after` concerns, in feed order, at
    /// most `limit`, with each event's place: what a waiter on a workspace
    /// needs to hear that it changed, without reading the events.
    pub async fn touched_after(
        &self,
        after: FeedCursor,
        limit: i64,
    ) -> Result<Vec<(FeedCursor, Option<WorkspaceId>)>, StoreError> {
        let feed = self.pool.kind().feed();
        let FeedDialect { tx, visible, order, .. } = feed;
        let sql = format!(
            "SELECT workspace_id, {tx} AS tx, position FROM events WHERE {visible} AND {} ORDER BY {order} LIMIT $3",
            feed.after
        );
        let rows = self.pool.fetch_all(&sql, args![after.tx.to_string(), after.position, limit]).await?;
        rows.iter()
            .map(|row| {
                Ok((FeedCursor { tx: row.int("tx")?, position: row.int("position")? }, row.opt_id("workspace_id")?))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_as_written_and_nothing_else() {
        let cursor = FeedCursor { tx: 7812, position: 33 };
        assert_eq!(FeedCursor::parse(&cursor.to_string()), Some(cursor));
        for bad in ["", "7", "7.", ".3", "-1.3", "1.-3", "+1.3", "1.3.4", "a.b", "99999999999999999999.1"] {
            assert_eq!(FeedCursor::parse(bad), None, "{bad}");
        }
    }
}
