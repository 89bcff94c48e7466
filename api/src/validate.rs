//! Field rules. Every refusal names the field; none echoes a secret value.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use sluice_domain::guard;
use sluice_domain::ids::{IdempotencyKey, LaunchId, OwnerId};
use sluice_store::spec::{Spec, WorkspaceSpec, env_name_ok};

use crate::error::{ApiError, Unsupported};

/// The pattern every free-text field follows: no surrounding whitespace, no
/// control characters, no bidirectional controls (which make a text read
/// differently from what it is).
pub const TEXT_PATTERN: &str = r"^[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069](?:[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069])?$";

/// The user a workspace belongs to: 1 to 256 characters, no surrounding
/// whitespace or control characters. Parsed once, where the request is read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct OwnerUserId(String);

impl OwnerUserId {
    pub const MAX_CHARS: usize = 256;

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// The owner, typed for everything past the request.
    pub fn into_id(self) -> OwnerId {
        OwnerId::from(self.0)
    }
}

impl TryFrom<String> for OwnerUserId {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        match identifier_problem(&value, Self::MAX_CHARS) {
            Some(problem) => Err(problem),
            None => Ok(OwnerUserId(value)),
        }
    }
}

impl utoipa::PartialSchema for OwnerUserId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(Self::MAX_CHARS))
            .pattern(Some(TEXT_PATTERN))
            .description(Some("The user the workspace belongs to."))
            .into()
    }
}

impl utoipa::ToSchema for OwnerUserId {}

/// Bidirectional controls: they make a text display as something it is not.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Characters that show as nothing (format characters, joiners, fillers,
/// variation selectors, tags): two texts that differ only in them look the
/// same.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
        | '\u{fff9}'..='\u{fffb}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e0fff}')
}

/// Noncharacters (never meant for interchange) and private-use characters
/// (which mean nothing to anyone else).
fn is_noncharacter_or_private(c: char) -> bool {
    let n = c as u32;
    (0xfdd0..=0xfdef).contains(&n)
        || n & 0xfffe == 0xfffe
        || (0xe000..=0xf8ff).contains(&n)
        || (0xf0000..=0x10ffff).contains(&n)
}

/// What is wrong with a text field, if anything: it must be non-empty, at
/// most `max_chars`, without surrounding whitespace, control characters,
/// bidirectional controls, invisible characters, noncharacters or
/// private-use characters.
pub fn text_problem(value: &str, max_chars: usize) -> Option<String> {
    if value.is_empty() {
        Some("must not be empty".into())
    } else if value.trim() != value {
        Some("must not start or end with whitespace".into())
    } else if value.chars().count() > max_chars {
        Some(format!("must be at most {max_chars} characters"))
    } else if value.chars().any(char::is_control) {
        Some("must not contain control characters".into())
    } else if value.chars().any(is_bidi_control) {
        Some("must not contain bidirectional control characters".into())
    } else if value.chars().any(is_invisible) {
        Some("must not contain invisible characters".into())
    } else if value.chars().any(is_noncharacter_or_private) {
        Some("must not contain noncharacters or private-use characters".into())
    } else {
        None
    }
}

/// What is wrong with an identifier (an owner id), if anything: a text
/// (see [`text_problem`]) in Unicode's compatibility-composed form (NFKC),
/// so fullwidth letters, ligatures and styled letters, which look like
/// plain ones, are refused rather than taken for another owner.
pub fn identifier_problem(value: &str, max_chars: usize) -> Option<String> {
    if let Some(problem) = text_problem(value, max_chars) {
        return Some(problem);
    }
    use unicode_normalization::UnicodeNormalization;
    (!value.nfkc().eq(value.chars()))
        .then(|| "must be in Unicode NFKC form (no fullwidth, ligature or styled letters that look like others)".into())
}

/// A required text field (see [`text_problem`]).
pub fn text(field: &str, value: &str, max_chars: usize) -> Result<String, ApiError> {
    match text_problem(value, max_chars) {
        Some(problem) => Err(ApiError::bad_request(format!("{field} {problem}"))),
        None => Ok(value.to_owned()),
    }
}

/// A launch identity: a text (see [`text_problem`]) that cannot be taken
/// for an option where it is passed on.
pub fn launch_id(field: &str, value: &str) -> Result<LaunchId, ApiError> {
    let value = text(field, value, 200)?;
    if value.starts_with('-') {
        return Err(ApiError::bad_request(format!("{field} must not start with '-'")));
    }
    Ok(LaunchId::from(value))
}

pub fn optional_text(field: &str, value: Option<&str>, max_chars: usize) -> Result<Option<String>, ApiError> {
    value.map(|v| text(field, v, max_chars)).transpose()
}

/// `ownerUserId` where the wire lets it be absent but sluice requires it.
pub fn owner(value: Option<OwnerUserId>) -> Result<OwnerUserId, ApiError> {
    value.ok_or_else(|| ApiError::bad_request("ownerUserId is required"))
}

/// A text a person chose (a name) that is also stored in plain columns:
/// it must not look like a credential.
pub fn label(field: &str, value: &str) -> Result<String, ApiError> {
    let value = text(field, value, 128)?;
    guard::check(field, &Value::String(value.clone()))?;
    Ok(value)
}

/// An idempotency key: 1 to 200 of `A-Z a-z 0-9 . _ : -`.
pub fn idempotency_key(field: &str, value: &str) -> Result<IdempotencyKey, ApiError> {
    let ok = !value.is_empty()
        && value.len() <= 200
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'));
    if ok {
        Ok(IdempotencyKey::from(value))
    } else {
        Err(ApiError::bad_request(format!(
            "{field} must be 1 to 200 characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'"
        )))
    }
}

/// An image repository: lower-case path components of `a-z 0-9 . _ -` joined by `/`.
pub fn repository(value: &str) -> Result<String, ApiError> {
    let value = text("repository", value, 255)?;
    let component_ok = |c: &str| {
        !c.is_empty()
            && c.chars().all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-'))
            && c.chars().next().is_some_and(|ch| ch.is_ascii_alphanumeric())
    };
    if value.split('/').all(component_ok) {
        Ok(value)
    } else {
        Err(ApiError::bad_request(
            "repository must be lower-case path components of a-z, 0-9, '.', '_' or '-' separated by '/'",
        ))
    }
}

/// An image tag: 1 to 128 of `A-Z a-z 0-9 _ . -`, not starting with `.` or `-`.
pub fn tag(value: &str) -> Result<String, ApiError> {
    let value = text("tag", value, 128)?;
    let digest = value
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    let ok = digest
        || value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            && !value.starts_with(['.', '-']);
    if ok {
        Ok(value)
    } else {
        Err(ApiError::bad_request(
            "tag must be 1 to 128 of A-Z, a-z, 0-9, '_', '.' or '-', not starting with '.' or '-', or a digest \
             (sha256: and 64 lowercase hex digits)",
        ))
    }
}

/// A count of seconds > 0, at most ten years.
pub fn ttl_seconds(field: &str, value: i64) -> Result<i64, ApiError> {
    const TEN_YEARS: i64 = 10 * 366 * 24 * 3600;
    if (1..=TEN_YEARS).contains(&value) {
        Ok(value)
    } else {
        Err(ApiError::bad_request(format!("{field} must be a whole number of seconds from 1 to {TEN_YEARS}")))
    }
}

/// `limit`: 1 to 1000, 100 when absent.
pub fn limit(value: Option<&str>) -> Result<i64, ApiError> {
    match value {
        None => Ok(100),
        Some(v) => match v.parse::<i64>() {
            Ok(n) if (1..=1000).contains(&n) => Ok(n),
            _ => Err(ApiError::bad_request("limit must be a whole number from 1 to 1000")),
        },
    }
}

/// What a request may wait for a workspace to become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WaitFor {
    /// Ready to exec in (or never going to be by itself).
    Ready,
}

/// The longest a request waits for a workspace (`timeoutMs`).
pub const MAX_WAIT_MS: i64 = 60_000;

/// `waitFor` and `timeoutMs`: how long to wait, or `None` for no wait. A
/// wait never outlasts `idle` (the listener closes a connection idle that
/// long); `timeoutMs` alone is refused.
pub fn wait(
    wait_for: Option<WaitFor>,
    timeout_ms: Option<i64>,
    idle: std::time::Duration,
) -> Result<Option<std::time::Duration>, ApiError> {
    if let Some(ms) = timeout_ms
        && !(0..=MAX_WAIT_MS).contains(&ms)
    {
        return Err(ApiError::bad_request(format!("timeoutMs must be a whole number from 0 to {MAX_WAIT_MS}")));
    }
    match wait_for {
        None if timeout_ms.is_some() => Err(ApiError::bad_request("timeoutMs is accepted only with waitFor")),
        None => Ok(None),
        Some(WaitFor::Ready) => {
            let asked = std::time::Duration::from_millis(timeout_ms.unwrap_or(MAX_WAIT_MS) as u64);
            Ok(Some(asked.min(idle)))
        }
    }
}

/// [`wait`] from a query's text.
pub fn wait_query(
    wait_for: Option<&str>,
    timeout_ms: Option<&str>,
    idle: std::time::Duration,
) -> Result<Option<std::time::Duration>, ApiError> {
    let wait_for = wait_for
        .map(|w| match w {
            "ready" => Ok(WaitFor::Ready),
            _ => Err(ApiError::bad_request("waitFor must be ready")),
        })
        .transpose()?;
    let timeout_ms = timeout_ms
        .map(|t| {
            t.parse::<i64>().ok().filter(|_| t.bytes().all(|b| b.is_ascii_digit())).ok_or_else(|| {
                ApiError::bad_request(format!("timeoutMs must be a whole number from 0 to {MAX_WAIT_MS}"))
            })
        })
        .transpose()?;
    wait(wait_for, timeout_ms, idle)
}

const MAX_SPEC_BYTES: usize = 256 * 1024;

/// `spec`: a JSON object, bounded, with nothing credential-shaped in it.
pub fn spec(value: &Value) -> Result<Spec, ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request("spec must be a JSON object ({} for an empty specification)"));
    }
    if value.to_string().len() > MAX_SPEC_BYTES {
        return Err(ApiError::bad_request(format!("spec must be at most {MAX_SPEC_BYTES} bytes of JSON")));
    }
    guard::check("spec", value)?;
    // The keys runtimes act on must mean something they can do: a mistyped
    // or impossible value is refused here, not discovered at launch.
    Spec::parse(value.clone()).map_err(|e| ApiError::bad_request(e.0))
}

/// Refuses (422) a resource the runtime serving this API cannot enforce,
/// naming it and why; `unenforceable` is `None` where the API does not know
/// its runtime (then the launch refuses it).
pub fn enforceable(spec: &WorkspaceSpec, unenforceable: Option<&[(String, String)]>) -> Result<(), ApiError> {
    let asked = spec.enforced();
    for (key, why) in unenforceable.unwrap_or_default() {
        if asked.contains(key) {
            return Err(ApiError::Unsupported {
                message: format!("spec.{key} cannot be enforced on this install: {why}"),
                code: Unsupported::LimitUnenforceable,
            });
        }
    }
    Ok(())
}

const SECRET_ENV_MAX_ENTRIES: usize = 128;
const SECRET_ENV_MAX_VALUE: usize = 32 * 1024;
const SECRET_ENV_MAX_TOTAL: usize = 256 * 1024;

/// Each credential an egress entry adds is made from a key of `secretEnv`.
pub fn injected_keys(spec: &WorkspaceSpec, secret_env: Option<&BTreeMap<String, String>>) -> Result<(), ApiError> {
    let Some(allowlist) = &spec.egress else { return Ok(()) };
    match allowlist.injected_keys().into_iter().find(|key| !secret_env.is_some_and(|env| env.contains_key(*key))) {
        Some(key) => Err(ApiError::bad_request(format!(
            "spec.network.egress: inject.valueFrom names {key}, which is not a key of secretEnv"
        ))),
        None => Ok(()),
    }
}

/// `secretEnv`: environment variable names, bounded values. Names sluice
/// sets itself are reserved.
pub fn secret_env(env: &BTreeMap<String, String>) -> Result<(), ApiError> {
    if env.len() > SECRET_ENV_MAX_ENTRIES {
        return Err(ApiError::bad_request(format!("secretEnv must have at most {SECRET_ENV_MAX_ENTRIES} entries")));
    }
    let mut total = 0;
    for (name, value) in env {
        if !env_name_ok(name) {
            return Err(ApiError::bad_request(
                "secretEnv names must be 1 to 128 of A-Z, a-z, 0-9 or '_', not starting with a digit",
            ));
        }
        if name.starts_with("SLUICE_") || name.starts_with("SEALANT_") {
            return Err(ApiError::bad_request(format!(
                "secretEnv.{name}: names starting with SLUICE_ or SEALANT_ are reserved"
            )));
        }
        if value.len() > SECRET_ENV_MAX_VALUE {
            return Err(ApiError::bad_request(format!(
                "secretEnv.{name}: the value must be at most {SECRET_ENV_MAX_VALUE} bytes"
            )));
        }
        if value.contains('\0') {
            return Err(ApiError::bad_request(format!("secretEnv.{name}: the value must not contain NUL")));
        }
        total += name.len() + value.len();
    }
    if total > SECRET_ENV_MAX_TOTAL {
        return Err(ApiError::bad_request(format!("secretEnv must be at most {SECRET_ENV_MAX_TOTAL} bytes in all")));
    }
    Ok(())
}

/// Inputs only a Kubernetes runtime can serve, and a Docker service no
/// runtime of this install provides: refused at create, never dropped.
pub fn runtime_capabilities(spec: &Value) -> Result<(), ApiError> {
    let present = |path: &[&str]| {
        let mut node = spec;
        for key in path {
            match node.get(key) {
                Some(next) => node = next,
                None => return false,
            }
        }
        !node.is_null()
    };
    if present(&["runtime", "envFrom"]) || present(&["kubernetes", "serviceAccountName"]) {
        return Err(ApiError::Unsupported {
            message: "spec.runtime.envFrom and spec.kubernetes.serviceAccountName need a Kubernetes runtime; this install runs workspaces on local processes and Docker".into(),
            code: Unsupported::RuntimeEnvReferences,
        });
    }
    let docker_requested = match spec.get("services").and_then(|s| s.get("docker")) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(_) => true,
    };
    if docker_requested {
        return Err(ApiError::Unsupported {
            message: "spec.services.docker: no runtime of this install can give a workspace its own Docker engine"
                .into(),
            code: Unsupported::WorkspaceDocker,
        });
    }
    Ok(())
}

/// A bind's `subpath`: empty (unbind) or a relative path of plain names
/// under the executor's root.
pub fn bind_subpath(subpath: &str) -> Result<(), ApiError> {
    if subpath.is_empty() {
        return Ok(());
    }
    let ok = subpath.len() <= 1024
        && text_problem(subpath, 1024).is_none()
        && !subpath.starts_with('/')
        && subpath.split('/').all(|p| !p.is_empty() && p != "." && p != "..");
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request("subpath must be empty (unbind) or a relative path of names, without '.' or '..'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Made with `ssh-keygen -t ed25519`; the fingerprint is the one
    /// `ssh-keygen -lf` printed for it.
    const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILbRfdHkpNFYxYqv3G4Hw2iH7qp0E2EcYymrZIFJ2SMq alice@laptop";
    const ED25519_FINGERPRINT: &str = "SHA256:aQv3zAIuMKjiEO3B7nW51d/nPq5PkQ3FiDb0CzmvDOA";

    #[test]
    fn ssh_keys_are_read_as_openssh_prints_them() {
        let key = ssh_public_key("publicKey", ED25519).unwrap();
        assert_eq!(key.fingerprint, ED25519_FINGERPRINT);
        assert_eq!(key.algorithm, "ssh-ed25519");
        assert_eq!(key.body, "AAAAC3NzaC1lZDI1NTE5AAAAILbRfdHkpNFYxYqv3G4Hw2iH7qp0E2EcYymrZIFJ2SMq", "no comment kept");
        // Surrounding whitespace and a missing comment are fine.
        let bare = format!("  {}\n", ED25519.rsplit_once(' ').unwrap().0);
        assert_eq!(ssh_public_key("publicKey", &bare).unwrap(), key);
    }

    #[test]
    fn ssh_keys_that_cannot_serve_are_refused_without_being_quoted() {
        let refused = |value: &str| match ssh_public_key("publicKey", value) {
            Err(ApiError::BadRequest(m)) => m,
            other => panic!("{value:?} answered {other:?}"),
        };
        let private =
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----";
        let message = refused(private);
        assert!(message.starts_with("publicKey is a private key") && !message.contains("b3BlbnNz"), "{message}");
        // A 1024-bit RSA key made with `ssh-keygen -t rsa -b 1024`.
        let weak = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC+Zpe4U2LK2b0yoZzOTZJHy3KgSA5TnTRgGxpZnBl8sIcN6rPDTATvL9GZ4KjPtznte7MobUxWABmMMBKzsyvM8ySTv4bfnRCLFLN40QEBSL3DfbdjL9vXgNoLFGQJGYkwp/N95EFLiVoplGPbhiZJsPPWNJrMw1qJGMB9mfI/+Q== old";
        assert!(refused(weak).contains("1024 bits"), "{}", refused(weak));
        for garbage in
            ["", "ssh-ed25519", "ssh-ed25519 not-base64!", "ssh-ed25519 AAAAB3NzaC1yc2EAAAADAQABAAAAgQC+", "hello"]
        {
            let message = refused(garbage);
            assert!(message.starts_with("publicKey must be an OpenSSH public key"), "{garbage:?}: {message}");
        }
    }

    #[test]
    fn fingerprints_are_taken_standard_or_url_safe() {
        assert_eq!(ssh_key_fingerprint("f", ED25519_FINGERPRINT).unwrap(), ED25519_FINGERPRINT);
        let url_safe = ED25519_FINGERPRINT.replace('/', "_").replace('+', "-");
        assert_eq!(ssh_key_fingerprint("f", &url_safe).unwrap(), ED25519_FINGERPRINT);
        for bad in [
            "aQv3zAIuMKjiEO3B7nW51d/nPq5PkQ3FiDb0CzmvDOA",
            "SHA256:short",
            "MD5:aa:bb",
            "SHA256:aQv3zAIuMKjiEO3B7nW51d/nPq5PkQ3FiDb0CzmvDO=",
        ] {
            assert!(ssh_key_fingerprint("f", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn texts_must_be_trimmed_and_non_empty() {
        assert!(text("f", "ok", 10).is_ok());
        for bad in ["", " x", "x ", "a\u{7}b", "elevenchars", "txt\u{202e}exe", "a\u{2066}b", "\u{200f}x"] {
            assert!(text("f", bad, 10).is_err(), "{bad:?}");
        }
        assert!(text("f", "naïve ✓", 10).is_ok(), "other non-ASCII text is fine");
    }

    #[test]
    fn invisible_and_noncharacters_are_refused_and_owner_ids_are_nfkc() {
        for bad in
            ["a\u{feff}b", "a\u{200b}b", "a\u{ad}b", "x\u{fe0f}", "a\u{ffff}", "a\u{fdd0}", "a\u{e000}", "a\u{e0041}"]
        {
            assert!(text_problem(bad, 10).is_some(), "{bad:?}");
            assert!(identifier_problem(bad, 10).is_some(), "{bad:?}");
        }
        for lookalike in ["\u{ff41}lice", "ﬁle", "\u{1d41a}lice", "x\u{2460}"] {
            assert!(text_problem(lookalike, 10).is_none(), "a name may hold {lookalike:?}");
            let problem = identifier_problem(lookalike, 10).unwrap_or_default();
            assert!(problem.contains("NFKC"), "an owner id may not: {lookalike:?}");
        }
        for fine in ["alice", "user-42@example.com", "Zoë", "山田"] {
            assert_eq!(identifier_problem(fine, 40), None, "{fine:?}");
        }
    }

    #[test]
    fn resources_the_runtime_cannot_enforce_are_refused_by_name() {
        let typed = |v: Value| super::spec(&v).unwrap().typed().clone();
        let spec = typed(json!({"resources": {"cpus": 1, "diskMiB": 64}}));
        let refused = vec![("resources.diskMiB".to_owned(), "no loop devices".to_owned())];
        let err = enforceable(&spec, Some(&refused)).unwrap_err();
        assert!(matches!(&err, ApiError::Unsupported { code: Unsupported::LimitUnenforceable, message }
            if message.contains("diskMiB") && message.contains("no loop devices")));
        assert!(enforceable(&typed(json!({"resources": {"cpus": 1}})), Some(&refused)).is_ok());
        assert!(enforceable(&spec, None).is_ok(), "an API apart from its runtime leaves it to the launch");
        let egress = typed(json!({"network": {"egress": ["pypi.org"]}}));
        let no_namespace = vec![("network.egress".to_owned(), "no network namespace".to_owned())];
        let err = enforceable(&egress, Some(&no_namespace)).unwrap_err();
        assert!(matches!(&err, ApiError::Unsupported { message, .. } if message.starts_with("spec.network.egress")));
        assert!(spec_ok(&json!({"resources": {"diskMiB": 16}})));
        assert!(!spec_ok(&json!({"resources": {"diskMiB": 15}})));
    }

    fn spec_ok(value: &Value) -> bool {
        super::spec(value).is_ok()
    }

    #[test]
    fn launch_ids_cannot_read_as_options() {
        assert!(launch_id("launchId", "build-42").is_ok());
        assert!(launch_id("launchId", "a-b--c").is_ok());
        for bad in ["-x", "--help", "--listen=0.0.0.0:1", "a\u{202e}b"] {
            let err = launch_id("launchId", bad).unwrap_err();
            assert!(format!("{err:?}").contains("launchId"), "{bad:?}: {err:?}");
        }
    }

    #[test]
    fn keys_repositories_and_tags() {
        assert!(idempotency_key("k", "order-42:v1.0_x").is_ok());
        assert!(idempotency_key("k", "has space").is_err());
        assert!(idempotency_key("k", &"x".repeat(201)).is_err());
        assert!(repository("sluice/busybox").is_ok());
        assert!(repository("Upper/Case").is_err());
        assert!(repository("a//b").is_err());
        assert!(tag("1.0-rc_1").is_ok());
        assert!(tag("-x").is_err());
    }

    #[test]
    fn limits_and_ttls() {
        assert_eq!(limit(None).unwrap(), 100);
        assert_eq!(limit(Some("5")).unwrap(), 5);
        for bad in ["0", "1001", "x", "-1", ""] {
            assert!(limit(Some(bad)).is_err(), "{bad}");
        }
        assert!(ttl_seconds("t", 0).is_err());
        assert!(ttl_seconds("t", 60).is_ok());
    }

    #[test]
    fn secret_env_names_and_sizes() {
        let ok = BTreeMap::from([("API_KEY".to_owned(), "v".to_owned())]);
        assert!(secret_env(&ok).is_ok());
        for name in ["1X", "A-B", "", "SLUICE_X"] {
            let env = BTreeMap::from([(name.to_owned(), "v".to_owned())]);
            assert!(secret_env(&env).is_err(), "{name}");
        }
        let big = BTreeMap::from([("A".to_owned(), "v".repeat(SECRET_ENV_MAX_VALUE + 1))]);
        let err = secret_env(&big).unwrap_err().to_string();
        assert!(err.contains("secretEnv.A") && !err.contains("vvvv"));
    }

    #[test]
    fn kubernetes_only_and_docker_inputs_are_refused() {
        let code = |spec: Value| match runtime_capabilities(&spec) {
            Err(ApiError::Unsupported { code, .. }) => Some(code),
            Ok(()) => None,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(code(json!({"runtime": {"envFrom": []}})), Some(Unsupported::RuntimeEnvReferences));
        assert_eq!(code(json!({"kubernetes": {"serviceAccountName": "x"}})), Some(Unsupported::RuntimeEnvReferences));
        assert_eq!(code(json!({"services": {"docker": true}})), Some(Unsupported::WorkspaceDocker));
        assert_eq!(code(json!({"services": {"docker": {}}})), Some(Unsupported::WorkspaceDocker));
        assert_eq!(code(json!({"services": {"docker": false}, "runtime": {}})), None);
    }

    #[test]
    fn spec_must_be_an_object_without_credentials() {
        assert!(spec(&json!({})).is_ok());
        assert!(spec(&json!([1])).is_err());
        let err = spec(&json!({"token": "Bearer abcdefghijklmnopqrstuvwxyz"})).unwrap_err().to_string();
        assert!(err.contains("spec.token") && err.contains("secretEnv") && !err.contains("abcdefghij"));
    }
}

/// An SSH public key as registered: its fingerprint, algorithm and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshPublicKey {
    pub fingerprint: String,
    pub algorithm: String,
    pub body: String,
}

/// The algorithms a gateway verifies signatures of.
const SSH_KEY_ALGORITHMS: &[&str] =
    &["ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa"];

/// The smallest RSA modulus accepted, in bits.
const MIN_RSA_BITS: usize = 2048;

/// An OpenSSH public key line (`ALGORITHM BASE64 [COMMENT]`). The value is
/// never quoted back: a private key pasted by mistake must not echo.
pub fn ssh_public_key(field: &str, value: &str) -> Result<SshPublicKey, ApiError> {
    let refuse = |why: &str| ApiError::bad_request(format!("{field} {why}"));
    if value.len() > 16 * 1024 {
        return Err(refuse("must be at most 16384 bytes"));
    }
    if value.contains("PRIVATE KEY") {
        return Err(refuse("is a private key; register the public key (the .pub file) instead"));
    }
    let key = ssh_key::PublicKey::from_openssh(value.trim())
        .map_err(|_| refuse("must be an OpenSSH public key, as in a .pub file: ALGORITHM BASE64 [COMMENT]"))?;
    let algorithm = key.algorithm().as_str().to_owned();
    if !SSH_KEY_ALGORITHMS.contains(&algorithm.as_str()) {
        return Err(refuse(&format!(
            "uses {algorithm}, which is not accepted (use one of {})",
            SSH_KEY_ALGORITHMS.join(", ")
        )));
    }
    if let Some(rsa) = key.key_data().rsa() {
        let bits = rsa.n().as_positive_bytes().map_or(0, |b| b.len() * 8);
        if bits < MIN_RSA_BITS {
            return Err(refuse(&format!("is an RSA key of {bits} bits; at least {MIN_RSA_BITS} are needed")));
        }
    }
    let fingerprint = key.fingerprint(ssh_key::HashAlg::Sha256).to_string();
    let mut bare = key;
    bare.set_comment("");
    let line = bare.to_openssh().map_err(|_| refuse("could not be encoded again"))?;
    let body = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    Ok(SshPublicKey { fingerprint, algorithm, body })
}

/// A key fingerprint as a path names it: `SHA256:` and base64, standard
/// or URL-safe (so it needs no escaping).
pub fn ssh_key_fingerprint(field: &str, value: &str) -> Result<String, ApiError> {
    let digest = value.strip_prefix("SHA256:").ok_or_else(|| {
        ApiError::bad_request(format!("{field} must be a SHA256 fingerprint (SHA256:…, as ssh-keygen -lf prints it)"))
    })?;
    let standard: String = digest
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let valid = standard.len() == 43 && standard.chars().all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/');
    if !valid {
        return Err(ApiError::bad_request(format!(
            "{field} must be a SHA256 fingerprint (SHA256: and 43 base64 characters)"
        )));
    }
    Ok(format!("SHA256:{standard}"))
}
