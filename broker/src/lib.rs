//! The execution broker protocol v1, served by sluice on a listener of its
//! own, over HTTPS only, at `/broker/v1/…`. The conventions hold for every
//! answer, the framework's own included: the error envelope, `cache-control:
//! no-store`, `X-Request-Id`, the body limit, and never a redirect.

mod commands;
pub mod error;
mod exec;
mod files;
mod lease;
mod snapshots;
pub mod tls;
mod workspaces;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use sluice_store::Store;
use sluice_store::broker::{BrokerLease, LeaseRefusal};

pub use error::{BrokerCode, BrokerError};

/// Where the protocol is served: the base URL's path is `/broker`.
pub const PREFIX: &str = "/broker/v1";
/// The largest request body, after base64.
pub const MAX_BODY_BYTES: usize = 12 << 20;

/// What every broker handler shares.
#[derive(Clone)]
pub struct BrokerState {
    pub store: Store,
    /// Wakes this process's worker when work was enqueued.
    pub wake: Option<std::sync::Arc<tokio::sync::Notify>>,
    /// Calls into executors' daemons.
    pub control: Option<std::sync::Arc<dyn sluice_executor::Executors>>,
}

impl BrokerState {
    pub(crate) fn wake(&self) {
        if let Some(wake) = &self.wake {
            wake.notify_one();
        }
    }
}

/// The broker's routes, with the protocol's conventions around them.
pub fn router(state: BrokerState) -> Router {
    let v1 = Router::new()
        .route("/lease", get(lease::get_lease))
        .route("/workspaces", post(workspaces::acquire).get(workspaces::list_workspaces))
        .route("/workspaces/{workspace_id}", get(workspaces::get_workspace).delete(workspaces::release))
        .route("/workspaces/{workspace_id}/exec", post(exec::exec))
        .route(
            "/workspaces/{workspace_id}/commands/{identity}",
            axum::routing::put(commands::start).get(commands::read),
        )
        .route("/workspaces/{workspace_id}/commands/{identity}/cancel", post(commands::cancel))
        .route("/workspaces/{workspace_id}/files/read", post(files::read))
        .route("/workspaces/{workspace_id}/files/write", post(files::write))
        .route("/workspaces/{workspace_id}/snapshots", post(snapshots::create))
        .route("/snapshots/{snapshot_id}", axum::routing::delete(snapshots::delete))
        .fallback(no_route)
        .with_state(state);
    Router::new()
        .nest(PREFIX, v1)
        .fallback(no_route)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(conventions))
}

async fn no_route() -> BrokerError {
    BrokerError::not_found()
}

fn valid_request_id(value: &str) -> bool {
    (1..=64).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Echoes (or mints) the request id, forbids caching, and puts anything
/// that is not already the envelope into it.
async fn conventions(request: Request, next: Next) -> Response {
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid_request_id(v))
        .map(str::to_owned)
        .unwrap_or_else(|| sluice_store::clock::new_id("req"));
    let method = request.method().clone();
    let started = std::time::Instant::now();
    let declared =
        request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    // Refused from its declared length, before routing or reading it; a
    // body without one is cut off at the limit as it is read.
    let mut response = if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        BrokerError::too_large(MAX_BODY_BYTES).into_response()
    } else {
        next.run(request).await
    };
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.to_str().is_ok_and(|v| v.starts_with("application/json")));
    if !status.is_success() && !is_json {
        response = BrokerError::framework(status, MAX_BODY_BYTES).into_response();
    }
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-request-id", HeaderValue::from_str(&request_id).expect("checked characters"));
    // Method, status and id only: paths and bodies may carry what must not be logged.
    tracing::info!(target: "sluice::broker", %method, status = response.status().as_u16(), request_id, elapsed_ms = started.elapsed().as_millis() as u64, "broker request");
    response
}

/// A request's valid lease, from `Authorization: Bearer`.
pub struct Authenticated(pub BrokerLease);

/// A release's lease: as [`Authenticated`], but a superseded token past its
/// grace still releases its instance's workspaces.
pub struct Releasing(pub BrokerLease);

fn unauthenticated() -> BrokerError {
    BrokerError::new(BrokerCode::Unauthenticated, "a valid bearer token is required")
}

fn bearer(parts: &Parts) -> Result<&str, BrokerError> {
    parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(unauthenticated)
}

/// The answer for a token that carries no lease.
fn refused(lease: Result<BrokerLease, LeaseRefusal>) -> Result<BrokerLease, BrokerError> {
    match lease {
        Ok(lease) => Ok(lease),
        Err(LeaseRefusal::Unknown) => Err(unauthenticated()),
        Err(LeaseRefusal::Expired) => {
            Err(BrokerError::new(BrokerCode::LeaseExpired, "the token expired; install a new one"))
        }
        Err(LeaseRefusal::Superseded) => Err(BrokerError::new(
            BrokerCode::LeaseSuperseded,
            "the token was rotated and its grace period is over; install the new token",
        )),
        Err(LeaseRefusal::Revoked) => Err(BrokerError::new(
            BrokerCode::LeaseRevoked,
            "the token was revoked; the broker is off for this instance until a new token is installed",
        )),
    }
}

impl FromRequestParts<BrokerState> for Authenticated {
    type Rejection = BrokerError;

    async fn from_request_parts(parts: &mut Parts, state: &BrokerState) -> Result<Self, BrokerError> {
        let token = bearer(parts)?;
        refused(state.store.broker_lease(token).await?).map(Authenticated)
    }
}

impl FromRequestParts<BrokerState> for Releasing {
    type Rejection = BrokerError;

    async fn from_request_parts(parts: &mut Parts, state: &BrokerState) -> Result<Self, BrokerError> {
        let token = bearer(parts)?;
        refused(state.store.broker_lease_for_release(token).await?).map(Releasing)
    }
}

/// A JSON request body: unknown fields (nested ones too) and malformed
/// JSON are `400 invalid_request`, naming where.
pub struct BrokerJson<T>(pub T);

impl<T: serde::de::DeserializeOwned> axum::extract::FromRequest<BrokerState> for BrokerJson<T> {
    type Rejection = BrokerError;

    async fn from_request(request: Request, state: &BrokerState) -> Result<Self, BrokerError> {
        let bytes = axum::body::Bytes::from_request(request, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                BrokerError::too_large(MAX_BODY_BYTES)
            } else {
                BrokerError::invalid("the request body could not be read")
            }
        })?;
        let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            // Where, and serde's class of error; never the value.
            let path = e.path().to_string();
            let inner = e.into_inner();
            let text = inner.to_string();
            let what = match (inner.classify(), text.strip_prefix("unknown field `")) {
                (serde_json::error::Category::Data, Some(rest)) => {
                    format!("unknown field `{}`", rest.split('`').next().unwrap_or(""))
                }
                (serde_json::error::Category::Data, None) if text.starts_with("missing field") => {
                    text.split(" at line").next().unwrap_or("a missing field").to_owned()
                }
                (serde_json::error::Category::Data, None) => "a value of the wrong type or shape".to_owned(),
                _ => "malformed JSON".to_owned(),
            };
            BrokerError::invalid(format!("{what} at {path}"))
        })?;
        deserializer.end().map_err(|_| BrokerError::invalid("trailing characters after the JSON body"))?;
        Ok(BrokerJson(value))
    }
}

/// JSON answers of the broker.
pub(crate) fn ok<T: serde::Serialize>(status: StatusCode, body: T) -> Response {
    (status, Json(body)).into_response()
}

pub(crate) type Shared = State<BrokerState>;
