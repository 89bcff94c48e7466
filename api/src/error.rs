//! The one place that turns failures into HTTP answers. Every error body is
//! `{"_tag", "message", "code"?}`; a 500 says little to the caller and the
//! cause is logged in full.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sluice_store::StoreError;
use utoipa::ToSchema;

/// An error answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error class.
    #[serde(rename = "_tag")]
    #[schema(rename = "_tag")]
    pub tag: &'static str,
    pub message: String,
    /// A stable reason, where one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
}

/// What a 503 asks the caller to wait before trying again.
const RETRY_AFTER_SECONDS: &str = "1";

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    /// Uniform: says nothing about whether the workspace exists.
    #[error("workspace not found")]
    NotFound,
    /// The fleet never knew a host of that name.
    #[error("no such host")]
    HostNotFound,
    /// No SSH key has that fingerprint.
    #[error("no such ssh key")]
    SshKeyNotFound,
    /// Uniform, like `NotFound`, for capture sessions.
    #[error("capture session not found")]
    SessionNotFound,
    /// The session keeps no capture at that position.
    #[error("capture {0} is not kept by this session")]
    CaptureNotFound(u64),
    /// The capture holds no file at the path asked for (not quoted: it is
    /// the caller's).
    #[error("capture {0} holds no file at that path")]
    FileNotFound(u64),
    #[error("{message}")]
    Conflict { message: String, code: Option<&'static str> },
    /// A request this install cannot serve, refused rather than ignored.
    #[error("{message}")]
    Unsupported { message: String, code: &'static str },
    /// A body over `--max-body-bytes`.
    #[error("the request body is larger than this server accepts")]
    PayloadTooLarge,
    #[error("{0}")]
    ServiceUnavailable(String),
    /// No route answers this method and path.
    #[error("{0}")]
    NoRoute(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("internal error: {0}")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What the operator console refuses. Its pages show the message; the
/// status is chosen here, with every other answer of the API listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleRefusal {
    /// No session, or a form that is not this session's (expired, or its
    /// csrf token does not match).
    Forbidden(&'static str),
    /// A form or a filter that cannot be read.
    Invalid(&'static str),
    /// What the page names does not exist.
    NotFound(&'static str),
    /// Not signed in: a sign-in with a wrong token, or a stream asked for
    /// without a session.
    SignedOut,
    /// The console carries as many streams as it takes.
    Busy,
}

impl ConsoleRefusal {
    pub fn status(self) -> StatusCode {
        match self {
            ConsoleRefusal::Forbidden(_) => StatusCode::FORBIDDEN,
            ConsoleRefusal::Invalid(_) => StatusCode::BAD_REQUEST,
            ConsoleRefusal::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleRefusal::SignedOut => StatusCode::UNAUTHORIZED,
            ConsoleRefusal::Busy => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            ConsoleRefusal::Forbidden(message)
            | ConsoleRefusal::Invalid(message)
            | ConsoleRefusal::NotFound(message) => message,
            ConsoleRefusal::SignedOut => "sign in first",
            ConsoleRefusal::Busy => "the console carries as many streams as it takes; try again shortly",
        }
    }
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::BadRequest(message.into())
    }

    pub fn conflict(message: impl Into<String>, code: Option<&'static str>) -> ApiError {
        ApiError::Conflict { message: message.into(), code }
    }

    pub(crate) fn status_and_body(&self) -> (StatusCode, ErrorBody) {
        let body = |tag, message: String, code| ErrorBody { tag, message, code };
        match self {
            ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, body("WorkspaceBadRequestError", m.clone(), None)),
            ApiError::Unauthorized(m) => {
                (StatusCode::UNAUTHORIZED, body("WorkspaceUnauthorizedError", m.clone(), None))
            }
            ApiError::NotFound => {
                (StatusCode::NOT_FOUND, body("WorkspaceNotFoundError", "workspace not found".into(), None))
            }
            ApiError::HostNotFound => {
                (StatusCode::NOT_FOUND, body("HostNotFoundError", "no such host in the fleet".into(), None))
            }
            ApiError::SshKeyNotFound => {
                (StatusCode::NOT_FOUND, body("SshKeyNotFoundError", "no ssh key has that fingerprint".into(), None))
            }
            ApiError::SessionNotFound => {
                (StatusCode::NOT_FOUND, body("CaptureSessionNotFoundError", "capture session not found".into(), None))
            }
            ApiError::CaptureNotFound(n) => (
                StatusCode::NOT_FOUND,
                body("CaptureNotFoundError", format!("capture {n} is not kept by this session"), None),
            ),
            ApiError::FileNotFound(n) => (
                StatusCode::NOT_FOUND,
                body("CaptureFileNotFoundError", format!("capture {n} holds no file at that path"), None),
            ),
            ApiError::Conflict { message, code } => {
                (StatusCode::CONFLICT, body("WorkspaceConflictError", message.clone(), *code))
            }
            ApiError::Unsupported { message, code } => {
                let tag = match *code {
                    "runtime-env-references-unsupported" => "WorkspaceRuntimeEnvReferencesUnsupportedError",
                    "workspace-docker-unsupported" => "WorkspaceDockerServiceUnsupportedError",
                    _ => "WorkspaceFeatureUnsupportedError",
                };
                (StatusCode::UNPROCESSABLE_ENTITY, body(tag, message.clone(), Some(*code)))
            }
            ApiError::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                body(
                    "WorkspacePayloadTooLargeError",
                    "the request body is larger than this server accepts (see --max-body-bytes)".into(),
                    None,
                ),
            ),
            ApiError::ServiceUnavailable(m) => {
                (StatusCode::SERVICE_UNAVAILABLE, body("WorkspaceServiceUnavailableError", m.clone(), None))
            }
            ApiError::NoRoute(m) => (StatusCode::NOT_FOUND, body("RouteNotFoundError", m.clone(), None)),
            ApiError::MethodNotAllowed(m) => {
                (StatusCode::METHOD_NOT_ALLOWED, body("MethodNotAllowedError", m.clone(), None))
            }
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                body("WorkspaceInternalServerError", "internal error; the server log has the cause".into(), None),
            ),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::IdempotencyKeyReused => ApiError::conflict(
                "this idempotencyKey was already used by this owner with a different request",
                Some("idempotency-key-reused"),
            ),
            StoreError::CreateCancelled => ApiError::conflict(
                "the create with this idempotencyKey was cancelled; nothing was created",
                Some("create-cancelled"),
            ),
            StoreError::Guard(violation) => ApiError::BadRequest(violation.to_string()),
            StoreError::Conflict { message, code } => ApiError::conflict(message, Some(code)),
            StoreError::Unavailable(cause) if e.is_disk_full() => {
                tracing::warn!(error = %cause, "the database has no space left");
                ApiError::ServiceUnavailable("the database has no space left; try again once space is freed".into())
            }
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "the database is unavailable");
                ApiError::ServiceUnavailable("the database is unavailable; try again shortly".into())
            }
            other => ApiError::Internal(Box::new(other)),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(cause) = &self {
            let mut chain = cause.to_string();
            let mut source = cause.source();
            while let Some(s) = source {
                chain.push_str(": ");
                chain.push_str(&s.to_string());
                source = s.source();
            }
            tracing::error!(error = %chain, "request failed");
        }
        let (status, body) = self.status_and_body();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // Unavailable is passing by nature: say when to come back.
            return (status, [(axum::http::header::RETRY_AFTER, RETRY_AFTER_SECONDS)], Json(body)).into_response();
        }
        (status, Json(body)).into_response()
    }
}

impl From<sluice_domain::guard::GuardViolation> for ApiError {
    fn from(v: sluice_domain::guard::GuardViolation) -> ApiError {
        ApiError::BadRequest(v.to_string())
    }
}

/// The error answers as OpenAPI responses, one type per status, so each
/// route lists the ones it can give by name.
pub mod responses {
    use super::ErrorBody;
    use utoipa::IntoResponses;

    /// The request is invalid; the message names the field.
    #[derive(IntoResponses)]
    #[response(status = 400)]
    pub struct InvalidRequest(#[allow(dead_code)] ErrorBody);

    /// A missing or invalid token.
    #[derive(IntoResponses)]
    #[response(status = 401)]
    pub struct Unauthenticated(#[allow(dead_code)] ErrorBody);

    /// No such workspace for this caller (uniform: existence is not revealed).
    #[derive(IntoResponses)]
    #[response(status = 404)]
    pub struct NotFound(#[allow(dead_code)] ErrorBody);

    /// The request conflicts with the workspace's state; `code` gives a stable reason.
    #[derive(IntoResponses)]
    #[response(status = 409)]
    pub struct Conflict(#[allow(dead_code)] ErrorBody);

    /// A request this install cannot serve, refused with a stable `code`.
    #[derive(IntoResponses)]
    #[response(status = 422)]
    pub struct Unprocessable(#[allow(dead_code)] ErrorBody);

    /// An internal error; the server log has the cause.
    #[derive(IntoResponses)]
    #[response(status = 500)]
    pub struct Internal(#[allow(dead_code)] ErrorBody);

    /// A dependency (the database, a runtime) does not answer.
    #[derive(IntoResponses)]
    #[response(status = 503)]
    pub struct Unavailable(#[allow(dead_code)] ErrorBody);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_console_refusal_has_its_status_and_a_message() {
        for (refusal, status) in [
            (ConsoleRefusal::Forbidden("sign in again"), 403),
            (ConsoleRefusal::Invalid("the form could not be read"), 400),
            (ConsoleRefusal::NotFound("no such workspace"), 404),
            (ConsoleRefusal::SignedOut, 401),
            (ConsoleRefusal::Busy, 503),
        ] {
            assert_eq!(refusal.status().as_u16(), status, "{refusal:?}");
            assert!(!refusal.message().is_empty(), "{refusal:?}");
        }
    }
}
