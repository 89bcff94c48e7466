//! The one place that turns failures into HTTP answers. Every error body is
//! `{"_tag", "message", "code"?}`; a 500 says little to the caller and the
//! cause is logged in full.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sluice_store::{ConflictCode, StoreError};
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
    /// The worktree has nothing at the path asked for (not quoted: it is
    /// the caller's).
    #[error("the workspace's worktree has nothing at that path")]
    WorktreeFileNotFound,
    /// No template of that name, or no build of it with that id.
    #[error("no such template or build")]
    TemplateNotFound,
    /// The executor keeps no process of that id.
    #[error("no process of the workspace has that id")]
    ProcessNotFound,
    /// A byte range that starts past the file's end.
    #[error("the range asked for is not within the file")]
    RangeNotSatisfiable,
    #[error("{message}")]
    Conflict { message: String, code: Option<Code> },
    /// A request this install cannot serve, refused rather than ignored.
    #[error("{message}")]
    Unsupported { message: String, code: Unsupported },
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

/// Every `code` a 409 of the workspaces API names: the rule the request
/// broke. Closed: a new rule is a new variant here and a row of the
/// reference's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A conflict the policy or the store refused with, by its own name.
    Stored(ConflictCode),
    IdempotencyKeyReused,
    CreateCancelled,
    /// This API process has no way into executors' daemons.
    ExecutorControlUnavailable,
    DaemonUnreachable,
    DaemonRefused,
    SshKeyInUse,
    /// A file operation found a directory where it needs a file, or the other way.
    WrongFileKind,
    FileExists,
    DirectoryNotEmpty,
    /// The workload may not touch that path.
    PermissionDenied,
}

impl Code {
    /// The codes of this API's own rules (the store's are `ConflictCode`'s).
    pub const OWN: &'static [Code] = &[
        Code::IdempotencyKeyReused,
        Code::CreateCancelled,
        Code::ExecutorControlUnavailable,
        Code::DaemonUnreachable,
        Code::DaemonRefused,
        Code::SshKeyInUse,
        Code::WrongFileKind,
        Code::FileExists,
        Code::DirectoryNotEmpty,
        Code::PermissionDenied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::Stored(code) => code.as_str(),
            Code::IdempotencyKeyReused => "idempotency-key-reused",
            Code::CreateCancelled => "create-cancelled",
            Code::ExecutorControlUnavailable => "executor-control-unavailable",
            Code::DaemonUnreachable => "daemon-unreachable",
            Code::DaemonRefused => "daemon-refused",
            Code::SshKeyInUse => "ssh-key-in-use",
            Code::WrongFileKind => "wrong-file-kind",
            Code::FileExists => "file-exists",
            Code::DirectoryNotEmpty => "directory-not-empty",
            Code::PermissionDenied => "permission-denied",
        }
    }
}

/// Every `code` a 422 names: what this install cannot serve, each with the
/// error class it is answered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    LimitUnenforceable,
    RuntimeEnvReferences,
    WorkspaceDocker,
    PreviewsNotConfigured,
    SourceSelection,
    DotfilesSelection,
    Credentials,
    TemplateBuilds,
}

impl Unsupported {
    pub const ALL: &'static [Unsupported] = &[
        Unsupported::LimitUnenforceable,
        Unsupported::RuntimeEnvReferences,
        Unsupported::WorkspaceDocker,
        Unsupported::PreviewsNotConfigured,
        Unsupported::SourceSelection,
        Unsupported::DotfilesSelection,
        Unsupported::Credentials,
        Unsupported::TemplateBuilds,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Unsupported::LimitUnenforceable => "limit-unenforceable",
            Unsupported::RuntimeEnvReferences => "runtime-env-references-unsupported",
            Unsupported::WorkspaceDocker => "workspace-docker-unsupported",
            Unsupported::PreviewsNotConfigured => "previews-not-configured",
            Unsupported::SourceSelection => "source-selection-unsupported",
            Unsupported::DotfilesSelection => "dotfiles-selection-unsupported",
            Unsupported::Credentials => "credentials-unsupported",
            Unsupported::TemplateBuilds => "template-builds-unsupported",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Unsupported::RuntimeEnvReferences => "WorkspaceRuntimeEnvReferencesUnsupportedError",
            Unsupported::WorkspaceDocker => "WorkspaceDockerServiceUnsupportedError",
            _ => "WorkspaceFeatureUnsupportedError",
        }
    }
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::BadRequest(message.into())
    }

    pub fn conflict(message: impl Into<String>, code: Option<Code>) -> ApiError {
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
            ApiError::WorktreeFileNotFound => (
                StatusCode::NOT_FOUND,
                body("WorktreeFileNotFoundError", "the workspace's worktree has nothing at that path".into(), None),
            ),
            ApiError::TemplateNotFound => (
                StatusCode::NOT_FOUND,
                body("TemplateNotFoundError", "no template (or build of it) has that name".into(), None),
            ),
            ApiError::ProcessNotFound => (
                StatusCode::NOT_FOUND,
                body("ProcessNotFoundError", "no process of the workspace has that id".into(), None),
            ),
            ApiError::RangeNotSatisfiable => (
                StatusCode::RANGE_NOT_SATISFIABLE,
                body("RangeNotSatisfiableError", "the range asked for is not within the file".into(), None),
            ),
            ApiError::Conflict { message, code } => {
                (StatusCode::CONFLICT, body("WorkspaceConflictError", message.clone(), code.map(Code::as_str)))
            }
            ApiError::Unsupported { message, code } => {
                (StatusCode::UNPROCESSABLE_ENTITY, body(code.tag(), message.clone(), Some(code.as_str())))
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
                Some(Code::IdempotencyKeyReused),
            ),
            StoreError::CreateCancelled => ApiError::conflict(
                "the create with this idempotencyKey was cancelled; nothing was created",
                Some(Code::CreateCancelled),
            ),
            StoreError::Guard(violation) => ApiError::BadRequest(violation.to_string()),
            StoreError::Conflict { message, code } => ApiError::conflict(message, Some(Code::Stored(code))),
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

    /// Every code this API can answer is in the reference's table, with
    /// the error class it comes with.
    #[test]
    fn every_code_is_in_the_reference() {
        let reference = include_str!("../../docs/reference.md");
        let table = |status: &str| {
            let row = reference.lines().find(|l| l.starts_with(&format!("| {status} |"))).unwrap();
            row.to_owned()
        };
        // The broker's and the registrar's conflicts are answered on their own wires.
        let elsewhere = [
            ConflictCode::Fenced,
            ConflictCode::HeadMoved,
            ConflictCode::Collecting,
            ConflictCode::ConcurrencyLimit,
            ConflictCode::SnapshotQuotaExceeded,
        ];
        let stored = ConflictCode::ALL.iter().filter(|c| !elsewhere.contains(c)).map(|&c| Code::Stored(c));
        let conflicts = table("409");
        for code in stored.chain(Code::OWN.iter().copied()) {
            let (status, body) = ApiError::conflict("m", Some(code)).status_and_body();
            assert_eq!((status, body.code), (StatusCode::CONFLICT, Some(code.as_str())));
            assert!(conflicts.contains(&format!("`{}`", code.as_str())), "{code:?} is not in the 409 row");
        }
        let unsupported = table("422");
        for &code in Unsupported::ALL {
            let (status, body) = ApiError::Unsupported { message: "m".into(), code }.status_and_body();
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
            assert!(unsupported.contains(&format!("`{}`", code.as_str())), "{code:?} is not in the 422 row");
            assert!(unsupported.contains(&format!("`{}`", body.tag)), "{code:?}'s class is not in the 422 row");
        }
    }

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
