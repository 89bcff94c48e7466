//! An exec run's output as it happens, as Server-Sent Events: each chunk
//! of each command's stdout and stderr (`id:` is its position in the run's
//! output), each command's exit, then the run's end (`event: end`, the run
//! as `GET /v1/runs/{id}` answers it) and the stream closes. Any API
//! instance serves any run's stream, from the start or after
//! `Last-Event-ID`, with no gap and no repeat: positions are the store's.
//! The stored result is unchanged; the stream is another way to read it.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::Stream;
use sluice_domain::ids::{ExecRunId, OwnerId};
use sluice_store::exec_output::{OutputKind, OutputRecord};

use crate::AppState;
use crate::error::ApiError;
use crate::extract::QueryOf;
use crate::wire::{ExecRun, OwnerQuery, RunCommandExit, RunOutputChunk, RunStreamData, RunStreamEvent};

/// How many output records one read of the store takes.
const BATCH: i64 = 500;
/// How often a stream looks for more output while nothing comes.
const POLL: Duration = Duration::from_millis(100);
/// How often an idle stream sends a heartbeat comment.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// One record as an event.
fn record_event(record: &OutputRecord) -> SseEvent {
    let data = match record.kind {
        OutputKind::Stdout | OutputKind::Stderr => {
            RunStreamData::Output(RunOutputChunk { command: record.command, text: record.body.clone() })
        }
        // Written by the run's holder in this shape; read back through it.
        OutputKind::Exit => match serde_json::from_str::<RunCommandExit>(&record.body) {
            Ok(exit) => RunStreamData::Exit(exit),
            Err(_) => RunStreamData::Exit(RunCommandExit {
                command: record.command,
                exit_code: -1,
                timed_out: false,
                stdout_truncated: false,
                stderr_truncated: false,
            }),
        },
    };
    SseEvent::default().id(record.seq.to_string()).event(record.kind.as_str()).data(text_of(&data))
}

fn run_event(name: &str, run: &sluice_store::model::ExecRun) -> SseEvent {
    SseEvent::default().event(name).data(text_of(&RunStreamData::Run(Box::new(ExecRun::of(run)))))
}

fn text_of(data: &RunStreamData) -> String {
    serde_json::to_string(data).unwrap_or_else(|_| "{}".into())
}

struct Following {
    app: AppState,
    owner: OwnerId,
    run_id: ExecRunId,
    after: i64,
    ready: VecDeque<SseEvent>,
    ended: bool,
    /// Writes of exec runs committed in this process: a run written here
    /// is streamed as soon as it is, without waiting for the next poll.
    writes: tokio::sync::watch::Receiver<u64>,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Following {
    /// Reads what is new into `ready`; `false` when the stream should end.
    async fn read(&mut self) -> bool {
        // Marked seen before the read: a write during it wakes the next wait.
        self.writes.borrow_and_update();
        match self.app.store.exec_output_after(&self.owner, &self.run_id, self.after, BATCH).await {
            Ok(Some((run, records))) => {
                for record in &records {
                    self.after = record.seq;
                    self.ready.push_back(record_event(record));
                }
                // The run was read first: ended then, its output is all in
                // reach, and a read short of the batch took the rest of it.
                if (records.len() as i64) < BATCH && run.status.is_ended() {
                    self.ready.push_back(run_event("end", &run));
                    self.ended = true;
                }
                true
            }
            // Gone, or a store fault: the client resumes from its last id.
            Ok(None) | Err(_) => false,
        }
    }

    fn into_stream(self) -> impl Stream<Item = Result<SseEvent, Infallible>> {
        futures::stream::unfold(self, |mut following| async move {
            loop {
                if let Some(next) = following.ready.pop_front() {
                    return Some((Ok(next), following));
                }
                if following.ended || following.app.closing() || !following.read().await {
                    return None;
                }
                if following.ready.is_empty() {
                    let _ = tokio::time::timeout(POLL, following.writes.changed()).await;
                }
            }
        })
    }
}

/// Opens the stream of the owner's run after `after`, starting with
/// `first` (the run as its exec answered it) when given.
pub(crate) async fn open(
    app: AppState,
    owner: OwnerId,
    run_id: ExecRunId,
    after: i64,
    first: Option<&sluice_store::model::ExecRun>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>> + use<>>, ApiError> {
    let slot = app
        .streams
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::ServiceUnavailable("too many streams are open here; reconnect shortly".into()))?;
    let writes = app.store.exec_writes();
    let mut following =
        Following { app, owner, run_id, after, ready: VecDeque::new(), ended: false, writes, _slot: slot };
    if let Some(run) = first {
        following.ready.push_back(run_event("run", run));
    }
    Ok(Sse::new(following.into_stream()).keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat")))
}

/// The run's output as it happens (Server-Sent Events).
#[utoipa::path(get, path = "/v1/runs/{runId}/stream", tag = "runs", operation_id = "streamRun",
    description = "The run's output as it happens, as Server-Sent Events, from the start or after `Last-Event-ID`: `event: stdout` and `event: stderr` (`data: {\"command\", \"text\"}`, a chunk of that command's stream, cut at character boundaries), `event: exit` (`data: {\"command\", \"exitCode\", \"timedOut\", \"stdoutTruncated\", \"stderrTruncated\"}`: a stream cut at its 1 MiB bound says so here), each with `id:` its position; then `event: end` with the run as `GET /v1/runs/{runId}` answers it, and the stream closes. A comment `heartbeat` is sent while nothing happens.",
    params(("runId" = String, Path), OwnerQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "The last position received")),
    responses((status = 200, content_type = "text/event-stream", body = RunStreamEvent),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)),
    security(("apiToken" = [])))]
pub async fn stream_run(
    State(app): State<AppState>,
    Path(run_id): Path<ExecRunId>,
    headers: HeaderMap,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let owner = q.owner_user_id.ok_or(ApiError::NotFound)?.into_id();
    let after = crate::extract::last_position(&headers, "the run's output")?.map_or(0, |p| p as i64);
    // 404 before the stream opens.
    app.store.get_exec_run(&owner, &run_id).await?.ok_or(ApiError::NotFound)?;
    open(app, owner, run_id, after, None).await
}
