//! Users' SSH public keys: a product backend registers them for a
//! principal; an SSH gateway (with its own token) learns a key's principal.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use sluice_store::ssh_keys::{Registration, SshKey};

use crate::AppState;
use crate::auth::require_gateway;
use crate::error::ApiError;
use crate::error::responses::{Conflict, Internal, InvalidRequest, NotFound, Unauthenticated};
use crate::extract::{JsonBody, QueryOf};
use crate::validate;
use crate::wire::*;
use sluice_domain::ids::WorkspaceId;

const PRINCIPAL_CHARS: usize = 256;

/// Registers a public key for a principal. The key's SHA256 fingerprint is
/// its id; a key belongs to one principal. Registering it again for the
/// same principal answers the existing record.
#[utoipa::path(post, path = "/v1/ssh-keys", tag = "ssh", operation_id = "registerSshKey",
    request_body = RegisterSshKeyRequest,
    responses(
        (status = 201, body = SshKeyRecord, description = "Registered"),
        (status = 200, body = SshKeyRecord, description = "Registered before, for this principal"),
        InvalidRequest, Unauthenticated, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn register_ssh_key(
    State(app): State<AppState>,
    JsonBody(req): JsonBody<RegisterSshKeyRequest>,
) -> Result<(StatusCode, Json<SshKeyRecord>), ApiError> {
    let principal = validate::text("principal", &req.principal, PRINCIPAL_CHARS)?;
    let key = validate::ssh_public_key("publicKey", &req.public_key)?;
    let record = SshKey {
        fingerprint: key.fingerprint,
        principal,
        algorithm: key.algorithm,
        public_key: key.body,
        created_at: 0,
    };
    match app.store.register_ssh_key(&record).await? {
        Registration::Created(k) => {
            tracing::info!(fingerprint = %k.fingerprint, "ssh key registered");
            Ok((StatusCode::CREATED, Json(k.into())))
        }
        Registration::Existing(k) => Ok((StatusCode::OK, Json(k.into()))),
        Registration::HeldByAnother => Err(ApiError::conflict(
            "this key is registered for another principal; a key belongs to one principal",
            Some(crate::error::Code::SshKeyInUse),
        )),
    }
}

/// A principal's keys, oldest first.
#[utoipa::path(get, path = "/v1/ssh-keys", tag = "ssh", operation_id = "listSshKeys",
    params(ListSshKeysQuery),
    responses((status = 200, body = ListSshKeysResponse), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_ssh_keys(
    State(app): State<AppState>,
    QueryOf(query): QueryOf<ListSshKeysQuery>,
) -> Result<Json<ListSshKeysResponse>, ApiError> {
    let principal = query.principal.ok_or_else(|| ApiError::bad_request("principal is required"))?;
    let principal = validate::text("principal", &principal, PRINCIPAL_CHARS)?;
    let items = app.store.ssh_keys_of(&principal).await?.into_iter().map(SshKeyRecord::from).collect();
    Ok(Json(ListSshKeysResponse { items }))
}

/// Removes a key: gateways refuse it from then on (a session open with it
/// goes on).
#[utoipa::path(delete, path = "/v1/ssh-keys/{fingerprint}", tag = "ssh", operation_id = "deleteSshKey",
    params(("fingerprint" = String, Path, description = "SHA256:… (base64, standard or URL-safe; escape / as %2F)")),
    responses((status = 204, description = "Removed"), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn delete_ssh_key(
    State(app): State<AppState>,
    Path(fingerprint): Path<String>,
) -> Result<StatusCode, ApiError> {
    let fingerprint = validate::ssh_key_fingerprint("fingerprint", &fingerprint)?;
    if !app.store.delete_ssh_key(&fingerprint).await? {
        return Err(ApiError::SshKeyNotFound);
    }
    tracing::info!(%fingerprint, "ssh key removed");
    Ok(StatusCode::NO_CONTENT)
}

/// A gateway asks whose key it was offered (gateway-authenticated).
#[utoipa::path(get, path = "/v1/gateway/ssh-keys/{fingerprint}", tag = "ssh", operation_id = "getGatewaySshKey",
    params(("fingerprint" = String, Path, description = "SHA256:… (base64, standard or URL-safe; escape / as %2F)")),
    responses((status = 200, body = SshKeyRecord), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("gatewayToken" = [])))]
pub async fn gateway_ssh_key(
    State(app): State<AppState>,
    Path(fingerprint): Path<String>,
    headers: HeaderMap,
) -> Result<Json<SshKeyRecord>, ApiError> {
    require_gateway(&app, &headers)?;
    let fingerprint = validate::ssh_key_fingerprint("fingerprint", &fingerprint)?;
    let key = app.store.ssh_key(&fingerprint).await?.ok_or(ApiError::SshKeyNotFound)?;
    Ok(Json(key.into()))
}

/// The SSH sessions gateways opened into the workspace, oldest first.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/sessions", tag = "ssh", operation_id = "listWorkspaceSessions",
    params(("workspaceId" = String, Path), OwnerQuery),
    responses((status = 200, body = ListGatewaySessionsResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn list_workspace_sessions(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<ListGatewaySessionsResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    app.store.get_workspace(&owner, &workspace_id).await?.ok_or(ApiError::NotFound)?;
    let items = app.store.sessions_of(&workspace_id).await?.into_iter().map(GatewaySessionRecord::from).collect();
    Ok(Json(ListGatewaySessionsResponse { items }))
}
