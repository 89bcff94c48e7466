//! Webhooks, pure: which event types an endpoint asked for, how a delivery
//! is signed (the Standard Webhooks scheme), where an endpoint may point,
//! and what follows a failed delivery (a doubling pause, then the endpoint
//! is disabled after a run of failures). Tested as tables.

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::model::{EventType, SluiceEventType};

/// A signing secret's prefix, as Standard Webhooks writes them.
pub const SECRET_PREFIX: &str = "whsec_";
/// A secret's key length bounds, in bytes.
pub const SECRET_MIN_BYTES: usize = 24;
pub const SECRET_MAX_BYTES: usize = 64;
/// The most type filters one endpoint holds.
pub const MAX_FILTERS: usize = 64;
/// The longest endpoint URL.
pub const MAX_URL_LEN: usize = 2048;
/// Consecutive failed deliveries after which an endpoint is disabled,
/// unless the install says otherwise.
pub const DEFAULT_FAILURE_LIMIT: i64 = 20;

/// The pause before the first retry; it doubles with each failure.
const FIRST_PAUSE_MS: i64 = 1_000;
/// The longest pause between tries (about 8.5 minutes).
const MAX_DOUBLINGS: i64 = 9;

/// Why an endpoint's settings cannot be taken, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct Invalid {
    pub field: &'static str,
    pub reason: String,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Invalid {
    Invalid { field, reason: reason.into() }
}

/// Every type name a filter may name.
pub fn type_names() -> impl Iterator<Item = &'static str> {
    EventType::ALL.iter().map(|t| t.as_str()).chain(SluiceEventType::ALL.iter().map(|t| t.as_str()))
}

/// Reads an endpoint's filters: each a type name (`runtime.ready`), a
/// prefix ending in `.*` that names at least one type (`runtime.*`,
/// `sluice.*`), or `*`. None at all means every type.
pub fn parse_filters(filters: &[String]) -> Result<Vec<String>, Invalid> {
    if filters.len() > MAX_FILTERS {
        return Err(invalid("events", format!("at most {MAX_FILTERS} entries")));
    }
    let mut parsed: Vec<String> = Vec::new();
    for (i, filter) in filters.iter().enumerate() {
        let known = match filter.strip_suffix('*') {
            Some("") => true,
            Some(prefix) if prefix.ends_with('.') => type_names().any(|t| t.starts_with(prefix)),
            Some(_) => false,
            None => type_names().any(|t| t == filter),
        };
        if !known {
            let shown: String = filter.chars().take(64).collect();
            return Err(invalid(
                "events",
                format!(
                    "entry {i} ({shown:?}) names no event type: use a type such as runtime.ready, a prefix such as runtime.* or sluice.*, or *"
                ),
            ));
        }
        if !parsed.contains(filter) {
            parsed.push(filter.clone());
        }
    }
    Ok(parsed)
}

/// Whether an endpoint with `filters` wants events of `type_name`.
pub fn wants(filters: &[String], type_name: &str) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| match f.strip_suffix('*') {
            Some(prefix) => type_name.starts_with(prefix),
            None => f == type_name,
        })
}

/// Reads a signing secret (`whsec_` and the base64 of 24 to 64 bytes) into
/// its key. The refusal never quotes it.
pub fn parse_secret(text: &str) -> Result<Vec<u8>, Invalid> {
    let key = text
        .strip_prefix(SECRET_PREFIX)
        .and_then(|b64| STANDARD.decode(b64).ok())
        .ok_or_else(|| invalid("secret", format!("must be {SECRET_PREFIX} followed by base64")))?;
    if !(SECRET_MIN_BYTES..=SECRET_MAX_BYTES).contains(&key.len()) {
        return Err(invalid("secret", format!("must hold {SECRET_MIN_BYTES} to {SECRET_MAX_BYTES} bytes")));
    }
    Ok(key)
}

/// Writes a key as a signing secret.
pub fn format_secret(key: &[u8]) -> String {
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// The `webhook-signature` value of a delivery: HMAC-SHA256 over
/// `id.timestamp.body` with the secret's key, as `v1,` and its base64.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body.as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// Where an endpoint points, as far as can be told without a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// The host as written (an IP address without brackets).
    pub host: String,
    pub port: u16,
}

impl Target {
    /// The host when it is an IP address.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

/// Reads an endpoint URL: http or https, a host, no user or password (the
/// secret is what proves a delivery), no fragment. With `allow_private`
/// false, an address inside a host or its networks, or a name for one such
/// as `localhost`, is refused; a name is looked at again, resolved, at
/// each delivery.
pub fn parse_url(url: &str, allow_private: bool) -> Result<Target, Invalid> {
    if url.len() > MAX_URL_LEN {
        return Err(invalid("url", format!("is longer than {MAX_URL_LEN} characters")));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("url", "holds a space or a control character"));
    }
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(invalid("url", "must start with https:// or http://"));
    };
    if rest.contains('#') {
        return Err(invalid("url", "must not hold a fragment"));
    }
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(invalid("url", "must not hold a user or password: deliveries are proven by their signature"));
    }
    let (host, port) = split_host_port(authority).ok_or_else(|| invalid("url", "has no valid host and port"))?;
    let port = port.unwrap_or(if https { 443 } else { 80 });
    let target = Target { https, host, port };
    if !allow_private {
        let internal = match target.ip() {
            Some(ip) => crate::egress::is_internal(ip),
            None => {
                let name = target.host.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
        };
        if internal {
            return Err(invalid(
                "url",
                "points inside this host or its networks; an install that allows it is started with --webhook-allow-private",
            ));
        }
    }
    Ok(target)
}

fn split_host_port(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'));
    if !host_ok {
        return None;
    }
    let port = match port {
        None => None,
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0)?),
    };
    Some((host.to_ascii_lowercase(), port))
}

/// What follows a failed delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Try the same event again after `pause_ms`.
    Retry { pause_ms: i64 },
    /// The endpoint failed `limit` times in a row: it is disabled.
    Disable,
}

/// `failures` counts this one, in a row.
pub fn after_failure(failures: i64, limit: i64) -> AfterFailure {
    if failures >= limit.max(1) {
        return AfterFailure::Disable;
    }
    let doublings = (failures - 1).clamp(0, MAX_DOUBLINGS);
    AfterFailure::Retry { pause_ms: FIRST_PAUSE_MS << doublings }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row: the input, and what is wanted (`Err` names a refusal).
    type FilterRow<'a> = (&'a [&'a str], Result<&'a [&'a str], ()>);
    type UrlRow<'a> = (&'a str, bool, Result<(&'a str, u16), &'a str>);

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn filters_name_known_types_or_prefixes_of_them() {
        let table: &[FilterRow] = &[
            (&[], Ok(&[])),
            (&["runtime.ready"], Ok(&["runtime.ready"])),
            (&["runtime.*", "sluice.*", "*"], Ok(&["runtime.*", "sluice.*", "*"])),
            (&["sluice.drain.changed", "sluice.drain.changed"], Ok(&["sluice.drain.changed"])),
            (&["runtime.readyy"], Err(())),
            (&["nothing.*"], Err(())),
            (&["runtime*"], Err(())),
            (&["run*"], Err(())),
            (&[""], Err(())),
        ];
        for (filters, want) in table {
            let got = parse_filters(&strings(filters));
            match want {
                Ok(want) => assert_eq!(got.unwrap(), strings(want), "{filters:?}"),
                Err(()) => assert_eq!(got.unwrap_err().field, "events", "{filters:?}"),
            }
        }
    }

    #[test]
    fn an_endpoint_gets_what_its_filters_name() {
        let table: &[(&[&str], &str, bool)] = &[
            (&[], "workspace.created", true),
            (&[], "sluice.drain.changed", true),
            (&["*"], "sluice.webhook.disabled", true),
            (&["runtime.*"], "runtime.ready", true),
            (&["runtime.*"], "attempt.queued", false),
            (&["sluice.*"], "sluice.capture.registered", true),
            (&["sluice.*"], "workspace.created", false),
            (&["runtime.ready"], "runtime.ready", true),
            (&["runtime.ready"], "runtime.readyx", false),
        ];
        for (filters, kind, want) in table {
            assert_eq!(wants(&strings(filters), kind), *want, "{filters:?} {kind}");
        }
    }

    #[test]
    fn signatures_follow_the_standard_webhooks_scheme() {
        // The scheme's own published example.
        let key = parse_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_ne!(
            sign(&key, "msg_other", 1614265330, body),
            sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
        );
    }

    #[test]
    fn secrets_are_prefixed_base64_of_a_bounded_key_and_never_quoted() {
        let key = [7u8; 32];
        assert_eq!(parse_secret(&format_secret(&key)).unwrap(), key);
        for bad in [
            "",
            "whsec_",
            "whsec_!!!",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            &format_secret(&[1; 8]),
            &format_secret(&[1; 65]),
        ] {
            let refusal = parse_secret(bad).unwrap_err();
            assert_eq!(refusal.field, "secret");
            assert!(bad.len() < 7 || !refusal.to_string().contains(&bad[6..]), "{refusal}");
        }
    }

    #[test]
    fn urls_are_refused_inside_the_host_unless_allowed() {
        let table: &[UrlRow] = &[
            ("https://hooks.example.com/in?x=1", false, Ok(("hooks.example.com", 443))),
            ("http://hooks.example.com:8080", false, Ok(("hooks.example.com", 8080))),
            ("https://93.184.215.14/h", false, Ok(("93.184.215.14", 443))),
            ("http://127.0.0.1:9000/h", false, Err("inside")),
            ("http://127.0.0.1:9000/h", true, Ok(("127.0.0.1", 9000))),
            ("http://10.1.2.3/", false, Err("inside")),
            ("http://169.254.169.254/latest", false, Err("inside")),
            ("http://[::1]:80/", false, Err("inside")),
            ("http://[::ffff:127.0.0.1]/", false, Err("inside")),
            ("http://[::127.0.0.1]/", false, Err("inside")),
            ("http://localhost:3000/", false, Err("inside")),
            ("http://api.localhost/", false, Err("inside")),
            ("http://[::1]:80/", true, Ok(("::1", 80))),
            ("ftp://example.com/", false, Err("https://")),
            ("https://user:pass@example.com/", false, Err("password")),
            ("https://example.com/#x", false, Err("fragment")),
            ("https://example.com:0/", false, Err("host")),
            ("https://example.com:99999/", false, Err("host")),
            ("https:///path", false, Err("host")),
            ("https://exa mple.com/", false, Err("space")),
        ];
        for (url, allow, want) in table {
            let got = parse_url(url, *allow);
            match want {
                Ok((host, port)) => {
                    let target = got.unwrap_or_else(|e| panic!("{url}: {e}"));
                    assert_eq!((target.host.as_str(), target.port), (*host, *port), "{url}");
                }
                Err(why) => {
                    let refusal = got.expect_err(url);
                    assert_eq!(refusal.field, "url");
                    assert!(refusal.reason.contains(why), "{url}: {refusal}");
                    assert!(!refusal.reason.contains("pass@"), "never quoted");
                }
            }
        }
    }

    #[test]
    fn failures_pause_doubling_then_disable_the_endpoint() {
        use AfterFailure::*;
        let table = [
            ((1, 20), Retry { pause_ms: 1_000 }),
            ((2, 20), Retry { pause_ms: 2_000 }),
            ((5, 20), Retry { pause_ms: 16_000 }),
            ((10, 20), Retry { pause_ms: 512_000 }),
            ((19, 20), Retry { pause_ms: 512_000 }),
            ((20, 20), Disable),
            ((3, 3), Disable),
            ((1, 0), Disable),
        ];
        for ((failures, limit), want) in table {
            assert_eq!(after_failure(failures, limit), want, "{failures}/{limit}");
        }
    }
}
