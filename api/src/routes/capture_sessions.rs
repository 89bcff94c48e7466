//! `/v1/capture-sessions`: the registrar's sessions, as their owners see
//! them. The daemon's side of the channel is served by the worker that runs
//! the executor, on a socket the runtime mounts into it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use sluice_store::capture::CaptureSessionView;
use sluice_store::clock::rfc3339;

use crate::AppState;
use crate::error::ApiError;
use crate::error::responses::{Internal, InvalidRequest, NotFound, Unauthenticated};
use crate::extract::{JsonBody, QueryOf};
use crate::validate;
use crate::wire::*;

/// Create a capture session (201). Its token is shown once.
#[utoipa::path(post, path = "/v1/capture-sessions", tag = "capture", operation_id = "createCaptureSession",
    request_body = CreateCaptureSessionRequest,
    responses((status = 201, body = CreateCaptureSessionResponse), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn create_capture_session(
    State(app): State<AppState>,
    JsonBody(req): JsonBody<CreateCaptureSessionRequest>,
) -> Result<(StatusCode, Json<CreateCaptureSessionResponse>), ApiError> {
    let quota = match req.quota_bytes {
        Some(q) if q < 1 => return Err(ApiError::bad_request("quotaBytes must be 1 or more")),
        other => other.map(|q| q as u64),
    };
    let (session, token) = app.store.create_capture_session(req.owner_user_id.as_str(), quota).await?;
    let body = CreateCaptureSessionResponse {
        session_id: session.id,
        worktree_id: session.worktree_id,
        token: token.expose().clone(),
    };
    Ok((StatusCode::CREATED, Json(body)))
}

/// Read a capture session: its epoch, head, quota, newest captures and
/// final seal. The token never appears.
#[utoipa::path(get, path = "/v1/capture-sessions/{sessionId}", tag = "capture", operation_id = "getCaptureSession",
    params(("sessionId" = String, Path), OwnerQuery),
    responses((status = 200, body = CaptureSessionResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn get_capture_session(
    State(app): State<AppState>,
    Path(session_id): Path<String>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<CaptureSessionResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?;
    let view = app.store.get_capture_session(owner.as_str(), &session_id).await?.ok_or(ApiError::SessionNotFound)?;
    Ok(Json(session_response(view)))
}

fn session_response(view: CaptureSessionView) -> CaptureSessionResponse {
    let CaptureSessionView { session, captures } = view;
    CaptureSessionResponse {
        session_id: session.id,
        worktree_id: session.worktree_id,
        epoch: session.epoch,
        head_n: (session.head_n > 0).then_some(session.head_n),
        quota_bytes: session.quota_bytes,
        used_bytes: session.used_bytes,
        captures: captures
            .into_iter()
            .map(|c| CaptureSummary {
                n: c.n,
                epoch: c.epoch,
                launch: c.launch,
                registered_at: rfc3339(c.registered_at),
                classes: c.classes,
                bytes: c.bytes,
            })
            .collect(),
        final_seal: session.final_seal.map(|s| CaptureFinalSeal {
            capture_n: s.capture_n,
            epoch: s.epoch,
            executor_id: s.executor_id,
            launch_id: s.launch_id,
            sealed_at: rfc3339(s.sealed_at),
            origin: s.origin,
        }),
    }
}
