//! A typed client of sluice's HTTP API, generated at build time by
//! progenitor from the checked-in `openapi.json` (the document a test keeps
//! equal to the code). Each operation is a method named by its operation id
//! (in snake case) that returns a builder; `send()` answers the typed body,
//! or an [`Error`] carrying the API's error body.
//!
//! ```no_run
//! # async fn example() -> Result<(), sluice_client::Error<sluice_client::types::ErrorBody>> {
//! let client = sluice_client::with_token("http://127.0.0.1:7420", "TOKEN").expect("a client");
//! let created = client
//!     .create_workspace()
//!     .body_map(|b| {
//!         b.owner_user_id("alice")
//!             .registry_id(Some("local".parse().expect("a registry id")))
//!             .repository(Some("sluice-test/busybox".parse().expect("a repository")))
//!             .tag(Some("1".parse().expect("a tag")))
//!             .spec(serde_json::json!({"command": ["sleep", "600"]}).as_object().cloned().unwrap())
//!     })
//!     .send()
//!     .await?;
//! println!("{}", created.workspace_id);
//! # Ok(())
//! # }
//! ```

#![allow(clippy::all, unused_imports, missing_docs, irrefutable_let_patterns, mismatched_lifetime_syntaxes)]

include!(concat!(env!("OUT_DIR"), "/client.rs"));

pub mod sse;

/// A client of the API at `base` (`http://HOST:PORT`) that sends `token` as
/// its bearer token on every request.
pub fn with_token(base: &str, token: &str) -> Result<Client, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the API token is not a valid header value".to_owned())?;
    value.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, value);
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| format!("the HTTP client cannot be made: {e}"))?;
    Ok(Client::new_with_client(base.trim_end_matches('/'), http))
}
