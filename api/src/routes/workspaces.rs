//! `/v1/workspaces`: the workspaces contract.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use sluice_domain::guard;
use sluice_domain::ids::{ExecRunId, OwnerId, RunId, SessionId, WorkspaceId};
use sluice_domain::sleep::WakeCause;
use sluice_domain::transition::{Answer, Request};
use sluice_store::clock::{now_ms, rfc3339};
use sluice_store::deletions::Deletion;
use sluice_store::seal::hex;
use sluice_store::{
    CreateOutcome, ExecCommand, Idempotency, NewWorkspace, RuntimeStatus, Secret, WorkspaceFilter, WorkspaceStatus,
    WorkspaceView,
};

/// The longest a single exec command may be given to run.
const MAX_COMMAND_TIMEOUT_MS: i64 = 3_600_000;
/// The most stdin one exec command may be fed.
const MAX_STDIN_BYTES: usize = 256 * 1024;

use crate::AppState;
use crate::auth::{PRINCIPAL_HEADER, require_gateway};
use crate::error::responses::{
    Conflict, Internal, InvalidRequest, NotFound, Unauthenticated, Unavailable, Unprocessable,
};
use crate::error::{ApiError, Code, Unsupported};
use crate::extract::{JsonBody, QueryOf};
use crate::validate;
use crate::wire::*;
use sluice_store::ConflictCode;

pub(crate) async fn owned(
    app: &AppState,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
) -> Result<WorkspaceView, ApiError> {
    app.store.get_workspace(owner, workspace_id).await?.ok_or(ApiError::NotFound)
}

/// JSON with object keys sorted, so equal requests digest equally.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

fn unsupported(field: &str, code: Unsupported, what: &str) -> ApiError {
    ApiError::Unsupported {
        message: format!("{field}: {what} is not available in this install; the request was not applied"),
        code,
    }
}

/// A capture source needs its session's token, and the session must be the
/// owner's; a token without a capture source is refused. Every refusal is
/// the same for a session that does not exist, is another owner's, or does
/// not match the token.
async fn check_capture_source(
    app: &AppState,
    owner: &OwnerId,
    session: Option<&str>,
    token: Option<&str>,
) -> Result<(), ApiError> {
    match (session, token) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(ApiError::bad_request(
            "captureToken is accepted only with a capture source (spec.source.kind \"capture\")",
        )),
        (Some(_), None) => Err(ApiError::bad_request("captureToken is required with a capture source")),
        (Some(session), Some(token)) => {
            let owned =
                app.store.capture_session(&SessionId::from(session)).await?.is_some_and(|s| s.owner_user_id == *owner);
            if owned && app.store.capture_token_matches(&SessionId::from(session), token).await? {
                Ok(())
            } else {
                Err(ApiError::bad_request(
                    "spec.source.sessionId and captureToken must name a capture session of this owner and its token",
                ))
            }
        }
    }
}

/// The image a create names and its spec: as given, or, for a template
/// (`template`, or `registryId: "templates"` with a tag that is no
/// digest), its newest successful build (or the build the tag names) by
/// digest, with the build's start and ready commands where the spec names
/// none.
async fn image_and_spec(
    app: &AppState,
    req: &CreateWorkspaceRequest,
) -> Result<(String, String, String, sluice_domain::spec::Spec), ApiError> {
    use sluice_domain::spec::shell;
    use sluice_domain::templates::REGISTRY_ID;
    let named = !(req.registry_id.is_empty() && req.repository.is_empty() && req.tag.is_empty());
    let (template, pick) = match &req.template {
        Some(_) if named => {
            return Err(ApiError::bad_request("template is given in place of registryId, repository and tag"));
        }
        Some(name) => (crate::routes::templates::template_name("template", name)?, None),
        None if req.registry_id == REGISTRY_ID && !req.tag.starts_with("sha256:") => {
            let name = crate::routes::templates::template_name("repository", &req.repository)?;
            (name, Some(validate::tag(&req.tag)?).filter(|t| t != "latest"))
        }
        None => {
            let registry_id = validate::text("registryId", &req.registry_id, 128)?;
            let repository = validate::repository(&req.repository)?;
            let tag = validate::tag(&req.tag)?;
            return Ok((registry_id, repository, tag, validate::spec(&req.spec)?));
        }
    };
    let build = match &pick {
        None => app.store.current_template_build(&template).await?,
        Some(id) => app
            .store
            .template_build(&sluice_domain::ids::BuildId::from(id.clone()))
            .await?
            .filter(|b| b.template == template && b.state == sluice_store::TemplateBuildState::Succeeded),
    };
    let Some(build) = build else {
        let which = pick.map_or("a successful build".to_owned(), |id| format!("a successful build {id}"));
        return Err(ApiError::conflict(
            format!("template {template} has no {which} (see GET /v1/templates/{template})"),
            Some(Code::Stored(ConflictCode::TemplateNotBuilt)),
        ));
    };
    let digest =
        build.digest.clone().ok_or_else(|| ApiError::Internal("a successful build without a digest".into()))?;
    let mut document = req.spec.clone();
    if let Some(fields) = document.as_object_mut() {
        if let Some(start) = build.start_command.as_deref().filter(|_| !fields.contains_key("command")) {
            fields.insert("command".into(), json!(shell(start)));
        }
        if let Some(ready) = build.ready_command.as_deref().filter(|_| !fields.contains_key("readyCommand")) {
            fields.insert("readyCommand".into(), json!(ready));
        }
    }
    Ok((REGISTRY_ID.to_owned(), template, digest, validate::spec(&document)?))
}

/// Create a workspace (202). Idempotent per owner with `idempotencyKey`.
#[utoipa::path(post, path = "/v1/workspaces", tag = "workspaces", operation_id = "createWorkspace",
    params(("idempotency-key" = Option<String>, Header, description = "Same as the body's idempotencyKey; the body wins.")),
    request_body = CreateWorkspaceRequest,
    responses((status = 202, description = "Created, or replayed (`replayed: true`)", body = CreateWorkspaceResponse), InvalidRequest, Unauthenticated, Conflict, Unprocessable, Internal),
    security(("apiToken" = [])))]
pub async fn create_workspace(
    State(app): State<AppState>,
    headers: HeaderMap,
    JsonBody(req): JsonBody<CreateWorkspaceRequest>,
) -> Result<(StatusCode, Json<CreateWorkspaceResponse>), ApiError> {
    let (registry_id, repository, tag, spec) = image_and_spec(&app, &req).await?;
    let owner = req.owner_user_id.into_id();
    let wait = validate::wait(req.wait_for, req.timeout_ms, app.config.http.idle_timeout)?;
    let name = req.name.as_deref().map(|n| validate::label("name", n)).transpose()?;
    validate::enforceable(spec.typed(), app.config.unenforceable.as_deref())?;
    if let Some(env) = &req.secret_env {
        validate::secret_env(env)?;
    }
    validate::injected_keys(spec.typed(), req.secret_env.as_ref())?;
    let capture_token = validate::optional_text("captureToken", req.capture_token.as_deref(), 4096)?;
    check_capture_source(&app, &owner, spec.capture_session(), capture_token.as_deref()).await?;
    if let (Some(session), Some(point)) = (spec.capture_session(), spec.capture_point()) {
        let kept = app.store.capture_manifests(&owner, &SessionId::from(session), point).await?;
        if kept.flatten().is_none() {
            return Err(ApiError::bad_request(format!(
                "spec.source.captureN: the session keeps no capture {point} (list them at \
                 /v1/capture-sessions/{session}/captures)"
            )));
        }
    }
    let ttl_seconds = req.ttl_seconds.map(|t| validate::ttl_seconds("ttlSeconds", t)).transpose()?;
    let launch_id = req.launch_id.as_deref().map(|l| validate::launch_id("launchId", l)).transpose()?;
    let key = match (&req.idempotency_key, headers.get("idempotency-key")) {
        (Some(body), _) => Some(validate::idempotency_key("idempotencyKey", body)?),
        (None, Some(header)) => {
            let header =
                header.to_str().map_err(|_| ApiError::bad_request("the idempotency-key header must be ASCII"))?;
            Some(validate::idempotency_key("the idempotency-key header", header)?)
        }
        (None, None) => None,
    };
    match spec.capture_session() {
        Some(session) => {
            crate::takeover::check_takeover(&app, &owner, &SessionId::from(session), req.take_over, key.as_ref(), true)
                .await?
        }
        None if req.take_over.is_some() => {
            return Err(ApiError::bad_request(
                "takeOver is accepted only with a capture source (spec.source.kind \"capture\")",
            ));
        }
        None => {}
    }

    // Everything stored in plain columns passes the guard, each under its own name.
    for (field, value) in [
        ("ownerUserId", Some(owner.as_str())),
        ("registryId", Some(registry_id.as_str())),
        ("repository", Some(repository.as_str())),
        ("tag", Some(tag.as_str())),
        ("launchId", launch_id.as_deref()),
        ("idempotencyKey", key.as_deref()),
    ] {
        if let Some(value) = value {
            guard::check(field, &Value::String(value.to_owned()))?;
        }
    }

    if req.source_selection.is_some() {
        return Err(unsupported(
            "sourceSelection",
            Unsupported::SourceSelection,
            "cloning a repository into the workspace",
        ));
    }
    if req.dotfiles_selection.is_some() {
        return Err(unsupported("dotfilesSelection", Unsupported::DotfilesSelection, "installing dotfiles"));
    }
    if req.credentials.is_some() {
        return Err(unsupported("credentials", Unsupported::Credentials, "resolving connected accounts"));
    }
    validate::runtime_capabilities(spec.document())?;

    let idempotency = key.map(|key| {
        let request = json!({
            "ownerUserId": owner, "registryId": registry_id, "repository": repository, "tag": tag,
            "name": name, "spec": spec.document(), "secretEnv": req.secret_env, "captureToken": capture_token,
            "ttlSeconds": ttl_seconds, "launchId": launch_id, "takeOver": req.take_over,
            "template": req.template,
        });
        Idempotency { key, request_hash: app.store.sealer().keyed_digest(canonical(&request).as_bytes()) }
    });
    let default_name = || {
        let base = repository.rsplit('/').next().unwrap_or("workspace");
        format!("{base}-{}", &hex(&sluice_store::seal::random_bytes::<3>()))
    };
    let ttl_ms = ttl_seconds.or(app.config.default_ttl_seconds).map(|s| s * 1000);
    let new = NewWorkspace {
        owner_user_id: owner,
        name: name.unwrap_or_else(default_name),
        registry_id,
        repository,
        tag,
        spec,
        ttl_ms,
        launch_id,
        idempotency,
        secret_env: req.secret_env.map(Secret::new),
        capture_token: capture_token.map(Secret::new),
        broker: None,
    };
    let (mut view, replayed) = match app.store.create_workspace(new).await? {
        CreateOutcome::Created(v) => (v, false),
        CreateOutcome::Replayed(v) => (v, true),
    };
    if !replayed {
        app.work_enqueued();
    }
    if let Some(wait) = wait.filter(|_| sluice_domain::lifecycle::still_starting(&view.workspace)) {
        let owner = view.workspace.owner_user_id.clone();
        view = crate::waiting::while_starting(&app, &owner, &view.workspace.id, wait).await?;
    }
    Ok((StatusCode::ACCEPTED, Json(CreateWorkspaceResponse::of(&view, replayed))))
}

/// What became of an idempotent create, by its key.
#[utoipa::path(get, path = "/v1/workspaces/idempotency-keys/{idempotencyKey}", tag = "workspaces", operation_id = "getWorkspaceCreate",
    params(("idempotencyKey" = String, Path, pattern = r"^[A-Za-z0-9._:-]{1,200}$"), OwnerQuery),
    responses((status = 200, body = WorkspaceCreateState), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn get_workspace_create(
    State(app): State<AppState>,
    Path(key): Path<String>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<WorkspaceCreateState>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let key = validate::idempotency_key("idempotencyKey", &key)?;
    Ok(Json(app.store.get_create_key(&owner, &key).await?.into()))
}

/// Cancel the create with this key, so it never commits (`found` if it already did).
#[utoipa::path(post, path = "/v1/workspaces/idempotency-keys/{idempotencyKey}/cancel", tag = "workspaces", operation_id = "cancelWorkspaceCreate",
    params(("idempotencyKey" = String, Path, pattern = r"^[A-Za-z0-9._:-]{1,200}$")),
    request_body = OwnerRequest,
    responses((status = 200, body = WorkspaceCreateState), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn cancel_workspace_create(
    State(app): State<AppState>,
    Path(key): Path<String>,
    JsonBody(req): JsonBody<OwnerRequest>,
) -> Result<Json<WorkspaceCreateState>, ApiError> {
    let owner = req.owner_user_id.into_id();
    let key = validate::idempotency_key("idempotencyKey", &key)?;
    Ok(Json(app.store.cancel_create_key(&owner, &key).await?.into()))
}

/// The owner's workspaces, newest first.
#[utoipa::path(get, path = "/v1/workspaces", tag = "workspaces", operation_id = "listWorkspaces",
    params(ListWorkspacesQuery),
    responses((status = 200, body = ListWorkspacesResponse), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_workspaces(
    State(app): State<AppState>,
    QueryOf(q): QueryOf<ListWorkspacesQuery>,
) -> Result<Json<ListWorkspacesResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let status = q
        .status
        .as_deref()
        .map(|s| {
            s.parse::<WorkspaceStatus>()
                .map_err(|_| ApiError::bad_request(format!("status must be one of {}", statuses())))
        })
        .transpose()?;
    let idempotency_key =
        q.idempotency_key.as_deref().map(|k| validate::idempotency_key("idempotencyKey", k)).transpose()?;
    let filter = WorkspaceFilter { status, idempotency_key, limit: validate::limit(q.limit.as_deref())? };
    let views = app.store.list_workspaces(&owner, &filter).await?;
    Ok(Json(ListWorkspacesResponse { items: views.iter().map(Into::into).collect() }))
}

fn statuses() -> String {
    WorkspaceStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

/// One workspace with its spec (owner-scoped; uniform 404).
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}", tag = "workspaces", operation_id = "getWorkspace",
    params(("workspaceId" = String, Path), GetWorkspaceQuery),
    responses((status = 200, body = WorkspaceDetails), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn get_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(q): QueryOf<GetWorkspaceQuery>,
) -> Result<Json<WorkspaceDetails>, ApiError> {
    let wait = validate::wait_query(q.wait_for.as_deref(), q.timeout_ms.as_deref(), app.config.http.idle_timeout)?;
    let owner = q.owner_user_id.ok_or(ApiError::NotFound)?.into_id();
    let view = match wait {
        Some(wait) => crate::waiting::while_starting(&app, &owner, &workspace_id, wait).await?,
        None => owned(&app, &owner, &workspace_id).await?,
    };
    let mut capture_drain = None;
    if let Some(run) = view.current_run.as_ref().filter(|_| view.workspace.spec.capture_session().is_some())
        && let Some(drain) = app.store.drain(&run.id).await?
    {
        let completion = app.store.accepted_attestation(&run.id).await?;
        let mut view = WorkspaceCaptureDrain::of(run, &drain, completion.as_ref());
        if completion.is_none() {
            view.completion_revoked =
                app.store.revoked_attestation(&run.id).await?.as_ref().map(CaptureDrainRevoked::of);
        }
        capture_drain = Some(view);
    }
    Ok(Json(WorkspaceDetails {
        summary: (&view).into(),
        spec: view.workspace.spec.document().clone(),
        desired_state: view.workspace.desired_state,
        capture_drain,
    }))
}

/// Rename a workspace (owner-scoped; a rename that names no owner finds nothing).
#[utoipa::path(patch, path = "/v1/workspaces/{workspaceId}/name", tag = "workspaces", operation_id = "renameWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = RenameWorkspaceRequest,
    responses((status = 200, body = RenameWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn rename_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<RenameWorkspaceRequest>,
) -> Result<Json<RenameWorkspaceResponse>, ApiError> {
    let owner = req.owner_user_id.ok_or(ApiError::NotFound)?.into_id();
    let name = validate::label("name", &req.name)?;
    let w = app.store.rename_workspace(&owner, &workspace_id, &name).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(RenameWorkspaceResponse {
        workspace_id: w.id.to_string(),
        name: w.name,
        updated_at: rfc3339(w.updated_at),
    }))
}

/// Set, clear or end a workspace's TTL; the reaper enforces it.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/expire", tag = "workspaces", operation_id = "expireWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = ExpireWorkspaceRequest,
    responses((status = 200, body = ExpireWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn expire_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<ExpireWorkspaceRequest>,
) -> Result<Json<ExpireWorkspaceResponse>, ApiError> {
    let owner = req.owner_user_id.into_id();
    let expires_at = match req.ttl_seconds {
        None => Some(now_ms()),
        Some(None) => None,
        Some(Some(ttl)) => Some(now_ms() + validate::ttl_seconds("ttlSeconds", ttl)? * 1000),
    };
    let w = app.store.set_expiry(&owner, &workspace_id, expires_at).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(ExpireWorkspaceResponse { workspace_id: w.id.to_string(), expires_at: w.expires_at.map(rfc3339) }))
}

/// The workspace's launch attempts, newest first.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/attempts", tag = "workspaces", operation_id = "listWorkspaceAttempts",
    params(("workspaceId" = String, Path), OwnerLimitQuery),
    responses((status = 200, body = ListWorkspaceAttemptsResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn list_workspace_attempts(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(q): QueryOf<OwnerLimitQuery>,
) -> Result<Json<ListWorkspaceAttemptsResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let limit = validate::limit(q.limit.as_deref())?;
    let runs = app.store.list_runs(&owner, &workspace_id, limit).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(ListWorkspaceAttemptsResponse { items: runs.iter().map(Into::into).collect() }))
}

/// The workspace's events in the order they happened.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/events", tag = "workspaces", operation_id = "listWorkspaceEvents",
    params(("workspaceId" = String, Path), OwnerLimitQuery),
    responses((status = 200, body = ListWorkspaceEventsResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn list_workspace_events(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(q): QueryOf<OwnerLimitQuery>,
) -> Result<Json<ListWorkspaceEventsResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let limit = validate::limit(q.limit.as_deref())?;
    let events = app.store.list_events(&owner, &workspace_id, limit).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(ListWorkspaceEventsResponse { items: events.iter().map(Into::into).collect() }))
}

/// Slack the transport gets beyond a flush's own deadline.
const FLUSH_SLACK: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a flush may take when the request names no deadline.
const DEFAULT_FLUSH_DEADLINE_MS: u64 = 60_000;

/// The workspace's live executor: its run id and control endpoint. 409
/// when there is none (never launched, mid-launch, gone) or this API cannot
/// reach executors.
pub(crate) fn live_executor(view: &WorkspaceView) -> Result<(RunId, String), ApiError> {
    let id = &view.workspace.id;
    let live = view.current_run.as_ref().filter(|_| view.workspace.status == WorkspaceStatus::Ready).and_then(|run| {
        let endpoint = run.runtime.as_ref()?.endpoint.clone().filter(|_| run.runtime_removed_at.is_none())?;
        Some((run.id.clone(), endpoint))
    });
    live.ok_or_else(|| {
        ApiError::conflict(
            format!("workspace {id} has no live runtime (it is {})", view.workspace.status),
            Some(Code::Stored(ConflictCode::NoLiveRuntime)),
        )
    })
}

/// A capture-sourced workspace's live executor (400 for any other workspace).
/// How long a status read waits for the daemon.
const STATUS_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// A capture-sourced workspace's live executor.
struct CaptureExecutor {
    run_id: RunId,
    endpoint: String,
    session_id: SessionId,
}

async fn capture_executor(
    app: &AppState,
    owner: &OwnerId,
    workspace_id: &WorkspaceId,
) -> Result<CaptureExecutor, ApiError> {
    let view = crate::waiting::awake(app, owner, workspace_id, WakeCause::Capture, None).await?;
    let Some(session_id) = view.workspace.spec.capture_session().map(SessionId::from) else {
        return Err(ApiError::bad_request(format!(
            "workspace {workspace_id} is not capture-sourced (its spec.source is not a capture session)"
        )));
    };
    let (run_id, endpoint) = live_executor(&view)?;
    Ok(CaptureExecutor { run_id, endpoint, session_id })
}

/// A daemon that has not heard of a newer claim yet is fenced all the
/// same: the store knows who holds the session, and a superseded executor
/// is never reported unfenced.
async fn with_fence(
    app: &AppState,
    executor: &CaptureExecutor,
    mut status: WorkspaceCaptureStatus,
) -> Result<WorkspaceCaptureStatus, ApiError> {
    if status.fenced || status.epoch == 0 {
        // Settled without the session (see `fenced`).
        return Ok(status);
    }
    let session = app.store.capture_session(&executor.session_id).await?;
    let session = session.as_ref().map(|s| (s.epoch, s.claimed_run_id.as_deref()));
    status.fenced = sluice_domain::drain::fenced(status.fenced, status.epoch, session, &executor.run_id);
    Ok(status)
}

pub(crate) fn control(app: &AppState) -> Result<&dyn sluice_executor::Executors, ApiError> {
    app.config.control.as_deref().ok_or_else(|| {
        ApiError::conflict("this API process cannot reach executors' daemons", Some(Code::ExecutorControlUnavailable))
    })
}

pub(crate) fn daemon_failed(e: sluice_executor::ExecutorError) -> ApiError {
    use sluice_executor::ExecutorError;
    match e {
        ExecutorError::Unreachable(_) | ExecutorError::NotHere(_) => {
            ApiError::conflict(e.to_string(), Some(Code::DaemonUnreachable))
        }
        ExecutorError::Refused { .. } => ApiError::conflict(e.to_string(), Some(Code::DaemonRefused)),
        ExecutorError::HostUnavailable { .. } => ApiError::ServiceUnavailable(e.to_string()),
    }
}

/// Bind the working directory (or a bindable mount) to a subdirectory of
/// the executor's root (needs a live runtime); an empty `subpath` unbinds.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/bind", tag = "workspaces", operation_id = "bindWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = BindWorkspaceRequest,
    responses((status = 200, body = WorkspaceBinds), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn bind_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<BindWorkspaceRequest>,
) -> Result<Json<WorkspaceBinds>, ApiError> {
    let owner = req.owner_user_id.into_id();
    let mount_path = validate::optional_text("mountPath", req.mount_path.as_deref(), 4096)?;
    validate::bind_subpath(&req.subpath)?;
    let view = crate::waiting::awake(&app, &owner, &workspace_id, WakeCause::Files, None).await?;
    let (run_id, endpoint) = live_executor(&view)?;
    let request = sluice_protocol::capture::BindRequest { mount_path, subpath: req.subpath };
    let target = sluice_executor::Target { run_id: &run_id, endpoint: &endpoint };
    let binds = control(&app)?.bind(target, request).await.map_err(daemon_failed)?;
    Ok(Json(WorkspaceBinds {
        binds: binds
            .binds
            .into_iter()
            .map(|b| WorkspaceBind { mount_path: b.mount_path, subpath: b.subpath })
            .collect(),
    }))
}

/// The daemon's capture status: one round trip, nothing flushed.
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/capture", tag = "workspaces", operation_id = "getWorkspaceCaptureStatus",
    params(("workspaceId" = String, Path), OwnerQuery),
    responses((status = 200, body = WorkspaceCaptureStatus), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn get_workspace_capture_status(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<WorkspaceCaptureStatus>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    let executor = capture_executor(&app, &owner, &workspace_id).await?;
    let target = sluice_executor::Target { run_id: &executor.run_id, endpoint: &executor.endpoint };
    let status = control(&app)?.capture_status(target, STATUS_WITHIN).await.map_err(daemon_failed)?;
    keep_report(&app, &executor.run_id, &status).await?;
    Ok(Json(with_fence(&app, &executor, status).await?))
}

/// Every capture status read from an executor is evidence about it: stored
/// with its origin stamp, where it may revoke an attestation.
async fn keep_report(app: &AppState, run_id: &RunId, status: &WorkspaceCaptureStatus) -> Result<(), ApiError> {
    if let Some(origin) = &status.origin {
        let report = sluice_protocol::attest::Report { origin: origin.clone(), saved: status.complete == Some(true) };
        // One of the contract's names (anything else the daemon said reads `unknown`).
        let detail = status.incomplete_reason.map(|r| r.as_str());
        app.store.record_report(run_id, &report, detail).await?;
    }
    Ok(())
}

/// Flush the workspace's captures: `suspend` (a checkpoint, the default)
/// or `final` (the executor is ending). Answers the daemon's status.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/capture/flush", tag = "workspaces", operation_id = "flushWorkspaceCapture",
    params(("workspaceId" = String, Path)),
    request_body = FlushWorkspaceCaptureRequest,
    responses((status = 200, body = WorkspaceCaptureStatus), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn flush_workspace_capture(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<FlushWorkspaceCaptureRequest>,
) -> Result<Json<WorkspaceCaptureStatus>, ApiError> {
    let owner = req.owner_user_id.into_id();
    for (field, value) in [("deadlineMs", req.deadline_ms), ("graceMs", req.grace_ms)] {
        if value.is_some_and(|v| !(1..=3_600_000).contains(&v)) {
            return Err(ApiError::bad_request(format!("{field} must be 1 to 3600000 milliseconds")));
        }
    }
    let executor = capture_executor(&app, &owner, &workspace_id).await?;
    let deadline_ms = req.deadline_ms.map_or(DEFAULT_FLUSH_DEADLINE_MS, |d| d as u64);
    let request = sluice_protocol::capture::FlushRequest {
        kind: match req.kind {
            Some(FlushKind::Final) => sluice_protocol::capture::FlushKind::Final,
            _ => sluice_protocol::capture::FlushKind::Suspend,
        },
        deadline_ms: Some(deadline_ms),
        grace_ms: req.grace_ms.map(|g| g as u64),
    };
    let timeout = std::time::Duration::from_millis(deadline_ms) + FLUSH_SLACK;
    let target = sluice_executor::Target { run_id: &executor.run_id, endpoint: &executor.endpoint };
    let status = control(&app)?.capture_flush(target, request, timeout).await.map_err(daemon_failed)?;
    keep_report(&app, &executor.run_id, &status).await?;
    Ok(Json(with_fence(&app, &executor, status).await?))
}

/// Re-plan the workspace's capture: the daemon asks for its plan again and
/// delta-materializes the answered head.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/capture/replan", tag = "workspaces", operation_id = "replanWorkspaceCapture",
    params(("workspaceId" = String, Path)),
    request_body = OwnerRequest,
    responses((status = 200, body = WorkspaceCaptureReplanned), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn replan_workspace_capture(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<OwnerRequest>,
) -> Result<Json<WorkspaceCaptureReplanned>, ApiError> {
    let owner = req.owner_user_id.into_id();
    let executor = capture_executor(&app, &owner, &workspace_id).await?;
    // A re-plan of a fenced executor claims the session back from the newer one.
    let holder = app.store.session_holder(&executor.session_id).await?;
    let other = holder.as_ref().filter(|(run, _)| run.id != executor.run_id);
    if let Some(unsaved) = sluice_domain::drain::unsaved_holder(other.map(|(run, drain)| (run, drain.as_ref()))) {
        return Err(crate::takeover::session_has_unsaved_work(
            &unsaved,
            "a re-plan would fence it: let it drain, or discard it first",
        ));
    }
    let target = sluice_executor::Target { run_id: &executor.run_id, endpoint: &executor.endpoint };
    Ok(Json(control(&app)?.capture_replan(target).await.map_err(daemon_failed)?))
}

/// Run an ordered list of commands as one run (202; needs a live runtime).
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/exec", tag = "workspaces", operation_id = "execWorkspace",
    description = "Runs the commands in order in the workspace's executor. Answers 202 with the run at once (read its end with `GET /v1/runs/{runId}`), or, asked with `Accept: text/event-stream`, 200 with the run's output as it happens: `event: run` (the run as the 202 would have answered it), then the events of `GET /v1/runs/{runId}/stream`, ending with `event: end`. A client that goes away does not stop the run; it attaches again with that stream.",
    params(("workspaceId" = String, Path), WaitQuery),
    request_body = ExecWorkspaceRequest,
    responses((status = 202, body = ExecRun), (status = 200, content_type = "text/event-stream", body = RunStreamEvent, description = "The run's output as it happens (with `Accept: text/event-stream`)"), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn exec_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    headers: HeaderMap,
    QueryOf(wait): QueryOf<WaitQuery>,
    JsonBody(req): JsonBody<ExecWorkspaceRequest>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let owner = req.owner_user_id.into_id();
    let streaming = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.split(',').any(|m| m.trim().starts_with("text/event-stream")));
    let answer = |app: AppState, owner: OwnerId, run: sluice_store::model::ExecRun| async move {
        if streaming {
            let id = run.id.clone();
            Ok(crate::routes::runs::open(app, owner, id, 0, Some(&run)).await?.into_response())
        } else {
            Ok((StatusCode::ACCEPTED, Json(ExecRun::of(&run))).into_response())
        }
    };
    let wait =
        validate::wait_query(wait.wait_for.as_deref(), wait.timeout_ms.as_deref(), app.config.http.idle_timeout)?;
    if req.commands.is_empty() || req.commands.len() > 32 {
        return Err(ApiError::bad_request("commands must hold 1 to 32 commands"));
    }
    for (i, command) in req.commands.iter().enumerate() {
        if command.argv.is_empty() || command.argv[0].is_empty() {
            return Err(ApiError::bad_request(format!("commands[{i}].argv must name a program")));
        }
        if command.timeout_ms.is_some_and(|t| !(1..=MAX_COMMAND_TIMEOUT_MS).contains(&t)) {
            return Err(ApiError::bad_request(format!(
                "commands[{i}].timeoutMs must be between 1 and {MAX_COMMAND_TIMEOUT_MS}"
            )));
        }
        if let Some(cwd) = &command.cwd {
            validate::text(&format!("commands[{i}].cwd"), cwd, 4096)?;
        }
        if command.stdin.as_ref().is_some_and(|s| s.len() > MAX_STDIN_BYTES) {
            return Err(ApiError::bad_request(format!("commands[{i}].stdin must be at most {MAX_STDIN_BYTES} bytes")));
        }
    }
    // Everything is checked before the wait, so a refusal is not delayed.
    crate::waiting::awake(&app, &owner, &workspace_id, WakeCause::Exec, wait).await?;
    let (commands, stdin) = req
        .commands
        .into_iter()
        .map(|c| {
            let command = ExecCommand {
                argv: c.argv,
                cwd: c.cwd,
                env: c.env,
                stdin_digest: None,
                timeout_ms: c.timeout_ms.map(|t| t as u64),
            };
            (command, c.stdin)
        })
        .unzip();
    // A process that reaches executors runs the commands itself, at once:
    // the run is created with its job held by this process, and no queue
    // or worker's claim comes between the caller and the daemon.
    let Some(control) = app.config.control.clone() else {
        let run = app.store.create_exec_run(&owner, &workspace_id, commands, stdin).await?.ok_or(ApiError::NotFound)?;
        app.work_enqueued();
        return answer(app, owner, run).await;
    };
    let asker = owner.clone();
    // Created and started in a task of its own: a client that hangs up
    // mid-request cannot leave a run this process took but never started.
    let (store, runner) = (app.store.clone(), app.runner.clone());
    let taking = async move {
        let created = store
            .create_taken_exec_run(&owner, &workspace_id, commands, stdin.clone(), &runner, crate::EXEC_LEASE_MS)
            .await?;
        Ok::<_, sluice_store::StoreError>(created.map(|created| match created {
            sluice_store::CreatedExecRun::Taken(taken) => {
                let run = taken.run.clone();
                // A job pass like a worker's, in the trace of the request
                // that asked for it.
                let span = tracing::info_span!(
                    "job",
                    otel.name = "job exec",
                    job.kind = "exec",
                    exec_run = %taken.run.id,
                    workspace = %taken.run.workspace_id,
                    generation = taken.lease.generation,
                );
                let running = sluice_exec_runs::run_taken(store, control, taken, stdin, crate::EXEC_LEASE_MS);
                tokio::spawn(tracing::Instrument::instrument(running, span));
                (run, true)
            }
            sluice_store::CreatedExecRun::Queued(run) => (run, false),
        }))
    };
    let taken = tokio::spawn(tracing::Instrument::instrument(taking, tracing::Span::current()))
        .await
        .map_err(|e| ApiError::Internal(Box::new(e)))?;
    let (run, started) = taken?.ok_or(ApiError::NotFound)?;
    if !started {
        app.work_enqueued();
    }
    answer(app, asker, run).await
}

/// Read a run (owner-scoped): a deterministic exec run's status and results.
#[utoipa::path(get, path = "/v1/runs/{runId}", tag = "runs", operation_id = "getRun",
    params(("runId" = String, Path), OwnerQuery),
    responses((status = 200, body = ExecRun), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn get_run(
    State(app): State<AppState>,
    Path(run_id): Path<ExecRunId>,
    QueryOf(query): QueryOf<OwnerQuery>,
) -> Result<Json<ExecRun>, ApiError> {
    let owner = query.owner_user_id.ok_or(ApiError::NotFound)?.into_id();
    let run = app.store.get_exec_run(&owner, &run_id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(ExecRun::of(&run)))
}

/// Stop the workspace (202; needs a runtime that was launched).
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/stop", tag = "workspaces", operation_id = "stopWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = StopWorkspaceRequest,
    responses((status = 202, body = StopWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn stop_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<StopWorkspaceRequest>,
) -> Result<(StatusCode, Json<StopWorkspaceResponse>), ApiError> {
    let owner = req.owner_user_id.into_id();
    let attestation = match &req.completion {
        Some(c) => {
            validate::text("completion.executorId", &c.executor_id, 256)?;
            if c.capture_n < 0 || c.epoch < 0 {
                return Err(ApiError::bad_request("completion.captureN and completion.epoch must be 0 or more"));
            }
            if let Some(launch) = &c.launch_id {
                validate::text("completion.launchId", launch, 256)?;
            }
            if let Some(at) = &c.sealed_at {
                validate::text("completion.sealedAt", at, 64)?;
                time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                    .map_err(|_| ApiError::bad_request("completion.sealedAt must be an ISO 8601 (RFC 3339) time"))?;
            }
            if let Some(origin) = &c.origin {
                validate::text("completion.origin.launch", &origin.launch, 256)?;
                validate::text("completion.origin.bootId", &origin.boot_id, 256)?;
                let negative = origin.epoch < 0
                    || origin.boot_generation < 0
                    || origin.observation < 0
                    || origin.head_n.is_some_and(|n| n < 0);
                if negative {
                    return Err(ApiError::bad_request("completion.origin's numbers must be 0 or more"));
                }
            }
            let attestation = sluice_protocol::attest::Attestation {
                capture_n: c.capture_n as u64,
                epoch: c.epoch as u64,
                executor_id: c.executor_id.clone(),
                launch_id: c.launch_id.clone(),
                origin: c.origin.as_ref().map(|o| o.to_origin()),
            };
            Some((attestation, c.sealed_at.clone()))
        }
        None => None,
    };
    let intent = sluice_store::StopIntent { discard: req.discard_unsaved == Some(true), attestation };
    let request = Request::Stop { by: owner.to_string(), intent };
    let next = app.store.request(&owner, &workspace_id, request).await?.ok_or(ApiError::NotFound)?;
    app.work_enqueued();
    let Answer::Stop { completion } = next.answer else { unreachable!("a stop is answered as one") };
    let completion = completion.map(|(outcome, detail)| CompletionOutcome {
        outcome: match outcome {
            sluice_store::AttestationOutcome::Accepted => "accepted".into(),
            _ => "ignored".into(),
        },
        detail,
    });
    let workspace = next.workspace;
    Ok((
        StatusCode::ACCEPTED,
        Json(StopWorkspaceResponse { workspace_id: workspace.id.to_string(), status: workspace.status, completion }),
    ))
}

/// Delete a workspace that has ended: gone from lists and reads, its
/// events kept on the feed.
#[utoipa::path(delete, path = "/v1/workspaces/{workspaceId}", tag = "workspaces", operation_id = "deleteWorkspace",
    description = "Deletes a workspace that is stopped, failed or cancelled with no runtime left: afterwards every read and list answers as if it never existed (404), while its events stay on the global feed (`GET /v1/events/stream`, with a `sluice.workspace.deleted` event) until their retention ends, and its idempotency key still answers `found` until the key is purged. 409 `retained` for a retained executor (recover or discard it first), 409 `not-ended` for a workspace still live or with a runtime not removed yet; 404 for one already deleted.",
    params(("workspaceId" = String, Path), OwnerQuery),
    responses((status = 200, body = DeleteWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn delete_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    QueryOf(q): QueryOf<OwnerQuery>,
) -> Result<Json<DeleteWorkspaceResponse>, ApiError> {
    let owner = validate::owner(q.owner_user_id)?.into_id();
    match app.store.delete_workspace(&owner, &workspace_id).await?.ok_or(ApiError::NotFound)? {
        Deletion::Deleted { at } => {
            Ok(Json(DeleteWorkspaceResponse { workspace_id: workspace_id.to_string(), deleted_at: rfc3339(at) }))
        }
        Deletion::Refused(refusal) => Err(sluice_store::StoreError::from(refusal).into()),
    }
}

/// Ask for a recovery attempt of the workspace's retained executor (202).
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/recover", tag = "workspaces", operation_id = "recoverWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = OwnerRequest,
    responses((status = 202, body = RecoverWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn recover_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<OwnerRequest>,
) -> Result<(StatusCode, Json<RecoverWorkspaceResponse>), ApiError> {
    let owner = req.owner_user_id.into_id();
    let next = app.store.request(&owner, &workspace_id, Request::Recover).await?.ok_or(ApiError::NotFound)?;
    app.work_enqueued();
    let Answer::Recover { recoverable } = next.answer else { unreachable!("a recovery request is answered as one") };
    let (state, recoverable) = match recoverable {
        Some(recoverable) => (RecoverState::Requested, Some(recoverable)),
        None => (RecoverState::NotRetained, None),
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(RecoverWorkspaceResponse { workspace_id: workspace_id.to_string(), state, recoverable }),
    ))
}

/// Every retained executor (an operator's view, across owners).
#[utoipa::path(get, path = "/v1/retained-executors", tag = "operators", operation_id = "listRetainedExecutors",
    params(RetainedQuery),
    responses((status = 200, body = ListRetainedExecutorsResponse), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_retained_executors(
    State(app): State<AppState>,
    QueryOf(q): QueryOf<RetainedQuery>,
) -> Result<Json<ListRetainedExecutorsResponse>, ApiError> {
    let limit = validate::limit(q.limit.as_deref())?;
    let items = app
        .store
        .list_retained(limit)
        .await?
        .into_iter()
        .map(|r| RetainedExecutor {
            capture_drain: WorkspaceCaptureDrain::of(&r.run, &r.drain, None),
            workspace_id: r.workspace_id.to_string(),
            owner_user_id: r.owner_user_id.to_string(),
            run_id: r.run.id.to_string(),
        })
        .collect();
    Ok(Json(ListRetainedExecutorsResponse { items }))
}

/// Send a capture-sourced workspace to sleep now (202): drained exactly as a
/// stop (its runtime goes once its work is saved, or it is retained), then
/// asleep until a request that needs its runtime wakes it.
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/sleep", tag = "workspaces", operation_id = "sleepWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = OwnerRequest,
    responses((status = 202, body = SleepWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn sleep_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<OwnerRequest>,
) -> Result<(StatusCode, Json<SleepWorkspaceResponse>), ApiError> {
    let owner = req.owner_user_id.into_id();
    let reason = sluice_domain::sleep::SleepReason::Requested;
    let next = app.store.request(&owner, &workspace_id, Request::Sleep { reason }).await?.ok_or(ApiError::NotFound)?;
    if next.wake {
        app.work_enqueued();
        app.config.metrics.workspace_sleeps.with_label_values(&[reason.as_str()]).inc();
    }
    let view = owned(&app, &owner, &workspace_id).await?;
    let summary = WorkspaceSummary::from(&view);
    Ok((
        StatusCode::ACCEPTED,
        Json(SleepWorkspaceResponse {
            workspace_id: summary.workspace_id,
            status: summary.status,
            desired_state: view.workspace.desired_state,
            sleeping: summary.sleeping,
        }),
    ))
}

/// Wake a sleeping workspace (202): a new run restores its capture
/// session's head; one whose sleep is still saving its work is woken once
/// that is done. A running workspace is answered as it is (`woken: false`).
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/wake", tag = "workspaces", operation_id = "wakeWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = OwnerRequest,
    responses((status = 202, body = WakeWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Unavailable, Internal),
    security(("apiToken" = [])))]
pub async fn wake_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<OwnerRequest>,
) -> Result<(StatusCode, Json<WakeWorkspaceResponse>), ApiError> {
    let owner = req.owner_user_id.into_id();
    let deadline = tokio::time::Instant::now() + crate::waiting::FALLING_ASLEEP_WAIT;
    // One neither asleep nor running is refused with the rule it breaks.
    let woken = crate::waiting::wake(&app, &owner, &workspace_id, WakeCause::Requested, deadline).await?;
    let view = owned(&app, &owner, &workspace_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(WakeWorkspaceResponse {
            workspace_id: view.workspace.id.to_string(),
            run_id: view.workspace.current_run_id.as_ref().map(|r| r.to_string()).unwrap_or_default(),
            status: view.workspace.status,
            woken: woken.is_some(),
        }),
    ))
}

/// Stop the current runtime and launch a fresh one (202; needs a launched runtime).
#[utoipa::path(post, path = "/v1/workspaces/{workspaceId}/restart", tag = "workspaces", operation_id = "restartWorkspace",
    params(("workspaceId" = String, Path)),
    request_body = OwnerRequest,
    responses((status = 202, body = RestartWorkspaceResponse), InvalidRequest, Unauthenticated, NotFound, Conflict, Internal),
    security(("apiToken" = [])))]
pub async fn restart_workspace(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    JsonBody(req): JsonBody<OwnerRequest>,
) -> Result<(StatusCode, Json<RestartWorkspaceResponse>), ApiError> {
    let owner = req.owner_user_id.into_id();
    // A capture-sourced restart claims its session: as a create on it, not
    // over another executor's work that is not confirmed saved.
    let view = app.store.get_workspace(&owner, &workspace_id).await?.ok_or(ApiError::NotFound)?;
    if let Some(session) = view.workspace.spec.capture_session() {
        crate::takeover::check_takeover(&app, &owner, &SessionId::from(session), None, None, false).await?;
    }
    let next = app.store.request(&owner, &workspace_id, Request::Restart).await?.ok_or(ApiError::NotFound)?;
    app.work_enqueued();
    let (workspace, run_id) = (next.workspace, next.queued_run.map(|r| r.id).unwrap_or_default());
    Ok((
        StatusCode::ACCEPTED,
        Json(RestartWorkspaceResponse {
            workspace_id: workspace.id.to_string(),
            run_id: run_id.to_string(),
            status: workspace.status,
        }),
    ))
}

/// Where an SSH gateway connects for this workspace (gateway-authenticated).
#[utoipa::path(get, path = "/v1/workspaces/{workspaceId}/ssh-target", tag = "workspaces", operation_id = "getWorkspaceSshTarget",
    params(
        ("workspaceId" = String, Path),
        ("x-sealant-principal-id" = Option<String>, Header, description = "The SSH client principal to authorize"),
    ),
    responses((status = 200, body = WorkspaceSshTarget), Unauthenticated, NotFound, Conflict, Unavailable, Internal),
    security(("gatewayToken" = [])))]
pub async fn get_workspace_ssh_target(
    State(app): State<AppState>,
    Path(workspace_id): Path<WorkspaceId>,
    headers: HeaderMap,
) -> Result<Json<WorkspaceSshTarget>, ApiError> {
    require_gateway(&app, &headers)?;
    let principal = headers
        .get(PRINCIPAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| ApiError::Unauthorized(format!("the {PRINCIPAL_HEADER} header is required")))?;
    let found = app.store.find_workspace_for_principal(&workspace_id, principal).await?.ok_or(ApiError::NotFound)?;
    // A sleeping workspace is woken for the session (as its owner's use).
    let owner = found.workspace.owner_user_id.clone();
    let view = crate::waiting::awake(&app, &owner, &workspace_id, WakeCause::Ssh, None).await?;
    let id = view.workspace.id.clone();
    let live = view.current_run.as_ref().and_then(|run| {
        let runtime = run.runtime.as_ref().filter(|_| run.runtime_removed_at.is_none())?;
        Some((run, runtime))
    });
    let Some((run, runtime)) = live.filter(|_| view.workspace.desired_state == sluice_store::DesiredState::Running)
    else {
        return Err(ApiError::conflict(
            format!("workspace {id} has no live runtime (it is {})", view.workspace.status),
            Some(Code::Stored(ConflictCode::NoLiveRuntime)),
        ));
    };
    // Launched but not answering yet: worth retrying shortly.
    let (Some(socket), RuntimeStatus::Ready) = (runtime.endpoint.clone(), runtime.status) else {
        return Err(ApiError::ServiceUnavailable(format!("workspace {id}'s executor is starting; try again shortly")));
    };
    // The executor's worker, when its host serves an address: reachable
    // from another machine with the ticket. Otherwise (one host, no
    // internal API) the daemon's socket on that host.
    let worker = match (&run.host, &app.config.cluster_authority) {
        (Some(host), Some(authority)) => app.store.worker_address(host).await?.map(|url| (url, authority.clone())),
        _ => None,
    };
    let (endpoint, gateway) = match worker {
        Some((url, authority)) => {
            let expires_at = sluice_store::clock::now_ms() + sluice_executor::ticket::TICKET_TTL_MS;
            let ticket = sluice_executor::ticket::Ticket {
                run: run.id.to_string(),
                principal: principal.to_owned(),
                expires_at,
            };
            let gateway = SshTargetGateway {
                ticket: ticket.issue(&|b| app.store.sealer().keyed_digest(b)),
                ticket_expires_at: sluice_store::clock::rfc3339(expires_at),
                certificate_authority: authority,
            };
            (format!("{url}{}{}", sluice_executor::ticket::GATEWAY_PATH, run.id), Some(gateway))
        }
        _ => (socket, None),
    };
    Ok(Json(WorkspaceSshTarget {
        workspace_id: id.to_string(),
        attempt_id: run.id.to_string(),
        runtime: SshTargetRuntime {
            adapter: runtime.adapter,
            resource_id: runtime.resource_id.clone(),
            reference: runtime.reference.clone(),
            status: runtime.status,
            endpoint,
        },
        gateway,
    }))
}
