//! Operators' view of the fleet: the workers and the hosts they run
//! executors on; cordoning a host, and draining it.

use axum::Json;
use axum::extract::{Path, State};
use sluice_domain::transition::Request;

use crate::AppState;
use crate::error::ApiError;
use crate::error::responses::{Internal, InvalidRequest, NotFound, Unauthenticated};
use crate::extract::JsonBody;
use crate::validate;
use crate::wire::*;

/// Every worker with its health and version, and every host with its load.
#[utoipa::path(get, path = "/v1/workers", tag = "operators", operation_id = "listWorkers",
    responses((status = 200, body = ListWorkersResponse), Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_workers(State(app): State<AppState>) -> Result<Json<ListWorkersResponse>, ApiError> {
    let items = app.store.workers().await?.into_iter().map(FleetWorker::from).collect();
    let hosts = app.store.hosts().await?.into_iter().map(FleetHost::from).collect();
    Ok(Json(ListWorkersResponse { items, hosts }))
}

/// Every image in the hosts' caches, as each host's freshest worker last
/// reported it: names, digest, size, shared layers, last use and the
/// executors running on it.
#[utoipa::path(get, path = "/v1/images", tag = "operators", operation_id = "listImages",
    responses((status = 200, body = ListImagesResponse), Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_images(State(app): State<AppState>) -> Result<Json<ListImagesResponse>, ApiError> {
    let mut freshest: std::collections::BTreeMap<String, sluice_store::fleet::WorkerRecord> = Default::default();
    for worker in app.store.workers().await? {
        let newer = freshest.get(&worker.member.host).is_none_or(|w| w.heartbeat_at < worker.heartbeat_at);
        if newer {
            freshest.insert(worker.member.host.clone(), worker);
        }
    }
    let items = freshest
        .into_values()
        .flat_map(|w| {
            let host = w.member.host;
            w.member.images.into_iter().map(move |image| HostImage::of(&host, image))
        })
        .collect();
    Ok(Json(ListImagesResponse { items }))
}

fn host_name(host: &str) -> Result<&str, ApiError> {
    validate::text("host", host, 253)?;
    Ok(host)
}

fn operator(req: &OperatorRequest) -> Result<String, ApiError> {
    validate::text("by", &req.by, 256)
}

async fn known_host(app: &AppState, host: &str) -> Result<FleetHost, ApiError> {
    Ok(app.store.host(host).await?.ok_or(ApiError::HostNotFound)?.into())
}

/// Cordons the host: it takes no new executor; what runs there goes on.
#[utoipa::path(post, path = "/v1/hosts/{host}/cordon", tag = "operators", operation_id = "cordonHost",
    params(("host" = String, Path)),
    request_body = OperatorRequest,
    responses((status = 200, body = FleetHost), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn cordon_host(
    State(app): State<AppState>,
    Path(host): Path<String>,
    JsonBody(req): JsonBody<OperatorRequest>,
) -> Result<Json<FleetHost>, ApiError> {
    let (host, by) = (host_name(&host)?, operator(&req)?);
    if !app.store.cordon(host, Some(&by)).await? {
        return Err(ApiError::HostNotFound);
    }
    tracing::info!(%host, %by, "host cordoned");
    Ok(Json(known_host(&app, host).await?))
}

/// Lets the host take new executors again.
#[utoipa::path(post, path = "/v1/hosts/{host}/uncordon", tag = "operators", operation_id = "uncordonHost",
    params(("host" = String, Path)),
    request_body = OperatorRequest,
    responses((status = 200, body = FleetHost), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn uncordon_host(
    State(app): State<AppState>,
    Path(host): Path<String>,
    JsonBody(req): JsonBody<OperatorRequest>,
) -> Result<Json<FleetHost>, ApiError> {
    let (host, by) = (host_name(&host)?, operator(&req)?);
    if !app.store.cordon(host, None).await? {
        return Err(ApiError::HostNotFound);
    }
    tracing::info!(%host, %by, "host uncordoned");
    Ok(Json(known_host(&app, host).await?))
}

/// Cordons the host, then asks every running workspace on it to stop: each
/// executor drains as any stop does (its work saved first, or retained).
/// Asking again stops what started there since.
#[utoipa::path(post, path = "/v1/hosts/{host}/drain", tag = "operators", operation_id = "drainHost",
    params(("host" = String, Path)),
    request_body = OperatorRequest,
    responses((status = 200, body = DrainHostResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn drain_host(
    State(app): State<AppState>,
    Path(host): Path<String>,
    JsonBody(req): JsonBody<OperatorRequest>,
) -> Result<Json<DrainHostResponse>, ApiError> {
    let (host, by) = (host_name(&host)?, operator(&req)?);
    if !app.store.cordon(host, Some(&by)).await? {
        return Err(ApiError::HostNotFound);
    }
    let mut stopping = Vec::new();
    for (owner, workspace_id) in app.store.workspaces_on_host(host).await? {
        let stop = Request::Stop { by: by.clone(), intent: sluice_store::StopIntent::default() };
        match app.store.request(&owner, &workspace_id, stop).await {
            Ok(Some(_)) => stopping.push(workspace_id.into_string()),
            // Gone or stopped meanwhile: nothing left to drain there.
            Ok(None) | Err(sluice_store::StoreError::Conflict { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    app.work_enqueued();
    tracing::info!(%host, %by, stopping = stopping.len(), "host draining");
    Ok(Json(DrainHostResponse { host: known_host(&app, host).await?, stopping }))
}

/// Declares the host lost with its executors, on the operator's word: each
/// is failed as `executor-lost` (its unsaved work with it), its capture
/// session free for a new executor, and a launch placed there but not
/// made goes elsewhere. A worker of the host that beats again brings it
/// back, with nothing of what was written off.
#[utoipa::path(post, path = "/v1/hosts/{host}/forget", tag = "operators", operation_id = "forgetHost",
    params(("host" = String, Path)),
    request_body = OperatorRequest,
    responses((status = 200, body = ForgetHostResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn forget_host(
    State(app): State<AppState>,
    Path(host): Path<String>,
    JsonBody(req): JsonBody<OperatorRequest>,
) -> Result<Json<ForgetHostResponse>, ApiError> {
    let (host, by) = (host_name(&host)?, operator(&req)?);
    let lost_runs = app.store.forget_host(host, &by).await?.ok_or(ApiError::HostNotFound)?;
    app.work_enqueued();
    let lost_runs = lost_runs.into_iter().map(String::from).collect();
    Ok(Json(ForgetHostResponse { host: known_host(&app, host).await?, lost_runs }))
}
