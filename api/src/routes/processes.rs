//! `/v1/workspaces/{id}/processes`: processes that keep running. The
//! executor's daemon owns them (they outlive the request, any exec, and a
//! restart of the API or its worker) and runs them as the workload through
//! the same gate as every command; a final flush stops them like every
//! other writer. Their output is kept on the executor's disk (its newest
//! 4 MiB) and read from a position, as it comes.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use sluice_domain::ids::WorkspaceId;
use sluice_domain::sleep::WakeCause;
use sluice_executor::files::FileError;
use sluice_protocol::background::{OutputItem, ProcessInfo, ProcessOp, StartRequest};

use crate::AppState;
use crate::error::responses::{Conflict, Internal, InvalidRequest, NotFound, Unauthenticated};
use crate::error::{ApiError, Code};
use crate::extract::{JsonBody, QueryOf};
use crate::routes::files::{session, upload, wait_of};
use crate::routes::workspaces::daemon_failed;
use crate::validate;
use crate::wire::{
    ListProcessesResponse, OwnerQuery, ProcessOutputEvent, ProcessOutputQuery, ProcessRecord, ProcessStdinQuery,
    SignalProcessRequest, StartProcessRequest, WaitQuery,
};

/// The most input one call writes to a process.
const MAX_STDIN_BYTES: u64 = 16 << 20;

fn process_failed(e: FileError) -> ApiError {
    match e {
        FileError::Executor(e) => daemon_failed(e),
        FileError::Refused { code, message } => match code.as_str() {
            "not-found" => ApiError::ProcessNotFound,
            "invalid" => ApiError::bad_request(message),
            "too-large" => ApiError::PayloadTooLarge,
            _ => ApiError::conflict(message, Some(Code::DaemonRefused)),
        },
    }
}

fn record(info: ProcessInfo) -> ProcessRecord {
    ProcessRecord::of(info)
}

/// Start a process that keeps running.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/processes", tag = "processes", operation_id = "startProcess",
    description = "Starts `argv` (no shell) in the workspace's executor, in `cwd` (relative to the worktree), with the workspace's environment and `env`, as the workload. It keeps running after this answer and any exec, until it exits, is signalled, or the workspace stops (a stop's final flush ends it like every writer, and the drain saves what it wrote). Starting one counts as use of the workspace.",
    params(("workspaceId" = String, Path), WaitQuery), request_body = StartProcessRequest,
    responses((status = 201, body = ProcessRecord), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn start_process(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    JsonBody(req): JsonBody<StartProcessRequest>,
) -> Result<(StatusCode, Json<ProcessRecord>), ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = req.owner_user_id.into_id();
    if req.argv.is_empty() || req.argv.len() > 256 || req.argv[0].is_empty() {
        return Err(ApiError::bad_request("argv must name a program, with at most 255 arguments"));
    }
    if req.argv.iter().any(|a| a.len() > 64 * 1024 || a.contains('\0')) {
        return Err(ApiError::bad_request("argv: each argument is at most 64 KiB, with no NUL"));
    }
    if let Some(cwd) = &req.cwd {
        validate::text("cwd", cwd, 4096)?;
    }
    let name = req.name.as_deref().map(|n| validate::label("name", n)).transpose()?;
    let env = req.env.unwrap_or_default();
    for (key, value) in &env {
        if !sluice_store::spec::env_name_ok(key) || value.contains('\0') {
            return Err(ApiError::bad_request("env: names are [A-Za-z_][A-Za-z0-9_]*, values hold no NUL"));
        }
    }
    let request = StartRequest { argv: req.argv, cwd: req.cwd, env, name };
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Process).await?;
    let started = sluice_executor::files::call(session, ProcessOp::Start { request }).await.map_err(process_failed)?;
    let info: ProcessInfo = serde_json::from_value(started).map_err(|e| ApiError::Internal(Box::new(e)))?;
    Ok((StatusCode::CREATED, Json(record(info))))
}

/// The workspace's processes, oldest first.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/processes", tag = "processes", operation_id = "listProcesses",
    params(("workspaceId" = String, Path), WaitQuery, OwnerQuery),
    responses((status = 200, body = ListProcessesResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn list_processes(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<ListProcessesResponse>, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Process).await?;
    let listed = sluice_executor::files::call(session, ProcessOp::List).await.map_err(process_failed)?;
    let processes: Vec<ProcessInfo> =
        serde_json::from_value(listed["processes"].clone()).map_err(|e| ApiError::Internal(Box::new(e)))?;
    Ok(Json(ListProcessesResponse { items: processes.into_iter().map(record).collect() }))
}

/// Send a signal to a process (its process group).
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/processes/{processId}/signal", tag = "processes", operation_id = "signalProcess",
    params(("workspaceId" = String, Path), WaitQuery, ("processId" = String, Path)), request_body = SignalProcessRequest,
    responses((status = 200, body = ProcessRecord), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn signal_process(
    State(app): State<AppState>,
    Path((workspace_id, process_id)): Path<(WorkspaceId, String)>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    JsonBody(req): JsonBody<SignalProcessRequest>,
) -> Result<Json<ProcessRecord>, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = req.owner_user_id.into_id();
    let signal = req.signal.trim_start_matches("SIG").to_owned();
    if sluice_protocol::session::signal_number(&signal).is_none() {
        return Err(ApiError::bad_request("signal must be one of HUP, INT, QUIT, KILL, USR1, USR2, PIPE, ALRM, TERM"));
    }
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Process).await?;
    let op = ProcessOp::Signal { id: process_id, signal };
    let info = sluice_executor::files::call(session, op).await.map_err(process_failed)?;
    Ok(Json(record(serde_json::from_value(info).map_err(|e| ApiError::Internal(Box::new(e)))?)))
}

/// Write to a process's input.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/processes/{processId}/stdin", tag = "processes", operation_id = "writeProcessStdin",
    description = "Writes the body's bytes (at most 16 MiB) to the process's standard input; `eof=true` closes it after them.",
    params(("workspaceId" = String, Path), WaitQuery, ("processId" = String, Path), ProcessStdinQuery),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 204), InvalidRequest, Unauthenticated, NotFound, Conflict, (status = 413, body = crate::error::ErrorBody), Internal),
    security(("apiToken" = [])))]
pub async fn write_stdin(
    State(app): State<AppState>,
    Path((workspace_id, process_id)): Path<(WorkspaceId, String)>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<ProcessStdinQuery>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let eof = match q.eof.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::bad_request("eof must be true or false")),
    };
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Process).await?;
    upload(session, ProcessOp::Stdin { id: process_id, eof }, body, MAX_STDIN_BYTES).await.map_err(process_failed)?;
    Ok(StatusCode::NO_CONTENT)
}

/// A process's output, from a position, as it comes (Server-Sent Events).
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/processes/{processId}/output", tag = "processes", operation_id = "processOutput",
    description = "The process's kept output after `Last-Event-ID` (a position; from what is kept when absent) as Server-Sent Events: `event: stdout` or `stderr` with `data: {\"text\"}` and `id:` the position after it; `event: cut` (`data: {\"from\", \"to\"}`) when output before what is kept was asked for (the newest 4 MiB is kept); with `follow=true` then each new chunk as it comes; `event: ended` (`data:` the process) once it has ended, and the stream closes. Without `follow` the stream closes once what is kept was sent.",
    params(("workspaceId" = String, Path), WaitQuery, ("processId" = String, Path), ProcessOutputQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "The last position received")),
    responses((status = 200, content_type = "text/event-stream", body = ProcessOutputEvent),
        InvalidRequest, Unauthenticated, NotFound, Conflict, (status = 503, body = crate::error::ErrorBody), Internal),
    security(("apiToken" = [])))]
pub async fn process_output(
    State(app): State<AppState>,
    Path((workspace_id, process_id)): Path<(WorkspaceId, String)>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<ProcessOutputQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let follow = match q.follow.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::bad_request("follow must be true or false")),
    };
    let after = crate::extract::last_position(&headers, "the process's output")?.unwrap_or(0);
    let slot = app
        .streams
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::ServiceUnavailable("too many streams are open here; reconnect shortly".into()))?;
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Process).await?;
    let op = ProcessOp::Output { id: process_id, after, follow };
    let reading = sluice_executor::files::read(session, op).await.map_err(process_failed)?;
    let events = futures::stream::unfold((reading.chunks, slot), |(mut chunks, slot)| async move {
        let item = chunks.recv().await?.ok()?;
        let event = match serde_json::from_slice::<OutputItem>(&item).ok()? {
            OutputItem::Output { stream, text, position } => Event::default()
                .id(position.to_string())
                .event(stream)
                .data(serde_json::json!({ "text": text }).to_string()),
            OutputItem::Cut { from, to } => {
                Event::default().event("cut").data(serde_json::json!({ "from": from, "to": to }).to_string())
            }
            OutputItem::Ended { process } => {
                Event::default().event("ended").data(serde_json::to_string(&record(process)).ok()?)
            }
        };
        Some((Ok(event), (chunks, slot)))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)).text("heartbeat")))
}
