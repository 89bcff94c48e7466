//! What PostgreSQL announces as transactions commit, for processes that
//! would otherwise poll: a job made due (channel `sluice_jobs`, see the
//! `jobs_announce` trigger) and an event recorded (channel `sluice_events`,
//! its workspace as the payload, see the `events_announce` trigger).
//! SQLite announces nothing: its writers share one process, and its readers
//! fall back to polling.

use crate::Store;
use crate::error::StoreError;
use sluice_domain::ids::WorkspaceId;

/// The channel enqueues announce on.
const JOBS_CHANNEL: &str = "sluice_jobs";
/// The channel recorded events announce their workspace on.
const EVENTS_CHANNEL: &str = "sluice_events";

/// Announcements heard from PostgreSQL on one channel.
pub struct Announcements {
    listener: crate::db::Listener,
}

impl Announcements {
    /// Waits for the next announcement. A connection that was lost and made
    /// again may have missed some, so its return counts as one too.
    pub async fn next(&mut self) -> Result<(), StoreError> {
        self.listener.try_recv().await?;
        Ok(())
    }

    /// Waits for the next event announcement: the workspace it concerns,
    /// or `None` when that is not known (an event of no workspace, or a
    /// connection made again that may have missed some).
    pub async fn next_workspace(&mut self) -> Result<Option<WorkspaceId>, StoreError> {
        Ok(self
            .listener
            .try_recv()
            .await?
            .map(|n| n.payload().to_owned())
            .filter(|payload| !payload.is_empty())
            .map(WorkspaceId::from))
    }
}

impl Store {
    /// Listens for job announcements: `None` on SQLite, whose workers share
    /// the process that enqueues and are woken by it directly.
    pub async fn job_announcements(&self) -> Result<Option<Announcements>, StoreError> {
        Ok(self.pool.listen(JOBS_CHANNEL).await?.map(|listener| Announcements { listener }))
    }

    /// Changes once each time this process commits a transaction that
    /// recorded events: heard at once, on either backend, where waiting for
    /// an announcement (or, on SQLite, the next read of the feed) would not.
    pub fn event_commits(&self) -> tokio::sync::watch::Receiver<u64> {
        self.pool.event_commits()
    }

    /// Listens for recorded events: `None` on SQLite.
    pub async fn event_announcements(&self) -> Result<Option<Announcements>, StoreError> {
        Ok(self.pool.listen(EVENTS_CHANNEL).await?.map(|listener| Announcements { listener }))
    }
}
