//! Forks: a workspace's consistent point (a suspend flush while it keeps
//! running, or its head once its work is saved), or any kept capture,
//! branched into new capture sessions that start there and workspaces that
//! restore them. Nothing is copied: each branch's first capture names the
//! same manifest documents, and the collection keeps every object while
//! any kept capture of any session names it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::json;
use sluice_capture_store::branch::{BranchError, branch_point};
use sluice_domain::ids::{OwnerId, SessionId, WorkspaceId};
use sluice_store::{ConflictCode, NewWorkspace, Secret, SecretKind, Workspace, WorkspaceStatus};

use crate::AppState;
use crate::error::responses::{Conflict, Internal, InvalidRequest, NotFound, Unauthenticated, Unavailable};
use crate::error::{ApiError, Code};
use crate::extract::JsonBody;
use crate::routes::workspaces::{control, daemon_failed, live_executor, owned};
use crate::validate;
use crate::wire::*;

/// How long the source's suspend flush may take.
const FLUSH_DEADLINE_MS: u64 = 60_000;

/// `count` (1 to 100) and the names' prefix, checked.
fn asked(req: &ForkRequest) -> Result<(usize, Option<String>), ApiError> {
    if !(1..=100).contains(&req.count) {
        return Err(ApiError::bad_request("count must be 1 to 100"));
    }
    let prefix = req.name_prefix.as_deref().map(|p| validate::label("namePrefix", p)).transpose()?;
    if prefix.as_ref().is_some_and(|p| p.len() > 120) {
        return Err(ApiError::bad_request("namePrefix must be at most 120 characters"));
    }
    Ok((req.count as usize, prefix))
}

/// Fork a capture-sourced workspace `count` times (202): a suspend flush
/// takes its point while it keeps running (a sleeping or stopped one forks
/// from its saved head), and each fork restores that point on a session of
/// its own.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/fork", tag = "workspaces", operation_id = "forkWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = ForkRequest,
    responses((status = 202, body = ForkResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Unavailable, Internal),
    security(("apiToken" = [])))]
pub async fn fork_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<ForkRequest>,
) -> Result<(StatusCode, Json<ForkResponse>), ApiError> {
    let owner = req.owner_user_id.clone().into_id();
    let (count, prefix) = asked(&req)?;
    let view = owned(&app, &owner, &workspace_id).await?;
    let Some(session) = view.workspace.spec.capture_session().map(SessionId::from) else {
        return Err(ApiError::bad_request(format!(
            "workspace {workspace_id} is not capture-sourced (its spec.source is not a capture session): \
             only a capture-sourced workspace forks"
        )));
    };
    let n = match live_executor(&view) {
        Ok((run_id, endpoint)) => {
            let target = sluice_executor::Target { run_id: &run_id, endpoint: &endpoint };
            let request = sluice_protocol::capture::FlushRequest {
                kind: sluice_protocol::capture::FlushKind::Suspend,
                deadline_ms: Some(FLUSH_DEADLINE_MS),
                grace_ms: None,
            };
            let timeout = std::time::Duration::from_millis(FLUSH_DEADLINE_MS + 10_000);
            let status = control(&app)?.capture_flush(target, request, timeout).await.map_err(daemon_failed)?;
            match status.head_n {
                Some(n) if status.pending == 0 && !status.fenced && n > 0 => n,
                _ => {
                    return Err(ApiError::ServiceUnavailable(format!(
                        "workspace {workspace_id}'s point could not be captured now ({} captures pending{}); \
                         try again shortly",
                        status.pending,
                        if status.fenced { ", its executor fenced" } else { "" }
                    )));
                }
            }
        }
        // Its work is saved in its session: the head is its point.
        Err(_) if view.workspace.status.is_finished() => {
            let session = app.store.capture_session(&session).await?.ok_or(ApiError::SessionNotFound)?;
            session.head_n
        }
        Err(_) if view.workspace.status == WorkspaceStatus::Retained => {
            return Err(ApiError::conflict(
                format!(
                    "workspace {workspace_id} has a retained executor with work not confirmed saved: recover it first"
                ),
                Some(Code::Stored(ConflictCode::Retained)),
            ));
        }
        Err(e) => return Err(e),
    };
    if n == 0 {
        return Err(ApiError::conflict(
            format!("workspace {workspace_id} has captured nothing yet"),
            Some(Code::Stored(ConflictCode::CaptureNotKept)),
        ));
    }
    let prefix = prefix.unwrap_or_else(|| format!("{}-fork", view.workspace.name));
    let forked = branch(&app, &owner, &view.workspace, &session, n, count, &prefix).await?;
    app.config.metrics.workspace_forks.with_label_values(&["workspace"]).inc_by(count as u64);
    Ok((StatusCode::ACCEPTED, Json(forked)))
}

/// Fork a kept capture `count` times (202): workspaces like the one whose
/// executor registered it, each restoring it on a session of its own.
#[utoipa::path(post, path = "/v1/capture-sessions/{sessionId}/captures/{n}/fork", tag = "capture", operation_id = "forkCapture",
    params(("sessionId" = String, Path), ("n" = u64, Path, minimum = 1)),
    request_body = ForkRequest,
    responses((status = 202, body = ForkResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Unavailable, Internal),
    security(("apiToken" = [])))]
pub async fn fork_capture(
    State(app): State<AppState>,
    Path((session_id, n)): Path<(SessionId, String)>,
    JsonBody(req): JsonBody<ForkRequest>,
) -> Result<(StatusCode, Json<ForkResponse>), ApiError> {
    let owner = req.owner_user_id.clone().into_id();
    let n = crate::routes::capture_sessions::chain_position(&n, "n")?;
    let (count, prefix) = asked(&req)?;
    app.store.get_capture_session(&owner, &session_id).await?.ok_or(ApiError::SessionNotFound)?;
    let Some(template) = app.store.capture_maker(&owner, &session_id, n).await? else {
        return Err(ApiError::NotFound);
    };
    let prefix = prefix.unwrap_or_else(|| format!("{}-fork", template.name));
    let forked = branch(&app, &owner, &template, &session_id, n, count, &prefix).await?;
    app.config.metrics.workspace_forks.with_label_values(&["capture"]).inc_by(count as u64);
    Ok((StatusCode::ACCEPTED, Json(forked)))
}

/// Branches capture `n` of `session` into `count` sessions and makes a
/// workspace on each, like `template` (its image, spec and sealed
/// environment), owned by `owner`.
async fn branch(
    app: &AppState,
    owner: &OwnerId,
    template: &Workspace,
    session: &SessionId,
    n: u64,
    count: usize,
    prefix: &str,
) -> Result<ForkResponse, ApiError> {
    let reader = app.config.captures.as_ref().ok_or_else(|| {
        ApiError::ServiceUnavailable("this API process has no object store to read the capture's manifests".into())
    })?;
    let point = branch_point(reader.objects(), &app.store, owner, session, n).await.map_err(|e| match e {
        BranchError::NotKept(n) => ApiError::conflict(
            format!("capture session {session} keeps no capture {n}"),
            Some(Code::Stored(ConflictCode::CaptureNotKept)),
        ),
        BranchError::Store(e) => e.into(),
        BranchError::Objects(e) => ApiError::ServiceUnavailable(format!("the object store cannot be read now: {e}")),
    })?;
    let secret_env = match app.store.open_secret(&template.id, SecretKind::SecretEnv).await? {
        Some(bytes) => {
            Some(Secret::new(serde_json::from_slice(bytes.expose()).map_err(|e| ApiError::Internal(Box::new(e)))?))
        }
        None => None,
    };
    let sessions = app.store.branch_capture_sessions(owner, session, n, &point, count).await?;
    let mut items = Vec::with_capacity(count);
    for (i, (branched, token)) in sessions.into_iter().enumerate() {
        let mut document = template.spec.document().clone();
        document["source"] = json!({"kind": "capture", "sessionId": branched.id});
        let spec = sluice_store::spec::Spec::parse(document).map_err(|e| ApiError::bad_request(e.0))?;
        let name = format!("{prefix}-{}", i + 1);
        let new = NewWorkspace {
            owner_user_id: owner.clone(),
            name: name.clone(),
            registry_id: template.registry_id.clone(),
            repository: template.repository.clone(),
            tag: template.tag.clone(),
            spec,
            ttl_ms: app.config.default_ttl_seconds.map(|s| s * 1000),
            launch_id: None,
            idempotency: None,
            secret_env: secret_env.clone(),
            capture_token: Some(Secret::new(token.expose().clone())),
            broker: None,
        };
        let view = match app.store.create_workspace(new).await? {
            sluice_store::CreateOutcome::Created(view) | sluice_store::CreateOutcome::Replayed(view) => view,
        };
        items.push(ForkedWorkspace {
            workspace_id: view.workspace.id.to_string(),
            name,
            status: view.workspace.status,
            capture_session_id: branched.id.to_string(),
            capture_token: token.expose().clone(),
        });
    }
    app.work_enqueued();
    tracing::info!(session = %session, n, count, "forked a capture");
    Ok(ForkResponse { source_session_id: session.to_string(), capture_n: n, items })
}
