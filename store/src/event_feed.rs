//! Events read in order for streams: a workspace's after a sequence
//! number, and every workspace's after a feed cursor. The feed's order is
//! the order events became durable, so a reader that resumes from a
//! cursor meets every event once: PostgreSQL reads only events of
//! transactions that ended before every one still running, ordered by
//! (transaction, position) (see the `event_feed` migration); SQLite
//! commits positions in the order it takes them.

use crate::Store;
use crate::db::{BackendKind, args};
use crate::error::StoreError;
use crate::model::Event;
use crate::workspaces::{EVENT_COLUMNS, event_from_row};

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
    pub event: Event,
}

impl Store {
    /// The owner's workspace's events after sequence number `after`, at
    /// most `limit`; `None` if it is not the owner's.
    pub async fn events_after(
        &self,
        owner: &str,
        workspace_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Option<Vec<Event>>, StoreError> {
        if !self.owns(owner, workspace_id).await? {
            return Ok(None);
        }
        let sql = format!("SELECT {EVENT_COLUMNS} FROM events WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3");
        let rows = self.pool.fetch_all(&sql, args![workspace_id, after, limit]).await?;
        rows.iter().map(event_from_row).collect::<Result<Vec<_>, _>>().map(Some)
    }

    /// Every workspace's events after `after` in feed order, at most `limit`.
    pub async fn feed_after(&self, after: FeedCursor, limit: i64) -> Result<Vec<FeedEvent>, StoreError> {
        let sql = match self.pool.kind() {
            BackendKind::Postgres => format!(
                "SELECT {EVENT_COLUMNS}, CAST(CAST(tx_id AS TEXT) AS BIGINT) AS tx, position FROM events \
                 WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot()) \
                   AND (tx_id, position) > (CAST(CAST($1 AS TEXT) AS xid8), $2) \
                 ORDER BY tx_id, position LIMIT $3"
            ),
            BackendKind::Sqlite => format!(
                "SELECT {EVENT_COLUMNS}, 0 AS tx, position FROM events \
                 WHERE $1 = $1 AND position > $2 ORDER BY position LIMIT $3"
            ),
        };
        let rows = self.pool.fetch_all(&sql, args![after.tx.to_string(), after.position, limit]).await?;
        rows.iter()
            .map(|row| {
                Ok(FeedEvent {
                    cursor: FeedCursor { tx: row.int("tx")?, position: row.int("position")? },
                    event: event_from_row(row)?,
                })
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
