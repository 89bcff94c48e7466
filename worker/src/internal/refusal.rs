//! What the internal listener refuses, and the one place each refusal
//! becomes an HTTP status. The body is `{"message": …}`; a gateway shows
//! the message to its user.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The caller carries no ticket, or one not for this executor.
    Unauthenticated(&'static str),
    /// The executor the request names is not on this host.
    NotHere,
    /// The request itself is malformed.
    Invalid(String),
    /// The executor is not in a state to serve the request.
    NotServing(String),
    /// This host cannot take the request now: it carries as many as it
    /// takes, or what it must ask does not answer. Trying again may work.
    Unavailable(String),
    /// The executor's daemon failed the request.
    Upstream(String),
}

impl Refusal {
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Refusal::NotHere => StatusCode::NOT_FOUND,
            Refusal::Invalid(_) => StatusCode::BAD_REQUEST,
            Refusal::NotServing(_) => StatusCode::CONFLICT,
            Refusal::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::Upstream(_) => StatusCode::BAD_GATEWAY,
        }
    }

    fn message(&self) -> &str {
        match self {
            Refusal::Unauthenticated(message) => message,
            Refusal::NotHere => "no such executor on this host",
            Refusal::Invalid(message)
            | Refusal::NotServing(message)
            | Refusal::Unavailable(message)
            | Refusal::Upstream(message) => message,
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.status(), Json(serde_json::json!({"message": self.message()}))).into_response()
    }
}

/// The answer that hands a connection over to a session: the one success
/// status here that is not a plain 200.
pub(crate) fn switching_protocols() -> axum::http::response::Builder {
    Response::builder().status(StatusCode::SWITCHING_PROTOCOLS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_its_status() {
        for (refusal, status) in [
            (Refusal::Unauthenticated("no ticket"), 401),
            (Refusal::NotHere, 404),
            (Refusal::Invalid("bad".into()), 400),
            (Refusal::NotServing("stopped".into()), 409),
            (Refusal::Unavailable("full".into()), 503),
            (Refusal::Upstream("daemon".into()), 502),
        ] {
            assert_eq!(refusal.status().as_u16(), status, "{refusal:?}");
        }
    }
}
