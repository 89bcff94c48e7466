//! `/v1/capture-sessions`: the registrar's sessions, as their owners see
//! them. The daemon's side of the channel is served by the worker that runs
//! the executor, on a socket the runtime mounts into it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use futures::StreamExt;
use sluice_protocol::names::Name;
use sluice_protocol::registrar::Entry;
use sluice_store::capture::{CaptureSessionView, Retention};
use sluice_store::clock::rfc3339;

use crate::AppState;
use crate::error::ApiError;
use crate::error::responses::{Conflict, Internal, InvalidRequest, NotFound, Unauthenticated, Unavailable};
use crate::extract::{JsonBody, QueryOf};
use crate::validate;
use crate::wire::*;
use sluice_domain::ids::{OwnerId, SessionId};

/// The longest `retention.keepWithinSeconds` (its milliseconds fit a
/// database integer).
pub const MAX_KEEP_WITHIN_SECONDS: i64 = i64::MAX / 1000;

/// Create a capture session (201). Its token is shown once.
#[utoipa::path(post, path = "/v1/capture-sessions", tag = "capture", operation_id = "createCaptureSession",
    request_body = CreateCaptureSessionRequest,
    responses((status = 201, body = CreateCaptureSessionResponse), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn create_capture_session(
    State(app): State<AppState>,
    JsonBody(req): JsonBody<CreateCaptureSessionRequest>,
) -> Result<(StatusCode, Json<CreateCaptureSessionResponse>), ApiError> {
    let defaults = app.config.capture_defaults;
    let quota = match req.quota_bytes {
        Some(q) if q < 1 => return Err(ApiError::bad_request("quotaBytes must be 1 or more")),
        Some(q) => Some(q as u64),
        None => defaults.quota_bytes,
    };
    let retention = match req.retention {
        None => defaults.retention,
        Some(policy) => {
            let keep_last = match policy.keep_last {
                Some(n) if n < 1 => return Err(ApiError::bad_request("retention.keepLast must be 1 or more")),
                other => other.map(|n| n as u64),
            };
            let keep_within_ms = match policy.keep_within_seconds {
                Some(s) if !(0..=MAX_KEEP_WITHIN_SECONDS).contains(&s) => {
                    return Err(ApiError::bad_request(format!(
                        "retention.keepWithinSeconds must be 0 to {MAX_KEEP_WITHIN_SECONDS}"
                    )));
                }
                other => other.map(|s| s as u64 * 1000),
            };
            // Neither rule: every capture is kept.
            Retention { keep_last, keep_within_ms }
        }
    };
    let (session, token) = app.store.create_capture_session(&req.owner_user_id.into_id(), quota, retention).await?;
    let body = CreateCaptureSessionResponse {
        session_id: session.id.to_string(),
        worktree_id: session.worktree_id,
        token: token.expose().clone(),
    };
    Ok((StatusCode::CREATED, Json(body)))
}

/// Delete a capture session with its captures (204): its objects are
/// collected once no kept capture of any session names them, so a fork of
/// it keeps what it shares. 409 `session-in-use` while a workspace that has
/// not ended names it.
#[utoipa::path(delete, path = "/v1/capture-sessions/{sessionId}", tag = "capture", operation_id = "deleteCaptureSession",
    params(("sessionId" = String, Path), OwnerQuery),
    responses((status = 204), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn delete_capture_session(
    State(app): State<AppState>,
    Path(session_id): Path<SessionId>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<StatusCode, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    match app.store.delete_capture_session(&owner, &session_id).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::SessionNotFound),
    }
}

/// Read a capture session: its epoch, head, quota, newest captures and
/// final seal. The token never appears.
#[utoipa::path(get, path = "/v1/capture-sessions/{sessionId}", tag = "capture", operation_id = "getCaptureSession",
    params(("sessionId" = String, Path), OwnerQuery),
    responses((status = 200, body = CaptureSessionResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn get_capture_session(
    State(app): State<AppState>,
    Path(session_id): Path<SessionId>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<CaptureSessionResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let view = app.store.get_capture_session(&owner, &session_id).await?.ok_or(ApiError::SessionNotFound)?;
    Ok(Json(session_response(view)))
}

/// A session's kept captures, oldest first, a page at a time: when each was
/// made, by which executor, and what it holds and changed.
#[utoipa::path(get, path = "/v1/capture-sessions/{sessionId}/captures", tag = "capture",
    operation_id = "listCaptures",
    params(("sessionId" = String, Path), CaptureListQuery),
    responses((status = 200, body = CaptureTimelineResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn list_captures(
    State(app): State<AppState>,
    Path(session_id): Path<SessionId>,
    QueryOf(q): QueryOf<CaptureListQuery>,
) -> Result<Json<CaptureTimelineResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let limit = validate::limit(q.limit.as_deref())? as u64;
    let after = match q.after.as_deref() {
        None => 0,
        Some(text) => chain_position(text, "after")?,
    };
    let page =
        app.store.list_captures(&owner, &session_id, after, limit + 1).await?.ok_or(ApiError::SessionNotFound)?;
    let more = page.len() as u64 > limit;
    let captures: Vec<CaptureTimelineEntry> = page
        .into_iter()
        .take(limit as usize)
        .map(|c| CaptureTimelineEntry {
            n: c.n,
            epoch: c.epoch,
            registered_at: rfc3339(c.registered_at),
            executor_id: c.run_id.to_string(),
            launch: c.launch.to_string(),
            origin: c.origin,
            classes: c.classes,
            bytes: c.bytes,
            files: c.counts.map(|k| k.files),
            added: c.counts.map(|k| k.added),
            changed: c.counts.map(|k| k.changed),
            removed: c.counts.map(|k| k.removed),
            restored_from: c.restored_from,
        })
        .collect();
    let next_after = if more { captures.last().map(|c| c.n) } else { None };
    Ok(Json(CaptureTimelineResponse { captures, next_after }))
}

/// The most paths a diff lists.
pub const MAX_DIFF_PATHS: usize = 10_000;

/// What differs between two kept captures of a session: the paths added,
/// changed (content, mode, kind, link or time) and removed, over both classes.
#[utoipa::path(get, path = "/v1/capture-sessions/{sessionId}/captures/{n}/diff", tag = "capture",
    operation_id = "diffCaptures",
    params(("sessionId" = String, Path), ("n" = u64, Path), CaptureDiffQuery),
    responses((status = 200, body = CaptureDiffResponse), InvalidRequest, Unauthenticated, NotFound, Unavailable,
        Internal),
    security(("apiToken" = [])))]
pub async fn diff_captures(
    State(app): State<AppState>,
    Path((session_id, n)): Path<(SessionId, String)>,
    QueryOf(q): QueryOf<CaptureDiffQuery>,
) -> Result<Json<CaptureDiffResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let n = chain_position(&n, "n")?;
    let newer = tree(&app, &owner, &session_id, n).await?;
    let against = match q.against.as_deref() {
        Some(text) => chain_position(text, "against")?,
        None => {
            // The kept capture before n, if any.
            let before = app.store.list_captures(&owner, &session_id, 0, u64::MAX >> 2).await?.unwrap_or_default();
            before.iter().filter(|c| c.n < n).map(|c| c.n).max().unwrap_or(0)
        }
    };
    let older = if against == 0 { Default::default() } else { tree(&app, &owner, &session_id, against).await? };
    let merged = |t: &sluice_capture_store::reader::CaptureTree| -> std::collections::BTreeMap<Name, Entry> {
        t.small.entries.iter().chain(&t.bulk.entries).map(|e| (e.path.clone(), e.clone())).collect()
    };
    let (old, new) = (merged(&older), merged(&newer));
    let mut diff = CaptureDiffResponse {
        n,
        against,
        added: Vec::new(),
        changed: Vec::new(),
        removed: Vec::new(),
        added_count: 0,
        changed_count: 0,
        removed_count: 0,
        truncated: false,
    };
    let mut listed = 0usize;
    let mut list = |paths: &mut Vec<Name>, count: &mut u64, path: &Name| {
        *count += 1;
        if listed < MAX_DIFF_PATHS {
            paths.push(path.clone());
            listed += 1;
        }
    };
    for (path, entry) in &new {
        match old.get(path) {
            None => list(&mut diff.added, &mut diff.added_count, path),
            Some(before) if before != entry => list(&mut diff.changed, &mut diff.changed_count, path),
            Some(_) => {}
        }
    }
    for path in old.keys().filter(|p| !new.contains_key(*p)) {
        list(&mut diff.removed, &mut diff.removed_count, path);
    }
    diff.truncated = listed < (diff.added_count + diff.changed_count + diff.removed_count) as usize;
    Ok(Json(diff))
}

/// One file of a kept capture, its bytes as captured (a hole reads as
/// zeros). Objects are read one at a time as the body is sent.
#[utoipa::path(get, path = "/v1/capture-sessions/{sessionId}/captures/{n}/files", tag = "capture",
    operation_id = "readCaptureFile",
    params(("sessionId" = String, Path), ("n" = u64, Path), CaptureFileQuery),
    responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>,
        description = "The file's bytes"), InvalidRequest, Unauthenticated, NotFound, Unavailable, Internal),
    security(("apiToken" = [])))]
pub async fn read_capture_file(
    State(app): State<AppState>,
    Path((session_id, n)): Path<(SessionId, String)>,
    QueryOf(q): QueryOf<CaptureFileQuery>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let n = chain_position(&n, "n")?;
    let wanted = match (q.path.filter(|p| !p.is_empty()), q.path_hex) {
        (Some(path), None) => Name::from(path.as_str()),
        (None, Some(hex)) => Name::from_hex(&hex)
            .filter(|n| !n.is_empty() && n.len() <= 4096)
            .ok_or_else(|| ApiError::bad_request("pathHex must be the path's bytes in hex"))?,
        _ => return Err(ApiError::bad_request("one of path and pathHex is required")),
    };
    let tree = tree(&app, &owner, &session_id, n).await?;
    let entry = tree
        .small
        .entries
        .iter()
        .chain(&tree.bulk.entries)
        .find(|e| e.path == wanted && e.kind == sluice_protocol::registrar::EntryKind::File)
        .cloned()
        .ok_or(ApiError::FileNotFound(n))?;
    let reader = capture_reader(&app)?;
    // The first object is read before the answer starts, so a store that is
    // away is a 503 rather than a cut body.
    let mut keys = entry.objects.clone().into_iter();
    let first = match keys.next() {
        Some(key) => Some(reader.object(&key).await.map_err(|e| {
            tracing::warn!(error = %e, "a capture's object could not be read");
            ApiError::ServiceUnavailable("the capture's objects cannot be read now; try again".into())
        })?),
        None => None,
    };
    let rest = futures::stream::unfold((reader, keys), |(reader, mut keys)| async move {
        let key = keys.next()?;
        let read = reader.object(&key).await.map_err(std::io::Error::other);
        Some((read, (reader, keys)))
    });
    let body = futures::stream::iter(first.map(Ok::<Vec<u8>, std::io::Error>)).chain(rest);
    let headers = [
        (axum::http::header::CONTENT_TYPE, "application/octet-stream".to_owned()),
        (axum::http::header::CONTENT_LENGTH, entry.size.to_string()),
    ];
    Ok((headers, axum::body::Body::from_stream(body)).into_response())
}

/// A kept capture's tree as a tar archive, streamed as it is read: the
/// worktree with names as bytes, modes, times, symlinks, hard links, fifos
/// and empty directories, and a sparse file's holes kept as holes.
#[utoipa::path(get, path = "/v1/capture-sessions/{sessionId}/captures/{n}/archive", tag = "capture",
    operation_id = "archiveCapture",
    params(("sessionId" = String, Path), ("n" = u64, Path), CaptureArchiveQuery),
    responses((status = 200, content_type = "application/x-tar", body = Vec<u8>,
        description = "The tree as a POSIX pax archive"), InvalidRequest, Unauthenticated, NotFound, Unavailable, Internal),
    security(("apiToken" = [])))]
pub async fn archive_capture(
    State(app): State<AppState>,
    Path((session_id, n)): Path<(SessionId, String)>,
    QueryOf(q): QueryOf<CaptureArchiveQuery>,
) -> Result<axum::response::Response, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let n = chain_position(&n, "n")?;
    archive(&app, &owner, &session_id, n).await
}

/// The owner's session's kept capture `n` as a tar archive download.
pub(crate) async fn archive(
    app: &AppState,
    owner: &OwnerId,
    session_id: &SessionId,
    n: u64,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let tree = tree(app, owner, session_id, n).await?;
    let reader = capture_reader(app)?;
    let headers = [
        (axum::http::header::CONTENT_TYPE, "application/x-tar".to_owned()),
        (axum::http::header::CONTENT_DISPOSITION, format!("attachment; filename=\"{session_id}-{n}.tar\"")),
    ];
    Ok((headers, crate::capture_archive::body(tree, reader)).into_response())
}

/// What reads captures out of the object store, where this process has one.
fn capture_reader(app: &AppState) -> Result<std::sync::Arc<sluice_capture_store::reader::CaptureReader>, ApiError> {
    app.config.captures.clone().ok_or_else(|| {
        ApiError::ServiceUnavailable("this API process has no object store to read captures from".into())
    })
}

/// A chain position from a path or query parameter, named in a 400.
pub(crate) fn chain_position(text: &str, field: &str) -> Result<u64, ApiError> {
    text.parse::<u64>()
        .ok()
        .filter(|_| text.len() <= 18)
        .ok_or_else(|| ApiError::bad_request(format!("{field} must be a chain position (0 or more)")))
}

/// The tree of the owner's session's kept capture `n`.
async fn tree(
    app: &AppState,
    owner: &OwnerId,
    session_id: &SessionId,
    n: u64,
) -> Result<sluice_capture_store::reader::CaptureTree, ApiError> {
    let manifests = app.store.capture_manifests(owner, session_id, n).await?.ok_or(ApiError::SessionNotFound)?;
    let (small, bulk) = manifests.ok_or(ApiError::CaptureNotFound(n))?;
    let reader = capture_reader(app)?;
    reader.capture_tree(small.as_deref(), bulk.as_deref()).await.map_err(|e| {
        tracing::warn!(error = %e, "a capture's tree could not be read");
        ApiError::ServiceUnavailable("the capture's tree cannot be read now; try again".into())
    })
}

fn session_response(view: CaptureSessionView) -> CaptureSessionResponse {
    let CaptureSessionView { session, captures } = view;
    CaptureSessionResponse {
        session_id: session.id.to_string(),
        worktree_id: session.worktree_id,
        epoch: session.epoch,
        head_n: (session.head_n > 0).then_some(session.head_n),
        quota_bytes: session.quota_bytes,
        used_bytes: session.used_bytes,
        stored_bytes: session.stored_bytes,
        retention: RetentionPolicy {
            keep_last: session.retention.keep_last.map(|n| n as i64),
            keep_within_seconds: session.retention.keep_within_ms.map(|ms| (ms / 1000) as i64),
        },
        captures: captures
            .into_iter()
            .map(|c| CaptureSummary {
                n: c.n,
                epoch: c.epoch,
                launch: c.launch.to_string(),
                registered_at: rfc3339(c.registered_at),
                classes: c.classes,
                bytes: c.bytes,
            })
            .collect(),
        final_seal: session.final_seal.map(|s| CaptureFinalSeal {
            capture_n: s.capture_n,
            epoch: s.epoch,
            executor_id: s.executor_id.to_string(),
            launch_id: s.launch_id.to_string(),
            sealed_at: rfc3339(s.sealed_at),
            origin: s.origin,
        }),
    }
}
