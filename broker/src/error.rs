//! Every non-2xx answer of the broker: the protocol's error envelope
//! `{"error": {code, message, retryable, details}}`, with `Retry-After`
//! where the protocol says to retry.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One refusal, as the protocol names it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct BrokerError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub retryable: bool,
    pub retry_after: Option<u64>,
    pub details: Value,
}

impl BrokerError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        BrokerError { status, code, message: message.into(), retryable: false, retry_after: None, details: json!({}) }
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retryable = true;
        self.retry_after = Some(seconds);
        self
    }

    pub fn reason(mut self, reason: &str) -> Self {
        self.details = json!({"reason": reason});
        self
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        BrokerError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub fn not_found() -> Self {
        BrokerError::new(StatusCode::NOT_FOUND, "not_found", "no such resource for this instance")
    }

    /// An idempotency key used before with a different request.
    pub fn idempotency_conflict() -> Self {
        BrokerError::new(
            StatusCode::CONFLICT,
            "idempotency_conflict",
            "the Idempotency-Key was used with a different request",
        )
    }

    pub fn internal() -> Self {
        let mut e = BrokerError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the broker failed; see its logs");
        e.retryable = true;
        e
    }

    pub fn admission_unavailable() -> Self {
        BrokerError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "admission_unavailable",
            "the broker cannot read its admission state and refuses new work",
        )
        .retry_after(5)
        .reason("unavailable")
    }
}

impl From<sluice_store::StoreError> for BrokerError {
    fn from(e: sluice_store::StoreError) -> Self {
        // The store's message can name rows, never secrets; it is logged,
        // and the client gets the envelope only.
        tracing::error!(error = %e, "broker store failure");
        BrokerError::internal()
    }
}

impl IntoResponse for BrokerError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "details": self.details,
        }});
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
