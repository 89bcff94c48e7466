//! Request extractors whose failures are 400s that name the field, in the
//! API's own error shape (axum's defaults answer in plain text).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let is_json =
            req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
                v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !is_json {
            return Err(ApiError::bad_request("the request body must be JSON (content-type: application/json)"));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::bad_request("the request body is larger than this server accepts (see --max-body-bytes)")
            } else {
                ApiError::bad_request("the request body could not be read")
            }
        })?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Parses JSON, naming the path of the first field that does not fit.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            ApiError::bad_request(format!("invalid request body: {}", describe(&inner)))
        } else {
            ApiError::bad_request(format!("{path}: {}", describe(&inner)))
        }
    })?;
    de.end().map_err(|_| ApiError::bad_request("invalid request body: trailing characters after the JSON value"))?;
    Ok(value)
}

/// serde's message without the line/column suffix, which is noise to a caller.
fn describe(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Query parameters.
pub struct QueryOf<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryOf<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        serde_urlencoded::from_str(query).map(QueryOf).map_err(|e| ApiError::bad_request(format!("query: {e}")))
    }
}
