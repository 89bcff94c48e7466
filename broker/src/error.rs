//! Every non-2xx answer of the broker: the protocol's error envelope
//! `{"error": {code, message, retryable, details}}`, with `Retry-After`
//! where the protocol says to retry.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The protocol's error codes, each answered with its one status: the
/// only place the broker chooses an error's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerCode {
    ImageNotAllowed,
    SizeNotAllowed,
    EgressNotAllowed,
    EgressRequired,
    AdmissionUnavailable,
    CommandNotStarted,
    ConcurrencyLimit,
    EmergencyStopped,
    FileNotFound,
    FileTooLarge,
    IdempotencyConflict,
    IdempotencyInProgress,
    Internal,
    InvalidRequest,
    LeaseExpired,
    LeaseRevoked,
    LeaseSuperseded,
    NotAFile,
    NotFound,
    Paused,
    PayloadTooLarge,
    SnapshotGone,
    SnapshotQuotaExceeded,
    Unauthenticated,
    Unavailable,
    UpstreamError,
    WorkspaceGone,
    WorkspaceNotReady,
}

impl BrokerCode {
    pub const ALL: &'static [BrokerCode] = &[
        BrokerCode::ImageNotAllowed,
        BrokerCode::SizeNotAllowed,
        BrokerCode::EgressNotAllowed,
        BrokerCode::EgressRequired,
        BrokerCode::AdmissionUnavailable,
        BrokerCode::CommandNotStarted,
        BrokerCode::ConcurrencyLimit,
        BrokerCode::EmergencyStopped,
        BrokerCode::FileNotFound,
        BrokerCode::FileTooLarge,
        BrokerCode::IdempotencyConflict,
        BrokerCode::IdempotencyInProgress,
        BrokerCode::Internal,
        BrokerCode::InvalidRequest,
        BrokerCode::LeaseExpired,
        BrokerCode::LeaseRevoked,
        BrokerCode::LeaseSuperseded,
        BrokerCode::NotAFile,
        BrokerCode::NotFound,
        BrokerCode::Paused,
        BrokerCode::PayloadTooLarge,
        BrokerCode::SnapshotGone,
        BrokerCode::SnapshotQuotaExceeded,
        BrokerCode::Unauthenticated,
        BrokerCode::Unavailable,
        BrokerCode::UpstreamError,
        BrokerCode::WorkspaceGone,
        BrokerCode::WorkspaceNotReady,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BrokerCode::ImageNotAllowed => "image_not_allowed",
            BrokerCode::SizeNotAllowed => "size_not_allowed",
            BrokerCode::EgressNotAllowed => "egress_not_allowed",
            BrokerCode::EgressRequired => "egress_required",
            BrokerCode::AdmissionUnavailable => "admission_unavailable",
            BrokerCode::CommandNotStarted => "command_not_started",
            BrokerCode::ConcurrencyLimit => "concurrency_limit",
            BrokerCode::EmergencyStopped => "emergency_stopped",
            BrokerCode::FileNotFound => "file_not_found",
            BrokerCode::FileTooLarge => "file_too_large",
            BrokerCode::IdempotencyConflict => "idempotency_conflict",
            BrokerCode::IdempotencyInProgress => "idempotency_in_progress",
            BrokerCode::Internal => "internal",
            BrokerCode::InvalidRequest => "invalid_request",
            BrokerCode::LeaseExpired => "lease_expired",
            BrokerCode::LeaseRevoked => "lease_revoked",
            BrokerCode::LeaseSuperseded => "lease_superseded",
            BrokerCode::NotAFile => "not_a_file",
            BrokerCode::NotFound => "not_found",
            BrokerCode::Paused => "paused",
            BrokerCode::PayloadTooLarge => "payload_too_large",
            BrokerCode::SnapshotGone => "snapshot_gone",
            BrokerCode::SnapshotQuotaExceeded => "snapshot_quota_exceeded",
            BrokerCode::Unauthenticated => "unauthenticated",
            BrokerCode::Unavailable => "unavailable",
            BrokerCode::UpstreamError => "upstream_error",
            BrokerCode::WorkspaceGone => "workspace_gone",
            BrokerCode::WorkspaceNotReady => "workspace_not_ready",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            BrokerCode::ImageNotAllowed => StatusCode::UNPROCESSABLE_ENTITY,
            BrokerCode::SizeNotAllowed => StatusCode::UNPROCESSABLE_ENTITY,
            BrokerCode::EgressNotAllowed => StatusCode::UNPROCESSABLE_ENTITY,
            BrokerCode::EgressRequired => StatusCode::UNPROCESSABLE_ENTITY,
            BrokerCode::AdmissionUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            BrokerCode::CommandNotStarted => StatusCode::UNPROCESSABLE_ENTITY,
            BrokerCode::ConcurrencyLimit => StatusCode::TOO_MANY_REQUESTS,
            BrokerCode::EmergencyStopped => StatusCode::FORBIDDEN,
            BrokerCode::FileNotFound => StatusCode::NOT_FOUND,
            BrokerCode::FileTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            BrokerCode::IdempotencyConflict => StatusCode::CONFLICT,
            BrokerCode::IdempotencyInProgress => StatusCode::CONFLICT,
            BrokerCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            BrokerCode::InvalidRequest => StatusCode::BAD_REQUEST,
            BrokerCode::LeaseExpired => StatusCode::UNAUTHORIZED,
            BrokerCode::LeaseRevoked => StatusCode::UNAUTHORIZED,
            BrokerCode::LeaseSuperseded => StatusCode::UNAUTHORIZED,
            BrokerCode::NotAFile => StatusCode::UNPROCESSABLE_ENTITY,
            BrokerCode::NotFound => StatusCode::NOT_FOUND,
            BrokerCode::Paused => StatusCode::FORBIDDEN,
            BrokerCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            BrokerCode::SnapshotGone => StatusCode::GONE,
            BrokerCode::SnapshotQuotaExceeded => StatusCode::UNPROCESSABLE_ENTITY,
            BrokerCode::Unauthenticated => StatusCode::UNAUTHORIZED,
            BrokerCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            BrokerCode::UpstreamError => StatusCode::BAD_GATEWAY,
            BrokerCode::WorkspaceGone => StatusCode::GONE,
            BrokerCode::WorkspaceNotReady => StatusCode::CONFLICT,
        }
    }
}

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
    pub fn new(code: BrokerCode, message: impl Into<String>) -> Self {
        let (status, code) = (code.status(), code.as_str());
        BrokerError { status, code, message: message.into(), retryable: false, retry_after: None, details: json!({}) }
    }

    /// The envelope for an answer the framework made itself (a body over
    /// the limit, no route, a method the route does not take).
    /// A body over the limit of `max_body_bytes`.
    pub(crate) fn too_large(max_body_bytes: usize) -> BrokerError {
        BrokerError::framework(StatusCode::PAYLOAD_TOO_LARGE, max_body_bytes)
    }

    pub(crate) fn framework(status: StatusCode, max_body_bytes: usize) -> BrokerError {
        match status {
            StatusCode::PAYLOAD_TOO_LARGE => BrokerError::new(
                BrokerCode::PayloadTooLarge,
                format!("the request body is over {max_body_bytes} bytes"),
            ),
            StatusCode::NOT_FOUND => BrokerError::not_found(),
            // The framework's own status, with the protocol's code.
            s if s.is_client_error() => {
                let message = if s == StatusCode::METHOD_NOT_ALLOWED {
                    "method not allowed here"
                } else {
                    "the request is malformed"
                };
                BrokerError { status: s, ..BrokerError::invalid(message) }
            }
            _ => BrokerError::internal(),
        }
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
        BrokerError::new(BrokerCode::InvalidRequest, message)
    }

    pub fn not_found() -> Self {
        BrokerError::new(BrokerCode::NotFound, "no such resource for this instance")
    }

    /// An idempotency key used before with a different request.
    pub fn idempotency_conflict() -> Self {
        BrokerError::new(BrokerCode::IdempotencyConflict, "the Idempotency-Key was used with a different request")
    }

    pub fn internal() -> Self {
        let mut e = BrokerError::new(BrokerCode::Internal, "the broker failed; see its logs");
        e.retryable = true;
        e
    }

    pub fn admission_unavailable() -> Self {
        BrokerError::new(
            BrokerCode::AdmissionUnavailable,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code is named once, in the protocol's snake case, and answered
    /// with an error status; a few rows pin the statuses clients act on.
    #[test]
    fn each_code_has_one_name_and_one_error_status() {
        let mut names: Vec<&str> = BrokerCode::ALL.iter().map(|c| c.as_str()).collect();
        assert!(names.iter().all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')), "{names:?}");
        assert!(BrokerCode::ALL.iter().all(|c| c.status().is_client_error() || c.status().is_server_error()));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), BrokerCode::ALL.len(), "a code is listed twice");
        for (code, status) in [
            (BrokerCode::InvalidRequest, 400),
            (BrokerCode::Unauthenticated, 401),
            (BrokerCode::LeaseSuperseded, 401),
            (BrokerCode::Paused, 403),
            (BrokerCode::NotFound, 404),
            (BrokerCode::WorkspaceNotReady, 409),
            (BrokerCode::WorkspaceGone, 410),
            (BrokerCode::PayloadTooLarge, 413),
            (BrokerCode::SnapshotQuotaExceeded, 422),
            (BrokerCode::ConcurrencyLimit, 429),
            (BrokerCode::Internal, 500),
            (BrokerCode::UpstreamError, 502),
            (BrokerCode::AdmissionUnavailable, 503),
        ] {
            assert_eq!(code.status().as_u16(), status, "{}", code.as_str());
        }
        let refused = BrokerError::new(BrokerCode::WorkspaceGone, "gone");
        assert_eq!((refused.status.as_u16(), refused.code), (410, "workspace_gone"));
        let method = BrokerError::framework(StatusCode::METHOD_NOT_ALLOWED, 1);
        assert_eq!((method.status.as_u16(), method.code), (405, "invalid_request"));
    }
}
