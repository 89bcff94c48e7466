//! Executor calls across hosts. A worker serves its host's executors on an
//! internal API (HTTPS, callers authenticated by the cluster credential):
//! [`server`] answers the calls, [`sessions`] relays gateways' interactive
//! sessions, [`routed`] is the executor port that sends each call to the
//! executor's host, and [`credential`] is the install's certificate
//! authority they all authenticate with.

pub mod credential;
pub mod refusal;
pub mod routed;
pub mod server;
pub mod sessions;

use axum::extract::DefaultBodyLimit;
use axum::routing::post;

use server::{CALL_PATH, GATEWAY_PATH, MAX_CALL_BYTES, SESSION_PATH, Serving};

/// The internal API a worker serves to the rest of sluice (executor calls,
/// for members only: the caller wraps it with that check) and to SSH
/// gateways (with a ticket the API issued).
pub fn router(serving: Serving) -> axum::Router {
    axum::Router::new()
        .route(CALL_PATH, post(server::serve_call))
        .route(&format!("{SESSION_PATH}{{run_id}}"), axum::routing::get(server::serve_session))
        .route(&format!("{GATEWAY_PATH}{{run_id}}"), axum::routing::get(server::gateway_target))
        .route(&format!("{GATEWAY_PATH}{{run_id}}/session"), axum::routing::get(sessions::relay))
        .layer(DefaultBodyLimit::max(MAX_CALL_BYTES))
        .with_state(serving)
}
