//! `/v1/workspaces/{id}/files`: the live worktree's files, in and out. A
//! file's bytes are streamed both ways (up to [`MAX_UPLOAD_BYTES`] in,
//! `Range` out); a directory is listed; entries are made, moved and
//! removed. Every path is relative to the worktree and stays in it: the
//! API refuses an absolute path, a `..` or a NUL before anything is sent,
//! and the executor's daemon resolves each path beneath the worktree, as
//! the workload, refusing a symlink that leads out.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use sluice_domain::ids::{OwnerId, WorkspaceId};
use sluice_executor::files::FileError;
use sluice_protocol::worktree::{FileOp, MAX_DEPTH};

use crate::AppState;
use crate::error::responses::{Conflict, Internal, InvalidRequest, NotFound, Unauthenticated};
use crate::error::{ApiError, Code};
use crate::extract::{JsonBody, QueryOf};
use crate::routes::workspaces::{control, daemon_failed, live_executor};
use crate::validate;
use crate::wire::{
    ArchiveQuery, FileListing, ListFilesQuery, MkdirRequest, MoveFileRequest, ReadFileQuery, RemoveFileRequest,
    UnpackedArchive, WaitQuery, WatchFilesQuery, WorktreeEntry, WorktreeWatchEvent, WriteFileQuery,
};
use sluice_domain::sleep::WakeCause;

/// The largest file one upload writes.
pub const MAX_UPLOAD_BYTES: u64 = 1 << 30;

/// A path as the worktree takes it: checked here so a refusal names the
/// field and nothing reaches the executor.
fn path(field: &str, path: &str) -> Result<String, ApiError> {
    if path.len() > 4096 {
        return Err(ApiError::bad_request(format!("{field} must be at most 4096 bytes")));
    }
    sluice_protocol::worktree::path_parts(path).map_err(|(_, why)| ApiError::bad_request(format!("{field}: {why}")))?;
    Ok(path.to_owned())
}

fn file_failed(e: FileError) -> ApiError {
    let FileError::Refused { code, message } = e else {
        let FileError::Executor(e) = e else { unreachable!("two kinds") };
        return daemon_failed(e);
    };
    match code.as_str() {
        "outside-worktree" | "invalid" => ApiError::bad_request(format!("path: {message}")),
        "not-found" => ApiError::WorktreeFileNotFound,
        "not-a-file" | "is-a-directory" | "not-a-directory" => ApiError::conflict(message, Some(Code::WrongFileKind)),
        "exists" => ApiError::conflict(message, Some(Code::FileExists)),
        "not-empty" => ApiError::conflict(message, Some(Code::DirectoryNotEmpty)),
        "permission-denied" => ApiError::conflict(message, Some(Code::PermissionDenied)),
        "too-large" => ApiError::PayloadTooLarge,
        _ => ApiError::conflict(message, Some(Code::DaemonRefused)),
    }
}

/// `waitFor` and `timeoutMs` of a call on the worktree.
pub(crate) fn wait_of(app: &AppState, waiting: &WaitQuery) -> Result<Option<std::time::Duration>, ApiError> {
    validate::wait_query(waiting.wait_for.as_deref(), waiting.timeout_ms.as_deref(), app.config.http.idle_timeout)
}

/// A session on the owner's workspace's live executor (after waiting for
/// it, up to `wait`, while it is still starting; a sleeping one is woken
/// by `cause` and waited for).
pub(crate) async fn session(
    app: &AppState,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
    wait: Option<std::time::Duration>,
    cause: WakeCause,
) -> Result<sluice_executor::SessionStream, ApiError> {
    let view = crate::waiting::awake(app, owner, workspace_id, cause, wait).await?;
    let (run_id, endpoint) = live_executor(&view)?;
    let target = sluice_executor::Target { run_id: &run_id, endpoint: &endpoint };
    control(app)?.open_session(target).await.map_err(daemon_failed)
}

async fn call(
    app: &AppState,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
    wait: Option<std::time::Duration>,
    op: FileOp,
) -> Result<serde_json::Value, ApiError> {
    let session = session(app, owner, workspace_id, wait, WakeCause::Files).await?;
    sluice_executor::files::call(session, op).await.map_err(file_failed)
}

fn flag(field: &str, value: Option<&str>) -> Result<bool, ApiError> {
    match value {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(ApiError::bad_request(format!("{field} must be true or false"))),
    }
}

/// Write a file of the worktree from the request's body.
#[utoipa::path(put, path = "/v1/workspaces/{workspaceId}/files", tag = "files", operation_id = "writeWorkspaceFile",
    description = "Writes the body's bytes (streamed, at most 1 GiB) to `path`, relative to the worktree, as the workload: the file is written beside its place and renamed over it once whole, so a reader never sees half of it and an upload cut short leaves nothing. `mode` (octal, default 644) is its permission bits; `parents=true` makes missing directories first. Answers the written file.",
    params(("workspaceId" = String, Path), WaitQuery, WriteFileQuery),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, body = WorktreeEntry), InvalidRequest, Unauthenticated, NotFound, Conflict, (status = 413, body = crate::error::ErrorBody), Internal),
    security(("apiToken" = [])))]
pub async fn write_file(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<WriteFileQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<WorktreeEntry>, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let path = path("path", q.path.as_deref().unwrap_or_default())?;
    if path.trim_matches('/').is_empty() {
        return Err(ApiError::bad_request("path must name a file"));
    }
    let mode = q
        .mode
        .as_deref()
        .map(|m| {
            u32::from_str_radix(m, 8)
                .ok()
                .filter(|n| *n <= 0o777 && (3..=4).contains(&m.len()))
                .ok_or_else(|| ApiError::bad_request("mode must be octal permission bits, 000 to 777"))
        })
        .transpose()?;
    let parents = flag("parents", q.parents.as_deref())?;
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_UPLOAD_BYTES) {
        return Err(ApiError::PayloadTooLarge);
    }
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Files).await?;
    let written =
        upload(session, FileOp::Write { path, mode, parents }, body, MAX_UPLOAD_BYTES).await.map_err(file_failed)?;
    Ok(Json(serde_json::from_value(written).map_err(|e| ApiError::Internal(Box::new(e)))?))
}

/// Sends `body` into `op` (a write, an unpack, a process's input) as it
/// arrives, counted: past `bound` the upload is abandoned and nothing is
/// put in place.
pub(crate) async fn upload(
    session: sluice_executor::SessionStream,
    op: impl Into<sluice_protocol::session::Open>,
    body: Body,
    bound: u64,
) -> Result<serde_json::Value, FileError> {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let feeding = async move {
        let mut stream = body.into_data_stream();
        let mut total = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    let _ = tx.send(Err(format!("the request body broke off: {e}"))).await;
                    return false;
                }
            };
            total += chunk.len() as u64;
            if total > bound {
                let _ = tx.send(Err("the body is over the upload bound".into())).await;
                return true;
            }
            if tx.send(Ok(chunk.to_vec())).await.is_err() {
                return false;
            }
        }
        false
    };
    let (written, over) = tokio::join!(sluice_executor::files::write(session, op, rx), feeding);
    if over {
        return Err(FileError::Refused { code: "too-large".into(), message: "the body is over its bound".into() });
    }
    written
}

fn declared_too_large(headers: &HeaderMap) -> bool {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    declared.is_some_and(|n| n > MAX_UPLOAD_BYTES)
}

/// A byte range asked for: `bytes=A-B`, `bytes=A-` or `bytes=-N` (one).
fn range(headers: &HeaderMap, size: u64) -> Result<Option<(u64, u64)>, u64> {
    let Some(value) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else { return Ok(None) };
    let Some(spec) = value.strip_prefix("bytes=").filter(|s| !s.contains(',')) else { return Ok(None) };
    let Some((start, end)) = spec.trim().split_once('-') else { return Ok(None) };
    let number = |s: &str| s.parse::<u64>().ok();
    let (first, last) = match (start, end) {
        ("", suffix) => match number(suffix) {
            Some(0) | None => return Err(size),
            Some(n) => (size.saturating_sub(n), size.checked_sub(1).ok_or(size)?),
        },
        (start, "") => (number(start).ok_or(size)?, size.checked_sub(1).ok_or(size)?),
        (start, end) => (number(start).ok_or(size)?, number(end).ok_or(size)?.min(size.saturating_sub(1))),
    };
    if first > last || first >= size {
        return Err(size);
    }
    Ok(Some((first, last)))
}

/// Read a file of the worktree (streamed; `Range` for a part).
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/files", tag = "files", operation_id = "readWorkspaceFile",
    description = "The file at `path` (relative to the worktree), read as the workload and streamed as it is read. A `Range: bytes=A-B` (or `A-`, or `-N`) answers 206 with that part; one that starts past the end, 416.",
    params(("workspaceId" = String, Path), WaitQuery, ReadFileQuery,
        ("Range" = Option<String>, Header, description = "One byte range, `bytes=A-B`")),
    responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, content_type = "application/octet-stream", body = Vec<u8>),
        (status = 416, body = crate::error::ErrorBody),
        InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn read_file(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<ReadFileQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let path = path("path", q.path.as_deref().unwrap_or_default())?;
    let read = |offset: u64, length: Option<u64>| {
        let (app, owner, workspace_id, path) = (&app, &owner, &workspace_id, path.clone());
        async move {
            let session = session(app, owner, workspace_id, wait, WakeCause::Files).await?;
            sluice_executor::files::read(session, FileOp::Read { path, offset, length }).await.map_err(file_failed)
        }
    };
    let (reading, part) = if headers.contains_key(header::RANGE) {
        // The file's size first (a read of nothing), then the part asked for.
        let size = read(0, Some(0)).await?.head.map_or(0, |h| h.size);
        match range(&headers, size) {
            Err(size) => {
                let mut answer = ApiError::RangeNotSatisfiable.into_response();
                if let Ok(value) = HeaderValue::from_str(&format!("bytes */{size}")) {
                    answer.headers_mut().insert(header::CONTENT_RANGE, value);
                }
                return Ok(answer);
            }
            Ok(Some((first, last))) => (read(first, Some(last - first + 1)).await?, Some((first, last))),
            Ok(None) => (read(0, None).await?, None),
        }
    } else {
        (read(0, None).await?, None)
    };
    let size = reading.head.as_ref().map_or(0, |h| h.size);
    let length = part.map_or(size, |(first, last)| last - first + 1);
    // A read that breaks off ends the body with an error: never short and well-formed.
    let mut response = Response::new(Body::from_stream(stream_of(reading.chunks)));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some((first, last)) = part {
        if let Ok(value) = HeaderValue::from_str(&format!("bytes {first}-{last}/{size}")) {
            headers.insert(header::CONTENT_RANGE, value);
        }
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
    }
    Ok(response)
}

/// The read's chunks as a body stream; a read that broke off ends it
/// with an error (the connection is cut, never a short, complete answer).
fn stream_of(
    chunks: tokio::sync::mpsc::Receiver<Result<Vec<u8>, FileError>>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::unfold(chunks, |mut chunks| async move {
        let next = chunks.recv().await?;
        Some((next.map_err(|e| std::io::Error::other(e.to_string())), chunks))
    })
}

/// List a directory of the worktree.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/files/list", tag = "files", operation_id = "listWorkspaceFiles",
    description = "The entries of the directory at `path` (the worktree itself when empty), `depth` levels down (1 to 16, default 1), sorted by name, at most 10,000 (`truncated` says when there were more). Each names its path from the listed directory (`nameHex`, hex of its bytes, when that is not UTF-8), its kind, size, permission bits and modification time. Symlinks are listed, never followed.",
    params(("workspaceId" = String, Path), WaitQuery, ListFilesQuery),
    responses((status = 200, body = FileListing), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn list_files(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<ListFilesQuery>,
) -> Result<Json<FileListing>, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let path = path("path", q.path.as_deref().unwrap_or_default())?;
    let depth = match q.depth.as_deref() {
        None => 1,
        Some(d) => d
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_DEPTH).contains(n))
            .ok_or_else(|| ApiError::bad_request(format!("depth must be a whole number from 1 to {MAX_DEPTH}")))?,
    };
    let listing = call(&app, &owner, &workspace_id, wait, FileOp::List { path, depth }).await?;
    Ok(Json(serde_json::from_value(listing).map_err(|e| ApiError::Internal(Box::new(e)))?))
}

/// Make a directory in the worktree.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/files/mkdir", tag = "files", operation_id = "makeWorkspaceDirectory",
    description = "Makes the directory `path`; with `parents`, the missing ones above it too (and an existing one is no error).",
    params(("workspaceId" = String, Path), WaitQuery), request_body = MkdirRequest,
    responses((status = 204), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn make_directory(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    JsonBody(req): JsonBody<MkdirRequest>,
) -> Result<StatusCode, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = req.owner_user_id.into_id();
    let path = path("path", &req.path)?;
    call(&app, &owner, &workspace_id, wait, FileOp::Mkdir { path, parents: req.parents.unwrap_or(false) }).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Move (rename) an entry of the worktree.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/files/move", tag = "files", operation_id = "moveWorkspaceFile",
    description = "Moves `from` to `to` (both in the worktree); 409 `file-exists` when `to` exists, unless `overwrite`. A symlink is moved itself, never followed.",
    params(("workspaceId" = String, Path), WaitQuery), request_body = MoveFileRequest,
    responses((status = 204), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn move_file(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    JsonBody(req): JsonBody<MoveFileRequest>,
) -> Result<StatusCode, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = req.owner_user_id.into_id();
    let (from, to) = (path("from", &req.from)?, path("to", &req.to)?);
    call(&app, &owner, &workspace_id, wait, FileOp::Move { from, to, overwrite: req.overwrite.unwrap_or(false) })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Remove an entry of the worktree.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/files/remove", tag = "files", operation_id = "removeWorkspaceFile",
    description = "Removes `path`: a file or symlink (the link, not what it points at), an empty directory, or with `recursive` a directory and all it holds.",
    params(("workspaceId" = String, Path), WaitQuery), request_body = RemoveFileRequest,
    responses((status = 204), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn remove_file(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    JsonBody(req): JsonBody<RemoveFileRequest>,
) -> Result<StatusCode, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = req.owner_user_id.into_id();
    let path = path("path", &req.path)?;
    call(&app, &owner, &workspace_id, wait, FileOp::Remove { path, recursive: req.recursive.unwrap_or(false) }).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unpack a tar archive into a directory of the worktree.
#[utoipa::path(put, path = "/v1/workspaces/{workspaceId}/files/archive", tag = "files", operation_id = "unpackWorkspaceArchive",
    description = "Unpacks the body, a tar archive (streamed, at most 1 GiB), into the directory `path` (made when missing), as the workload. The archive is kept aside whole and every member checked before anything is written: a member whose path leaves the directory, or lies under one of the archive's own symlinks, refuses it all (400). Files are each put in place whole, with their permission bits; directories and symlinks (as links) are made; other members (devices, fifos, hard links) are left out and counted.",
    params(("workspaceId" = String, Path), WaitQuery, ArchiveQuery),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "A tar archive"),
    responses((status = 200, body = UnpackedArchive), InvalidRequest, Unauthenticated, NotFound, Conflict, (status = 413, body = crate::error::ErrorBody), Internal),
    security(("apiToken" = [])))]
pub async fn unpack_archive(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<ArchiveQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<UnpackedArchive>, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let path = path("path", q.path.as_deref().unwrap_or_default())?;
    if declared_too_large(&headers) {
        return Err(ApiError::PayloadTooLarge);
    }
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Files).await?;
    let unpacked = upload(session, FileOp::Unpack { path }, body, MAX_UPLOAD_BYTES).await.map_err(file_failed)?;
    Ok(Json(serde_json::from_value(unpacked).map_err(|e| ApiError::Internal(Box::new(e)))?))
}

/// Pack a directory of the worktree as a tar archive.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/files/archive", tag = "files", operation_id = "packWorkspaceArchive",
    description = "The directory `path` (the worktree itself when empty) as a tar archive (POSIX pax: any names, millisecond times), streamed as it is packed, read as the workload: directories, files with their permission bits, symlinks as links (never followed); other entries are left out. A pack that breaks off cuts the answer: it is never short and well-formed.",
    params(("workspaceId" = String, Path), WaitQuery, ArchiveQuery),
    responses((status = 200, content_type = "application/x-tar", body = Vec<u8>), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn pack_archive(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<ArchiveQuery>,
) -> Result<Response, ApiError> {
    let wait = wait_of(&app, &waiting)?;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let path = path("path", q.path.as_deref().unwrap_or_default())?;
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Files).await?;
    let reading = sluice_executor::files::read(session, FileOp::Pack { path }).await.map_err(file_failed)?;
    let mut response = Response::new(Body::from_stream(stream_of(reading.chunks)));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-tar"));
    Ok(response)
}

/// Changes under a directory of the worktree as they happen (Server-Sent Events).
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/files/watch", tag = "files", operation_id = "watchWorkspaceFiles",
    description = "Changes under the directory `path` (the worktree itself when empty; `recursive=true` for every directory below it, as they come and go) as the kernel reports them, as Server-Sent Events: `event:` is `created`, `modified` (written and closed, or its metadata changed), `removed`, `renamed` (`from` names where it was) or `overflow` (changes were lost: read what is there again); `data:` is `{\"kind\", \"path\", \"from\"?, \"directory\"}`, paths relative to the watched directory. Read as the workload; symlinks are never followed. The stream ends with the executor. A comment `heartbeat` is sent while nothing happens.",
    params(("workspaceId" = String, Path), WaitQuery, WatchFilesQuery),
    responses((status = 200, content_type = "text/event-stream", body = WorktreeWatchEvent),
        InvalidRequest, Unauthenticated, NotFound, Conflict, (status = 503, body = crate::error::ErrorBody), Internal),
    security(("apiToken" = [])))]
pub async fn watch_files(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(waiting): QueryOf<WaitQuery>,
    QueryOf(q): QueryOf<WatchFilesQuery>,
) -> Result<
    axum::response::sse::Sse<impl futures::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>>,
    ApiError,
> {
    let wait = wait_of(&app, &waiting)?;
    use axum::response::sse::{Event, KeepAlive, Sse};
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let path = path("path", q.path.as_deref().unwrap_or_default())?;
    let recursive = flag("recursive", q.recursive.as_deref())?;
    let slot = app
        .streams
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::ServiceUnavailable("too many streams are open here; reconnect shortly".into()))?;
    let session = session(&app, &owner, &workspace_id, wait, WakeCause::Files).await?;
    let reading =
        sluice_executor::files::read(session, FileOp::Watch { path, recursive }).await.map_err(file_failed)?;
    let events = futures::stream::unfold((reading.chunks, slot), |(mut chunks, slot)| async move {
        let change = chunks.recv().await?.ok()?;
        let parsed = serde_json::from_slice::<sluice_protocol::worktree::WatchEvent>(&change).ok()?;
        let kind = serde_json::to_value(parsed.kind).ok()?.as_str()?.to_owned();
        let data = serde_json::to_string(&parsed).ok()?;
        Some((Ok(Event::default().event(kind).data(data)), (chunks, slot)))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)).text("heartbeat")))
}
