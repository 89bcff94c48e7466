//! Preview grants: the owner asks for one of the workspace's ports to be
//! served at its preview host, privately (a signed first visit) or to
//! anyone; lists and revokes them. The preview listener ([`crate::preview`])
//! serves what they grant.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use sluice_domain::preview;
use sluice_store::clock::{now_ms, rfc3339};
use sluice_store::previews::{NewPreview, Preview};

use crate::error::ApiError;
use crate::error::responses::{Conflict, Internal, InvalidRequest, NotFound, Unauthenticated, Unprocessable};
use crate::extract::{JsonBody, QueryOf};
use crate::routes::workspaces::live_executor;
use crate::wire::*;
use crate::{AppState, PreviewSettings, validate};
use sluice_domain::ids::{PreviewId, WorkspaceId};

fn record(settings: &PreviewSettings, p: Preview, token: Option<&str>) -> PreviewRecord {
    let mut url = settings.url_of(p.grant.port, &p.grant.workspace_id);
    if let Some(token) = token {
        url.push_str(&format!("?{}={token}", preview::VISIT_PARAM));
    }
    PreviewRecord {
        preview_id: p.id.to_string(),
        attempt_id: p.grant.run_id.to_string(),
        port: p.grant.port,
        public: p.grant.public,
        url,
        created_at: rfc3339(p.created_at),
        expires_at: rfc3339(p.grant.expires_at),
        revoked: p.grant.revoked,
    }
}

fn settings(app: &AppState) -> Result<&PreviewSettings, ApiError> {
    app.config.previews.as_ref().ok_or_else(|| ApiError::Unsupported {
        message: "previews are not served by this install (start it with --preview-listen and --preview-domain)".into(),
        code: crate::error::Unsupported::PreviewsNotConfigured,
    })
}

/// Grants a preview of one of the workspace's ports, bound to its current
/// run: a stop or restart ends it. A private grant's URL carries the token
/// of its first visit, shown only here.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/previews", tag = "previews", operation_id = "createPreview",
    params(("workspaceId" = String, Path)),
    request_body = CreatePreviewRequest,
    responses(
        (status = 201, body = PreviewRecord),
        InvalidRequest, Unauthenticated, NotFound, Conflict, Unprocessable, Internal),
    security(("apiToken" = [])))]
pub async fn create_preview(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<CreatePreviewRequest>,
) -> Result<(StatusCode, Json<PreviewRecord>), ApiError> {
    let owner = validate::owner(req.owner_user_id)?.into_id();
    let port = u16::try_from(req.port)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError::bad_request("port must be 1 to 65535"))?;
    let ttl = req.ttl_seconds.unwrap_or(preview::DEFAULT_TTL_SECONDS as i64);
    if !(preview::MIN_TTL_SECONDS as i64..=preview::MAX_TTL_SECONDS as i64).contains(&ttl) {
        return Err(ApiError::bad_request(format!(
            "ttlSeconds must be {} to {}",
            preview::MIN_TTL_SECONDS,
            preview::MAX_TTL_SECONDS
        )));
    }
    let settings = settings(&app)?;
    let view = app.store.get_workspace(&owner, &workspace_id).await?.ok_or(ApiError::NotFound)?;
    let (run_id, _) = live_executor(&view)?;
    let new = NewPreview {
        workspace_id: &workspace_id,
        run_id: &run_id,
        port,
        public: req.public,
        created_by: &owner,
        expires_at: now_ms() + ttl * 1000,
    };
    let (made, token) = app.store.create_preview(&new).await?;
    tracing::info!(workspace = %workspace_id, preview = %made.id, port, public = req.public, "preview granted");
    Ok((StatusCode::CREATED, Json(record(settings, made, token.as_ref().map(|t| t.expose().as_str())))))
}

/// The workspace's preview grants, newest first.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/previews", tag = "previews", operation_id = "listPreviews",
    params(("workspaceId" = String, Path), OwnerQuery),
    responses((status = 200, body = ListPreviewsResponse), InvalidRequest, Unauthenticated, NotFound, Unprocessable, Internal),
    security(("apiToken" = [])))]
pub async fn list_previews(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<ListPreviewsResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let settings = settings(&app)?;
    app.store.get_workspace(&owner, &workspace_id).await?.ok_or(ApiError::NotFound)?;
    let items = app.store.previews_of(&workspace_id).await?.into_iter().map(|p| record(settings, p, None)).collect();
    Ok(Json(ListPreviewsResponse { items }))
}

/// Revokes a grant: its URL and the cookies its visits left stop working.
#[utoipa::path(delete, path = "/v1/workspaces/{workspaceId}/previews/{previewId}", tag = "previews",
    operation_id = "revokePreview",
    params(("workspaceId" = String, Path), ("previewId" = String, Path), OwnerQuery),
    responses((status = 204, description = "Revoked"), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn revoke_preview(
    State(app): State<AppState>,
    Path((workspace_id, preview_id)): Path<(WorkspaceId, PreviewId)>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<StatusCode, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    app.store.get_workspace(&owner, &workspace_id).await?.ok_or(ApiError::NotFound)?;
    if !app.store.revoke_preview(&workspace_id, &preview_id).await? {
        return Err(ApiError::NotFound);
    }
    tracing::info!(workspace = %workspace_id, preview = %preview_id, "preview revoked");
    Ok(StatusCode::NO_CONTENT)
}
