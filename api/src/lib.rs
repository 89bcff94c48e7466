//! The sluice HTTP API: routing, authentication, validation, error mapping
//! and the OpenAPI document. `serve` runs it on a listener the caller bound,
//! so tests run the real server on port 0.

pub mod auth;
mod capture_archive;
mod console;
pub mod error;
mod extract;
pub mod listener;
pub mod openapi;
pub mod preview_proxy;
mod routes;
mod takeover;
mod trace;
pub mod validate;
mod waiting;
pub mod wire;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, Uri};
use axum::routing::{delete, get, patch, post};
use axum::{Json, middleware};
use sluice_store::Store;

pub use auth::TokenSet;
use error::ApiError;
pub use listener::HttpLimits;
use routes::workspaces as ws;
use sluice_domain::ids::{WorkerId, WorkspaceId};

/// What the API needs besides the store.
#[derive(Debug, Clone, Default)]
pub struct ApiConfig {
    pub api_tokens: TokenSet,
    pub gateway_tokens: TokenSet,
    /// Lifetime of a workspace whose create names none.
    pub default_ttl_seconds: Option<i64>,
    /// Timeouts and limits of the listener.
    pub http: HttpLimits,
    /// Resources (`spec.resources` keys) the runtime behind this API cannot
    /// enforce, with the reason; `None` when the API runs apart from its
    /// workers and does not know.
    pub unenforceable: Option<Vec<(String, String)>>,
    /// Reaches executors' daemons; `None` where this API cannot (then
    /// capture calls answer 409).
    pub control: Option<std::sync::Arc<dyn sluice_executor::Executors>>,
    /// What a capture session created without rules of its own keeps and
    /// may hold.
    pub capture_defaults: CaptureDefaults,
    /// Reads captures back out of the object store; `None` where this API
    /// has no store (then the timeline's reads of trees answer 503).
    pub captures: Option<std::sync::Arc<sluice_capture_store::reader::CaptureReader>>,
    /// The install's cluster authority (PEM), which a gateway checks a
    /// worker's certificate against; `None` where it is not derived.
    pub cluster_authority: Option<String>,
    /// Where previews are served; `None` where this API serves none (then
    /// granting one answers 422 `previews-not-configured`).
    pub previews: Option<PreviewSettings>,
    /// This process's metrics (shared with its worker, if it serves one).
    pub metrics: Arc<sluice_telemetry::Metrics>,
    /// Webhook endpoints may point inside the install's hosts or networks.
    pub webhook_allow_private: bool,
}

/// How preview URLs are made: `SCHEME://PORT-WORKSPACEID.DOMAIN[:LISTEN]/`.
#[derive(Debug, Clone)]
pub struct PreviewSettings {
    pub domain: String,
    /// `https`, or `http` behind a TLS-terminating proxy (`--preview-plaintext`).
    pub scheme: &'static str,
    /// The port URLs name; `None` for the scheme's own (443 or 80).
    pub url_port: Option<u16>,
}

impl PreviewSettings {
    pub fn url_of(&self, port: u16, workspace_id: &WorkspaceId) -> String {
        let host = sluice_domain::preview::host_of(port, workspace_id, &self.domain);
        match self.url_port {
            Some(listen) => format!("{}://{host}:{listen}/", self.scheme),
            None => format!("{}://{host}/", self.scheme),
        }
    }
}

/// The install's capture session defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct CaptureDefaults {
    pub retention: sluice_store::capture::Retention,
    pub quota_bytes: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<ApiConfig>,
    /// Told when a request leaves work due, so a worker in this process
    /// starts on it at once instead of at its next claim.
    pub wake: Option<Arc<tokio::sync::Notify>>,
    /// When the state gauges were last read: one scrape reads at a time.
    pub(crate) scrapes: Arc<tokio::sync::Mutex<Option<std::time::Instant>>>,
    /// Event streams open at once, at most [`MAX_STREAMS`].
    pub(crate) streams: Arc<tokio::sync::Semaphore>,
    /// Flips when the process shuts down: open event streams end, so they
    /// do not hold the shutdown.
    pub closing: Option<tokio::sync::watch::Receiver<bool>>,
    /// This process's name as the holder of the exec runs it runs itself.
    pub(crate) runner: WorkerId,
    /// Requests waiting for a workspace to change.
    pub(crate) waiters: waiting::Waiters,
}

/// How long this process holds an exec run it runs itself between
/// renewals (as a worker holds a job).
pub(crate) const EXEC_LEASE_MS: i64 = 60_000;

/// Event streams one API process serves at once.
pub const MAX_STREAMS: usize = 256;

impl AppState {
    pub fn new(store: Store, config: ApiConfig) -> AppState {
        AppState {
            store,
            config: Arc::new(config),
            wake: None,
            scrapes: Default::default(),
            streams: Arc::new(tokio::sync::Semaphore::new(MAX_STREAMS)),
            closing: None,
            runner: WorkerId::from(sluice_store::clock::new_id("api")),
            waiters: waiting::Waiters::new(),
        }
    }

    /// The same state, told to wake this process's worker.
    pub fn waking(mut self, wake: Arc<tokio::sync::Notify>) -> AppState {
        self.wake = Some(wake);
        self
    }

    /// Whether the process is shutting down.
    pub(crate) fn closing(&self) -> bool {
        self.closing.as_ref().is_some_and(|rx| *rx.borrow())
    }

    pub(crate) fn work_enqueued(&self) {
        if let Some(wake) = &self.wake {
            wake.notify_one();
        }
    }
}

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    let authenticated = Router::new()
        .route("/v1/workspaces", post(ws::create_workspace).get(ws::list_workspaces))
        .route("/v1/workspaces/idempotency-keys/{idempotencyKey}", get(ws::get_workspace_create))
        .route("/v1/workspaces/idempotency-keys/{idempotencyKey}/cancel", post(ws::cancel_workspace_create))
        .route("/v1/workspaces/{workspaceId}", get(ws::get_workspace).delete(ws::delete_workspace))
        .route("/v1/workspaces/{workspaceId}/name", patch(ws::rename_workspace))
        .route("/v1/workspaces/{workspaceId}/expire", post(ws::expire_workspace))
        .route("/v1/workspaces/{workspaceId}/attempts", get(ws::list_workspace_attempts))
        .route("/v1/workspaces/{workspaceId}/events", get(ws::list_workspace_events))
        .route("/v1/workspaces/{workspaceId}/events/stream", get(routes::events::stream_workspace_events))
        .route("/v1/events/stream", get(routes::events::stream_events))
        .route("/v1/workspaces/{workspaceId}/bind", post(ws::bind_workspace))
        .route("/v1/workspaces/{workspaceId}/capture", get(ws::get_workspace_capture_status))
        .route("/v1/workspaces/{workspaceId}/capture/flush", post(ws::flush_workspace_capture))
        .route("/v1/workspaces/{workspaceId}/capture/replan", post(ws::replan_workspace_capture))
        .route("/v1/workspaces/{workspaceId}/exec", post(ws::exec_workspace))
        .route("/v1/workspaces/{workspaceId}/files", get(routes::files::read_file).put(routes::files::write_file))
        .route("/v1/workspaces/{workspaceId}/files/list", get(routes::files::list_files))
        .route("/v1/workspaces/{workspaceId}/files/watch", get(routes::files::watch_files))
        .route(
            "/v1/workspaces/{workspaceId}/processes",
            post(routes::processes::start_process).get(routes::processes::list_processes),
        )
        .route("/v1/workspaces/{workspaceId}/processes/{processId}/signal", post(routes::processes::signal_process))
        .route("/v1/workspaces/{workspaceId}/processes/{processId}/stdin", post(routes::processes::write_stdin))
        .route("/v1/workspaces/{workspaceId}/processes/{processId}/output", get(routes::processes::process_output))
        .route(
            "/v1/workspaces/{workspaceId}/files/archive",
            get(routes::files::pack_archive).put(routes::files::unpack_archive),
        )
        .route("/v1/workspaces/{workspaceId}/files/mkdir", post(routes::files::make_directory))
        .route("/v1/workspaces/{workspaceId}/files/move", post(routes::files::move_file))
        .route("/v1/workspaces/{workspaceId}/files/remove", post(routes::files::remove_file))
        .route("/v1/workspaces/{workspaceId}/stop", post(ws::stop_workspace))
        .route("/v1/workspaces/{workspaceId}/recover", post(ws::recover_workspace))
        .route("/v1/workspaces/{workspaceId}/restart", post(ws::restart_workspace))
        .route("/v1/workspaces/{workspaceId}/sleep", post(ws::sleep_workspace))
        .route("/v1/workspaces/{workspaceId}/wake", post(ws::wake_workspace))
        .route("/v1/workspaces/{workspaceId}/fork", post(routes::forks::fork_workspace))
        .route("/v1/capture-sessions/{sessionId}/captures/{n}/fork", post(routes::forks::fork_capture))
        .route("/v1/workspaces/{workspaceId}/sessions", get(routes::ssh_keys::list_workspace_sessions))
        .route(
            "/v1/workspaces/{workspaceId}/previews",
            post(routes::previews::create_preview).get(routes::previews::list_previews),
        )
        .route("/v1/workspaces/{workspaceId}/previews/{previewId}", delete(routes::previews::revoke_preview))
        .route("/v1/runs/{runId}", get(ws::get_run))
        .route("/v1/runs/{runId}/stream", get(routes::runs::stream_run))
        .route("/v1/retained-executors", get(ws::list_retained_executors))
        .route("/v1/jobs/failed", get(routes::jobs::list_failed_jobs))
        .route("/v1/workers", get(routes::fleet::list_workers))
        .route("/v1/images", get(routes::fleet::list_images))
        .route(
            "/v1/templates",
            post(routes::templates::create_template_build)
                .layer(DefaultBodyLimit::max(routes::templates::MAX_BODY_BYTES))
                .get(routes::templates::list_templates),
        )
        .route("/v1/templates/{name}", get(routes::templates::get_template))
        .route("/v1/templates/{name}/builds/{buildId}", get(routes::templates::get_template_build))
        .route("/v1/templates/{name}/builds/{buildId}/logs", get(routes::templates::template_build_logs))
        .route("/v1/hosts/{host}/cordon", post(routes::fleet::cordon_host))
        .route("/v1/hosts/{host}/uncordon", post(routes::fleet::uncordon_host))
        .route("/v1/hosts/{host}/drain", post(routes::fleet::drain_host))
        .route("/v1/hosts/{host}/forget", post(routes::fleet::forget_host))
        .route("/v1/jobs/retry", post(routes::jobs::retry_job))
        .route("/metrics", get(routes::metrics::metrics))
        .route("/v1/webhooks", post(routes::webhooks::create_webhook).get(routes::webhooks::list_webhooks))
        .route("/v1/webhooks/{webhookId}", get(routes::webhooks::get_webhook).delete(routes::webhooks::delete_webhook))
        .route("/v1/webhooks/{webhookId}/enable", post(routes::webhooks::enable_webhook))
        .route("/v1/webhooks/{webhookId}/deliveries", get(routes::webhooks::list_webhook_deliveries))
        .route("/v1/ssh-keys", post(routes::ssh_keys::register_ssh_key).get(routes::ssh_keys::list_ssh_keys))
        .route("/v1/ssh-keys/{fingerprint}", delete(routes::ssh_keys::delete_ssh_key))
        .route("/v1/capture-sessions", post(routes::capture_sessions::create_capture_session))
        .route(
            "/v1/capture-sessions/{sessionId}",
            get(routes::capture_sessions::get_capture_session).delete(routes::capture_sessions::delete_capture_session),
        )
        .route("/v1/capture-sessions/{sessionId}/captures", get(routes::capture_sessions::list_captures))
        .route("/v1/capture-sessions/{sessionId}/captures/{n}/diff", get(routes::capture_sessions::diff_captures))
        .route("/v1/capture-sessions/{sessionId}/captures/{n}/files", get(routes::capture_sessions::read_capture_file))
        .route("/v1/capture-sessions/{sessionId}/captures/{n}/archive", get(routes::capture_sessions::archive_capture))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_api_token));

    Router::new()
        .merge(authenticated)
        // The gateway authenticates with its own header, checked in the handler.
        .route("/v1/workspaces/{workspaceId}/ssh-target", get(ws::get_workspace_ssh_target))
        .route("/v1/gateway/ssh-keys/{fingerprint}", get(routes::ssh_keys::gateway_ssh_key))
        // The operator console signs its own sessions in.
        .merge(console::router())
        .route("/openapi.json", get(openapi_json))
        .route("/healthz", get(health))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.config.http.max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), trace::request_span))
        .with_state(state)
}

/// `GET /metrics` alone, with no token: for a listener of its own
/// (`--metrics-listen`) that only the scraping network reaches.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(routes::metrics::metrics))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Serves the API on `listener` (with the configured timeouts and limits)
/// until `shutdown` resolves, then finishes the requests in flight.
pub async fn serve(
    state: AppState,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.config.http.clone();
    listener::serve(router(state), listener, limits, shutdown).await
}

async fn openapi_json() -> Json<serde_json::Value> {
    Json(openapi::document())
}

/// How long `/healthz` waits for the database.
const HEALTH_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Liveness and database reachability.
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "health",
    responses((status = 200, body = wire::Health), (status = 503, body = error::ErrorBody)))]
async fn health(State(app): State<AppState>) -> Result<Json<wire::Health>, ApiError> {
    // Bounded well below the database wait: a health check answers fast.
    let answered = tokio::time::timeout(HEALTH_WITHIN, app.store.ping()).await;
    if !matches!(answered, Ok(Ok(()))) {
        return Err(ApiError::ServiceUnavailable("the database does not answer".into()));
    }
    let backend = match app.store.backend() {
        sluice_store::BackendKind::Sqlite => "sqlite",
        sluice_store::BackendKind::Postgres => "postgres",
    };
    Ok(Json(wire::Health { status: "ok".into(), backend: backend.into() }))
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::NoRoute(format!("no route for {method} {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{} does not accept {method}", uri.path()))
}
