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
                ApiError::PayloadTooLarge
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

/// serde's message without the line/column suffix, which is noise to a
/// caller, and without the value it refused (see [`without_value`]).
fn describe(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    without_value(text)
}

/// A deserializer's message with the refused value left out: it may be a
/// secret sent in the wrong place (`"secretEnv": "…"`), and a refusal never
/// quotes one. What was expected, and the kind of value that came, stay.
pub fn without_value(message: &str) -> String {
    // serde's own tail (", expected …") follows the value, so the last
    // occurrence is its own even when the value holds the same words.
    let (head, tail) = match message.rfind(", expected ") {
        Some(at) => message.split_at(at),
        None => (message, ""),
    };
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(unexpected) = head.strip_prefix(prefix) {
            let kind = match unexpected.split_whitespace().next().unwrap_or("") {
                "string" => "a string",
                "integer" => "an integer",
                "boolean" => "a boolean",
                "floating" => "a number",
                "character" => "a character",
                _ if !unexpected.contains(['"', '`', '\'']) => unexpected,
                _ => "a value",
            };
            return format!("{prefix}{kind}{tail}");
        }
    }
    if head.starts_with("unknown variant ") {
        return format!("unknown variant{tail}");
    }
    if head.contains(['"', '`'])
        && !head.starts_with("unknown field ")
        && !head.starts_with("missing field ")
        && !head.starts_with("duplicate field ")
    {
        // A message of some other shape that quotes something: only its kind.
        return "invalid value".into();
    }
    message.to_owned()
}

/// Query parameters.
pub struct QueryOf<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryOf<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        serde_urlencoded::from_str(query)
            .map(QueryOf)
            .map_err(|e| ApiError::bad_request(format!("query: {}", without_value(&e.to_string()))))
    }
}

/// The position a reconnecting stream names in `Last-Event-ID` (`None`
/// when it names none), refused by name when it is not one.
pub fn last_position(headers: &axum::http::HeaderMap, of: &str) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else { return Ok(None) };
    value
        .to_str()
        .ok()
        .filter(|t| !t.is_empty() && t.len() <= 18 && t.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|t| t.parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| ApiError::bad_request(format!("Last-Event-ID must be a position in {of}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_field_and_the_kind_but_never_the_value() {
        let cases = [
            (r#"{"secretEnv": "MySecretValue, expected y"}"#, "secretEnv: invalid type: a string, expected a map"),
            (r#"{"secretEnv": {"K": 5}}"#, "secretEnv.K: invalid type: an integer, expected a string"),
            (r#"{"kind": "MySecretValue"}"#, "kind: unknown variant, expected `final` or `suspend`"),
            (r#"{"secretEnv": {}, "colour": 1}"#, "colour: unknown field `colour`, expected `secretEnv` or `kind`"),
        ];
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Probe {
            secret_env: Option<std::collections::BTreeMap<String, String>>,
            kind: Option<Kind>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[serde(rename_all = "lowercase")]
        enum Kind {
            Final,
            Suspend,
        }
        for (body, want) in cases {
            let message = match parse_json::<Probe>(body.as_bytes()) {
                Err(ApiError::BadRequest(m)) => m,
                other => panic!("{body}: {other:?}"),
            };
            assert_eq!(message, want, "{body}");
            assert!(!message.contains("MySecret"), "{message}");
        }
        assert_eq!(
            without_value("invalid value: string \"x\", expected a positive integer"),
            "invalid value: a string, expected a positive integer"
        );
        assert_eq!(without_value("weird `secret` shape"), "invalid value");
        assert_eq!(without_value("missing field `ownerUserId`"), "missing field `ownerUserId`");
    }
}
