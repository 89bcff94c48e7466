//! Events as Server-Sent Events: a workspace's own (`id:` is its sequence
//! number) and every workspace's in feed order (`id:` is a feed cursor).
//! A stream starts after `Last-Event-ID` (a reconnecting client's), else
//! after `since`, else at the beginning; it sends what is stored, then
//! polls for more, with a heartbeat comment while nothing happens. Any API
//! instance resumes any stream: the ids are the store's, not a process's.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;
use sluice_store::event_feed::{FeedCursor, FeedEvent};
use sluice_store::model::Event;
use utoipa::IntoParams;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::QueryOf;
use crate::validate;
use crate::wire::{OwnerUserId, WorkspaceEvent};
use sluice_domain::ids::{OwnerId, WorkspaceId};

/// How many events one read of the store takes.
const BATCH: i64 = 200;
/// How often an idle stream looks for new events.
const POLL: Duration = Duration::from_millis(500);
/// How often an idle stream sends a heartbeat comment.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// The header a reconnecting client names its last event in.
const LAST_EVENT_ID: &str = "last-event-id";

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WorkspaceStreamQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// Start after this sequence number (`Last-Event-ID` wins over it).
    #[param(pattern = r"^[0-9]{1,18}$")]
    pub since: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct FeedStreamQuery {
    /// Start after this feed cursor, an event's `id:` (`Last-Event-ID` wins over it).
    #[param(pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    pub since: Option<String>,
}

/// Where a stream starts: the header, else the query, named in a refusal.
fn start_text<'a>(headers: &'a HeaderMap, since: Option<&'a str>) -> Result<Option<(&'a str, &'static str)>, ApiError> {
    match headers.get(LAST_EVENT_ID) {
        Some(value) => {
            let text = value.to_str().map_err(|_| ApiError::bad_request("Last-Event-ID is not text"))?;
            Ok(Some((text, "Last-Event-ID")))
        }
        None => Ok(since.map(|s| (s, "since"))),
    }
}

/// What a stream reads next.
enum Source {
    Workspace { owner: OwnerId, workspace_id: WorkspaceId, after: i64 },
    Feed { after: FeedCursor },
}

struct Streaming {
    app: AppState,
    source: Source,
    ready: VecDeque<SseEvent>,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

fn sse(id: String, event: &Event) -> SseEvent {
    let wire = WorkspaceEvent::from(event);
    let data = serde_json::to_string(&wire).unwrap_or_else(|_| "{}".into());
    SseEvent::default().id(id).event(event.event_type.as_str()).data(data)
}

fn feed_sse(fed: &FeedEvent) -> SseEvent {
    SseEvent::default().id(fed.cursor.to_string()).event(fed.item.type_name()).data(fed.body().to_string())
}

impl Streaming {
    /// Reads the next batch into `ready`; `false` when the stream should end.
    async fn read(&mut self) -> bool {
        let store = &self.app.store;
        match &mut self.source {
            Source::Workspace { owner, workspace_id, after } => {
                match store.events_after(owner, workspace_id, *after, BATCH).await {
                    Ok(Some(events)) => {
                        for event in &events {
                            *after = event.seq;
                            self.ready.push_back(sse(event.seq.to_string(), event));
                        }
                        true
                    }
                    // Deleted, or a store fault: the client resumes from its last id.
                    Ok(None) | Err(_) => false,
                }
            }
            Source::Feed { after } => match store.feed_after(*after, BATCH).await {
                Ok(fed) => {
                    for item in &fed {
                        *after = item.cursor;
                        self.ready.push_back(feed_sse(item));
                    }
                    true
                }
                Err(_) => false,
            },
        }
    }

    fn into_stream(self) -> impl Stream<Item = Result<SseEvent, Infallible>> {
        futures::stream::unfold(self, |mut streaming| async move {
            loop {
                if let Some(next) = streaming.ready.pop_front() {
                    return Some((Ok(next), streaming));
                }
                if streaming.app.closing() || !streaming.read().await {
                    return None;
                }
                if streaming.ready.is_empty() {
                    tokio::time::sleep(POLL).await;
                }
            }
        })
    }
}

fn open(app: AppState, source: Source) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let slot =
        app.streams.clone().try_acquire_owned().map_err(|_| {
            ApiError::ServiceUnavailable("too many event streams are open here; reconnect shortly".into())
        })?;
    let streaming = Streaming { app, source, ready: VecDeque::new(), _slot: slot };
    Ok(Sse::new(streaming.into_stream()).keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat")))
}

/// The workspace's events as they happen (Server-Sent Events).
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/events/stream", tag = "workspaces",
    operation_id = "streamWorkspaceEvents",
    description = "The workspace's events, then each new one as it is recorded, as Server-Sent Events: `id:` is the event's sequence number, `event:` its type, `data:` the event as `GET …/events` lists it. Resumes after `Last-Event-ID` (or `since`). A comment `heartbeat` is sent while nothing happens.",
    params(("workspaceId" = String, Path), WorkspaceStreamQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "The last sequence number received")),
    responses((status = 200, content_type = "text/event-stream", body = String),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)),
    security(("apiToken" = [])))]
pub async fn stream_workspace_events(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    headers: HeaderMap,
    QueryOf(q): QueryOf<WorkspaceStreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let after = match start_text(&headers, q.since.as_deref())? {
        None => 0,
        Some((text, field)) => text
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0 && text.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| ApiError::bad_request(format!("{field} must be an event's sequence number")))?,
    };
    // 404 before the stream opens: not the owner's, or no such workspace.
    app.store.events_after(&owner, &workspace_id, after, 0).await?.ok_or(ApiError::NotFound)?;
    open(app, Source::Workspace { owner, workspace_id, after })
}

/// Every workspace's events, in the order they were recorded (an
/// operators' stream).
#[utoipa::path(get, path = "/v1/events/stream", tag = "operations", operation_id = "streamEvents",
    description = "Every workspace's events and sluice's own (types starting `sluice.`: drain changes, retention, recovery attempts, captures registered, gateway sessions, webhooks disabled; they carry no `sequence`) in the order they became durable, then each new one, as Server-Sent Events: `id:` is a feed cursor (`TX.POSITION`), `event:` the type, `data:` the event. Resumes after `Last-Event-ID` (or `since`) with no gap and no repeat, on any API instance and across restarts. A comment `heartbeat` is sent while nothing happens.",
    params(FeedStreamQuery, ("Last-Event-ID" = Option<String>, Header, description = "The last feed cursor received")),
    responses((status = 200, content_type = "text/event-stream", body = String),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)),
    security(("apiToken" = [])))]
pub async fn stream_events(
    State(app): State<AppState>,
    headers: HeaderMap,
    QueryOf(q): QueryOf<FeedStreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let after = match start_text(&headers, q.since.as_deref())? {
        None => FeedCursor::default(),
        Some((text, field)) => FeedCursor::parse(text)
            .ok_or_else(|| ApiError::bad_request(format!("{field} must be an event's feed id (TX.POSITION)")))?,
    };
    open(app, Source::Feed { after })
}
