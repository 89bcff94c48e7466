//! Requests that wait for a workspace to change (a create or read with
//! `waitFor`, an exec on a workspace still starting). A waiter holds no
//! transaction and no worker: it registers its workspace here, reads the
//! workspace, and reads it again only when told that an event was recorded
//! for it. One task per API process hears for every waiter: PostgreSQL
//! announces each event's workspace as its transaction commits, and the
//! events feed is read after a cursor (one query for all waiters) as the
//! fallback, and as the only way on SQLite. A commit of this process that
//! recorded events has the feed read at once. A thousand waiters on one
//! process cost one feed read per tick (or commit) and a wake each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_domain::ids::{OwnerId, WorkspaceId};
use sluice_domain::sleep::{WakeCause, Wakefulness, wakefulness};
use sluice_domain::transition::{Answer, Request};
use sluice_store::event_feed::FeedCursor;
use sluice_store::{Store, WorkspaceView};
use tokio::sync::Notify;

/// How often the feed is read while someone waits and the database does
/// not announce (SQLite, or PostgreSQL's announcements lost): a read of
/// the events past a position, by its index, and only while a waiter is
/// there; a create's `waitFor` answers within this of its workspace's
/// change.
const UNANNOUNCED_TICK: Duration = Duration::from_millis(25);
/// How often the feed is read while PostgreSQL announces: a backstop for
/// announcements missed while its connection was made again.
const ANNOUNCED_TICK: Duration = Duration::from_secs(2);
/// Events one feed read takes.
const FEED_BATCH: i64 = 500;

/// Every waiter of this process, by workspace.
#[derive(Clone)]
pub(crate) struct Waiters {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters").finish_non_exhaustive()
    }
}

struct Shared {
    state: Mutex<Registry>,
    /// Told when the first waiter arrives, so an idle hearer starts reading.
    arrived: Notify,
    started: std::sync::Once,
}

#[derive(Default)]
struct Registry {
    /// Where the feed is read from; `None` while nobody waits.
    cursor: Option<FeedCursor>,
    by_workspace: HashMap<WorkspaceId, Vec<(u64, Arc<Notify>)>>,
    next_id: u64,
}

/// One waiter's registration: dropped, it is gone.
pub(crate) struct Watch {
    shared: Arc<Shared>,
    workspace_id: WorkspaceId,
    id: u64,
    notify: Arc<Notify>,
}

impl Watch {
    /// Returns once an event was recorded for the workspace since the last
    /// return (or since registering).
    pub(crate) async fn changed(&self) {
        self.notify.notified().await;
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut registry = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = registry.by_workspace.get_mut(&self.workspace_id) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                registry.by_workspace.remove(&self.workspace_id);
            }
        }
    }
}

impl Waiters {
    pub(crate) fn new() -> Waiters {
        Waiters {
            shared: Arc::new(Shared {
                state: Mutex::new(Registry::default()),
                arrived: Notify::new(),
                started: std::sync::Once::new(),
            }),
        }
    }

    /// Registers a waiter on `workspace_id`. Call it before reading the
    /// workspace: every event recorded after that read wakes the waiter.
    pub(crate) async fn watch(
        &self,
        store: &Store,
        workspace_id: &WorkspaceId,
    ) -> Result<Watch, sluice_store::StoreError> {
        let store_for_hearer = store.clone();
        let shared = self.shared.clone();
        self.shared.started.call_once(move || {
            tokio::spawn(hear(shared, store_for_hearer));
        });
        // Everything readable before this point is in the waiter's own read.
        let end = store.feed_end().await?;
        let notify = Arc::new(Notify::new());
        let mut registry = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        registry.cursor = Some(registry.cursor.map_or(end, |cursor| cursor.min(end)));
        registry.next_id += 1;
        let id = registry.next_id;
        registry.by_workspace.entry(workspace_id.clone()).or_default().push((id, notify.clone()));
        drop(registry);
        self.shared.arrived.notify_one();
        Ok(Watch { shared: self.shared.clone(), workspace_id: workspace_id.clone(), id, notify })
    }
}

impl Shared {
    fn wake(&self, workspace_id: &WorkspaceId) {
        let registry = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for (_, notify) in registry.by_workspace.get(workspace_id).into_iter().flatten() {
            notify.notify_one();
        }
    }

    fn wake_all(&self) {
        let registry = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for (_, notify) in registry.by_workspace.values().flatten() {
            notify.notify_one();
        }
    }

    /// The cursor to read from, or `None` (and forgotten) while nobody waits.
    fn cursor(&self) -> Option<FeedCursor> {
        let mut registry = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if registry.by_workspace.is_empty() {
            registry.cursor = None;
        }
        registry.cursor
    }

    fn advance(&self, to: FeedCursor) {
        let mut registry = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if registry.cursor.is_some_and(|c| c < to) {
            registry.cursor = Some(to);
        }
    }
}

/// Hears for every waiter, for as long as the process runs.
async fn hear(shared: Arc<Shared>, store: Store) {
    let mut announcements = None;
    // This process's own commits are heard without a round trip: on a
    // single process (the embedded default) that is every change.
    let mut commits = store.event_commits();
    let mut listen_again = tokio::time::Instant::now();
    loop {
        if announcements.is_none() && tokio::time::Instant::now() >= listen_again {
            match store.event_announcements().await {
                Ok(listening) => announcements = listening,
                Err(e) => tracing::warn!(error = %e, "cannot listen for events; waiters read the feed alone"),
            }
            // SQLite (`None`) never announces; PostgreSQL is tried again later.
            listen_again = tokio::time::Instant::now() + Duration::from_secs(30);
            // Anything missed while not listening is read from the feed.
            shared.wake_all();
        }
        let tick = if announcements.is_some() { ANNOUNCED_TICK } else { UNANNOUNCED_TICK };
        let Some(cursor) = shared.cursor() else {
            // Nobody waits: hold until someone does, hearing announcements
            // meanwhile so they do not pile up unread.
            tokio::select! {
                _ = shared.arrived.notified() => {}
                heard = next_announcement(&mut announcements) => if heard.is_err() { announcements = None },
                _ = commits.changed() => {}
            }
            continue;
        };
        tokio::select! {
            heard = next_announcement(&mut announcements) => match heard {
                Ok(Some(workspace_id)) => shared.wake(&workspace_id),
                Ok(None) => shared.wake_all(),
                Err(e) => {
                    tracing::warn!(error = %e, "lost the database's event announcements; reading the feed");
                    announcements = None;
                    shared.wake_all();
                }
            },
            _ = tokio::time::sleep(tick) => read_feed(&shared, &store, cursor).await,
            _ = commits.changed() => read_feed(&shared, &store, cursor).await,
            _ = shared.arrived.notified() => {}
        }
    }
}

async fn next_announcement(
    announcements: &mut Option<sluice_store::announcements::Announcements>,
) -> Result<Option<WorkspaceId>, sluice_store::StoreError> {
    match announcements {
        Some(heard) => heard.next_workspace().await,
        None => std::future::pending().await,
    }
}

/// Reads the feed after `cursor`, waking the waiters of each workspace met.
async fn read_feed(shared: &Shared, store: &Store, mut cursor: FeedCursor) {
    loop {
        let touched = match store.touched_after(cursor, FEED_BATCH).await {
            Ok(touched) => touched,
            Err(e) => {
                tracing::debug!(error = %e, "reading the feed for waiters failed; trying again next tick");
                return;
            }
        };
        for (at, workspace_id) in &touched {
            cursor = *at;
            if let Some(workspace_id) = workspace_id {
                shared.wake(workspace_id);
            }
        }
        shared.advance(cursor);
        if (touched.len() as i64) < FEED_BATCH {
            return;
        }
    }
}

/// Reads the owner's workspace, again each time it changes, until its
/// launch is no longer under way (see [`still_starting`]), `wait` has
/// passed, or the process shuts down; answers the last read.
///
/// [`still_starting`]: sluice_domain::lifecycle::still_starting
pub(crate) async fn while_starting(
    app: &crate::AppState,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
    wait: Duration,
) -> Result<WorkspaceView, crate::error::ApiError> {
    let deadline = tokio::time::Instant::now() + wait;
    let watch = app.waiters.watch(&app.store, workspace_id).await?;
    let mut closing = app.closing.clone();
    loop {
        let view = app.store.get_workspace(owner, workspace_id).await?.ok_or(crate::error::ApiError::NotFound)?;
        if !sluice_domain::lifecycle::still_starting(&view.workspace)
            || tokio::time::Instant::now() >= deadline
            || app.closing()
        {
            return Ok(view);
        }
        tokio::select! {
            _ = watch.changed() => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = shutting_down(&mut closing) => {}
        }
    }
}

/// The longest a request waits for the workspace it woke (restored from
/// its capture session's head, or relaunched on its cached disk).
pub(crate) const WAKE_WAIT: Duration = Duration::from_secs(120);

/// The longest a wake waits for a sleep still saving its work (seconds as
/// a rule; longer means its object store does not take the work now).
pub(crate) const FALLING_ASLEEP_WAIT: Duration = Duration::from_secs(30);

/// Reads the owner's workspace for a request that needs its runtime. A
/// sleeping workspace is woken (`cause` says by what) and waited for, up
/// to [`WAKE_WAIT`] or `wait` if longer; one still starting is waited for
/// up to `wait`. Anything else is answered as read (the caller says what
/// is wrong with it).
pub(crate) async fn awake(
    app: &crate::AppState,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
    cause: WakeCause,
    wait: Option<Duration>,
) -> Result<WorkspaceView, crate::error::ApiError> {
    let view = app.store.get_workspace(owner, workspace_id).await?.ok_or(crate::error::ApiError::NotFound)?;
    match wakefulness(&view.workspace) {
        Ok(Wakefulness::Asleep | Wakefulness::FallingAsleep) => {}
        Ok(Wakefulness::Awake) => {
            return match wait {
                Some(wait) => while_starting(app, owner, workspace_id, wait).await,
                None => Ok(view),
            };
        }
        Err(_) => return Ok(view),
    }
    let deadline = tokio::time::Instant::now() + wait.map_or(WAKE_WAIT, |w| w.max(WAKE_WAIT));
    let woke_at = wake(app, owner, workspace_id, cause, tokio::time::Instant::now() + FALLING_ASLEEP_WAIT).await?;
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let view = while_starting(app, owner, workspace_id, left).await?;
    if let Some(at) = woke_at.filter(|_| view.workspace.status == sluice_store::WorkspaceStatus::Ready) {
        app.config
            .metrics
            .workspace_wake_seconds
            .with_label_values(&[cause.as_str()])
            .observe(at.elapsed().as_secs_f64());
    }
    Ok(view)
}

/// Wakes the owner's workspace if it sleeps; one whose sleep is still
/// saving its work is woken once that is done (503 past `deadline`). Wakes
/// from many requests at once start one run: each is a request the store
/// judges in its own transaction, and only the first finds it asleep.
/// Answers when this call woke it (`None`: it was awake, or another woke
/// it); a workspace that is not asleep and not running is refused (409).
pub(crate) async fn wake(
    app: &crate::AppState,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
    cause: WakeCause,
    deadline: tokio::time::Instant,
) -> Result<Option<std::time::Instant>, crate::error::ApiError> {
    let watch = app.waiters.watch(&app.store, workspace_id).await?;
    let mut closing = app.closing.clone();
    loop {
        // Its new run claims the session: as a restart's, not over another
        // executor's work that is not confirmed saved.
        let view = app.store.get_workspace(owner, workspace_id).await?.ok_or(crate::error::ApiError::NotFound)?;
        if let (Ok(Wakefulness::Asleep), Some(session)) =
            (wakefulness(&view.workspace), view.workspace.spec.capture_session())
        {
            let session = sluice_domain::ids::SessionId::from(session);
            crate::takeover::check_takeover(app, owner, &session, None, None, false).await?;
        }
        let woken = app.store.request(owner, workspace_id, Request::Wake { cause }).await?;
        match woken.ok_or(crate::error::ApiError::NotFound)?.answer {
            Answer::Wake(Wakefulness::Asleep) => {
                tracing::info!(workspace = %workspace_id, %cause, "woke a sleeping workspace");
                app.work_enqueued();
                app.config.metrics.workspace_wakes.with_label_values(&[cause.as_str()]).inc();
                return Ok(Some(std::time::Instant::now()));
            }
            Answer::Wake(Wakefulness::FallingAsleep) if !app.closing() => {}
            _ => return Ok(None),
        }
        tokio::select! {
            _ = watch.changed() => {}
            _ = tokio::time::sleep_until(deadline) => return Err(falling_asleep(workspace_id)),
            _ = shutting_down(&mut closing) => return Err(falling_asleep(workspace_id)),
        }
    }
}

fn falling_asleep(workspace_id: &WorkspaceId) -> crate::error::ApiError {
    crate::error::ApiError::ServiceUnavailable(format!(
        "workspace {workspace_id} is still saving its work to go to sleep; try again shortly"
    ))
}

/// Returns once the process is shutting down (never, without a signal).
async fn shutting_down(closing: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    let heard = match closing {
        Some(rx) => rx.wait_for(|closing| *closing).await.is_ok(),
        None => false,
    };
    if !heard {
        std::future::pending::<()>().await;
    }
}
