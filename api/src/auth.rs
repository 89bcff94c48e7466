//! Who may call: product backends with a bearer API token, SSH gateways with
//! their own token header. Tokens are held only as SHA-256 digests.

use std::collections::HashSet;

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;
use sluice_store::seal::token_digest;

use crate::AppState;
use crate::error::ApiError;

/// The gateway's token header, as the contract names it.
pub const GATEWAY_TOKEN_HEADER: &str = "x-sealant-gateway-token";
/// The SSH client principal the gateway asks for.
pub const PRINCIPAL_HEADER: &str = "x-sealant-principal-id";

/// A set of accepted tokens, kept as digests.
#[derive(Clone, Debug, Default)]
pub struct TokenSet {
    digests: HashSet<String>,
}

impl TokenSet {
    pub fn new<'a>(tokens: impl IntoIterator<Item = &'a str>) -> TokenSet {
        TokenSet { digests: tokens.into_iter().filter(|t| !t.is_empty()).map(token_digest).collect() }
    }

    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    pub fn accepts(&self, token: &str) -> bool {
        self.digests.contains(&token_digest(token))
    }

    /// Whether an accepted token's digest starts with `prefix` (a console
    /// session names its token so, and ends when the token is taken away).
    pub fn accepts_digest_prefix(&self, prefix: &str) -> bool {
        prefix.len() >= 16 && self.digests.iter().any(|d| d.starts_with(prefix))
    }
}

/// Middleware: the request must carry `Authorization: Bearer <API token>`.
pub async fn require_api_token(
    State(app): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let token = bearer(request.headers());
    match token {
        Some(t) if app.config.api_tokens.accepts(t) => Ok(next.run(request).await),
        Some(_) => Err(ApiError::Unauthorized("the API token is not valid".into())),
        None => Err(ApiError::Unauthorized("an API token is required: Authorization: Bearer <token>".into())),
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Checks the gateway token header.
pub fn require_gateway(app: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    match headers.get(GATEWAY_TOKEN_HEADER).and_then(|v| v.to_str().ok()) {
        Some(t) if app.config.gateway_tokens.accepts(t) => Ok(()),
        Some(_) => Err(ApiError::Unauthorized(format!("the {GATEWAY_TOKEN_HEADER} header is not valid"))),
        None => Err(ApiError::Unauthorized(format!("the {GATEWAY_TOKEN_HEADER} header is required"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_sets_compare_digests() {
        let set = TokenSet::new(["alpha", ""]);
        assert!(set.accepts("alpha"));
        assert!(!set.accepts("beta"));
        assert!(!set.accepts(""));
        assert!(!format!("{set:?}").contains("alpha"));
    }
}
