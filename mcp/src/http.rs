//! The streamable HTTP listener: `/mcp`, for clients that hold its bearer
//! token. The token is the listener's own, not the API's: a client of the
//! MCP server never learns the API token.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::Workspaces;

/// The MCP endpoint at `/mcp`, answering only requests with
/// `Authorization: Bearer <token>` whose `Host` is one of `allowed_hosts`
/// (against DNS rebinding: a browser page cannot name this server by a
/// host of its own).
pub fn router(tools: Workspaces, token: &str, allowed_hosts: Vec<String>, shutdown: CancellationToken) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_cancellation_token(shutdown.child_token());
    let service: StreamableHttpService<Workspaces, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(LocalSessionManager::default()), config);
    let expected = Arc::new(Sha256::digest(token.as_bytes()).to_vec());
    Router::new().nest_service("/mcp", service).layer(middleware::from_fn_with_state(expected, require_token))
}

/// Digests compared, not tokens: how long the comparison takes says nothing
/// of how much of a guess was right.
async fn require_token(State(expected): State<Arc<Vec<u8>>>, request: Request, next: Next) -> Response {
    let given = request.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, token) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    match given {
        Some(token) if Sha256::digest(token.as_bytes()).as_slice() == expected.as_slice() => next.run(request).await,
        Some(_) => (StatusCode::UNAUTHORIZED, "the MCP token is not valid\n").into_response(),
        None => (StatusCode::UNAUTHORIZED, "an MCP token is required: Authorization: Bearer <token>\n").into_response(),
    }
}
