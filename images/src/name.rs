//! What a workspace names: a registry id (mapped to a host by the
//! operator's `--registry ID=HOST`), a repository and a tag or digest.

use std::collections::HashMap;
use std::fmt;

use crate::digest::Digest;

/// The registry id that means "the host's own filesystem, no image".
pub const HOST: &str = "host";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TagOrDigest {
    Tag(String),
    Digest(Digest),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageName {
    pub registry_id: String,
    pub repository: String,
    pub reference: TagOrDigest,
}

impl ImageName {
    /// A workspace's image; a tag of the form `sha256:<hex>` names a digest.
    pub fn new(registry_id: &str, repository: &str, tag: &str) -> Result<ImageName, String> {
        let valid_repository = !repository.is_empty()
            && repository.split('/').all(|part| {
                !part.is_empty()
                    && part.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
                    && !part.starts_with(['.', '_', '-'])
            });
        if !valid_repository {
            return Err(format!(
                "repository {repository:?} is not an image repository (lowercase letters, digits, '.', '_', '-', \
                 parts joined by '/')"
            ));
        }
        let reference = if tag.starts_with("sha256:") {
            TagOrDigest::Digest(Digest::parse(tag).ok_or("tag: a digest is sha256: and 64 lowercase hex digits")?)
        } else if !tag.is_empty()
            && tag.len() <= 128
            && tag.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            && !tag.starts_with(['.', '-'])
        {
            TagOrDigest::Tag(tag.to_owned())
        } else {
            return Err(format!("tag {tag:?} is not an image tag (letters, digits, '.', '_', '-'; up to 128)"));
        };
        Ok(ImageName { registry_id: registry_id.to_owned(), repository: repository.to_owned(), reference })
    }

    /// `repository:tag` or `repository@digest`: how the image is shown and
    /// the key it is cached under (with the registry id).
    pub fn short(&self) -> String {
        match &self.reference {
            TagOrDigest::Tag(tag) => format!("{}:{tag}", self.repository),
            TagOrDigest::Digest(digest) => format!("{}@{digest}", self.repository),
        }
    }
}

impl fmt::Display for ImageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry_id, self.short())
    }
}

/// Where a registry id points, as the operator said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// `host[:port]`, as in an image reference.
    pub host: String,
    /// Spoken to over plain HTTP (loopback, or the operator said it may).
    pub plain_http: bool,
    /// How to sign in (`None`: anonymously, with a token the registry
    /// hands out if it asks).
    pub credential: Option<Credential>,
}

/// A registry sign-in; never shown (its `Debug` says only which kind).
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    Basic { username: String, password: String },
    Bearer(String),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::Basic { .. } => f.write_str("Basic(<redacted>)"),
            Credential::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

/// The sign-ins of a Docker `config.json` by registry host: `auth`
/// (base64 of `user:password`), `username` and `password`, or
/// `registrytoken` (a bearer token). Errors name the host and field only.
pub fn docker_credentials(config: &str) -> Result<HashMap<String, Credential>, String> {
    use base64::Engine as _;
    #[derive(serde::Deserialize)]
    struct Config {
        #[serde(default)]
        auths: HashMap<String, Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        auth: Option<String>,
        username: Option<String>,
        password: Option<String>,
        registrytoken: Option<String>,
    }
    let config: Config =
        serde_json::from_str(config).map_err(|e| format!("not a Docker config.json: {}", e.classify_name()))?;
    let mut credentials = HashMap::new();
    for (key, entry) in config.auths {
        let host = key.trim_start_matches("https://").trim_start_matches("http://");
        let host = host.split('/').next().unwrap_or_default().to_owned();
        let credential = if let Some(token) = entry.registrytoken {
            Credential::Bearer(token)
        } else if let (Some(username), Some(password)) = (entry.username, entry.password) {
            Credential::Basic { username, password }
        } else if let Some(auth) = entry.auth {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .ok()
                .and_then(|d| String::from_utf8(d).ok())
                .ok_or_else(|| format!("auths.{host}.auth: not base64 of user:password"))?;
            let (username, password) =
                decoded.split_once(':').ok_or_else(|| format!("auths.{host}.auth: not base64 of user:password"))?;
            Credential::Basic { username: username.to_owned(), password: password.to_owned() }
        } else {
            continue;
        };
        credentials.insert(host, credential);
    }
    Ok(credentials)
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    /// What kind of error, without the text around it (which could quote a secret).
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "unreadable",
            serde_json::error::Category::Syntax => "a JSON syntax error",
            serde_json::error::Category::Data => "fields of the wrong type",
            serde_json::error::Category::Eof => "it ends too soon",
        }
    }
}

/// The operator's registries by id.
#[derive(Debug, Clone, Default)]
pub struct Registries(HashMap<String, Registry>);

impl Registries {
    /// From `ID=HOST` pairs (`ID=http://HOST` for plain HTTP, allowed for a
    /// loopback host or one named in `insecure`).
    pub fn parse(pairs: &[String], insecure: &[String]) -> Result<Registries, String> {
        let mut map = HashMap::new();
        for pair in pairs.iter().filter(|p| !p.is_empty()) {
            let (id, target) = pair.split_once('=').ok_or_else(|| format!("--registry {pair:?}: expected ID=HOST"))?;
            if id == HOST {
                return Err(format!("--registry {pair:?}: the id {HOST:?} means the host's own filesystem"));
            }
            let (host, plain_http) = match target.strip_prefix("http://") {
                Some(host) => (host, true),
                None => (target.strip_prefix("https://").unwrap_or(target), false),
            };
            let host = host.trim_end_matches('/');
            if host.is_empty() || host.contains('/') {
                return Err(format!("--registry {pair:?}: expected a host[:port]"));
            }
            if plain_http && !is_loopback(host) && !insecure.iter().any(|i| i == host) {
                return Err(format!(
                    "--registry {pair:?}: plain HTTP only to a loopback host, or to one named in --insecure-registry"
                ));
            }
            map.insert(id.to_owned(), Registry { host: host.to_owned(), plain_http, credential: None });
        }
        Ok(Registries(map))
    }

    /// Gives each registry the sign-in `credentials` hold for its host.
    pub fn with_credentials(mut self, credentials: &HashMap<String, Credential>) -> Registries {
        for registry in self.0.values_mut() {
            registry.credential = credentials.get(&registry.host).cloned();
        }
        self
    }

    pub fn get(&self, id: &str) -> Option<&Registry> {
        self.0.get(id)
    }

    /// `ID=HOST` as the docker runtime takes them (it speaks to registries
    /// through the engine).
    pub fn hosts(&self) -> HashMap<String, String> {
        self.0.iter().map(|(id, r)| (id.clone(), r.host.clone())).collect()
    }
}

fn is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_tags_and_digests_and_refuse_the_rest() {
        let tagged = ImageName::new("hub", "library/busybox", "1.36").unwrap();
        assert_eq!(tagged.reference, TagOrDigest::Tag("1.36".into()));
        assert_eq!(tagged.to_string(), "hub/library/busybox:1.36");
        let hex = "a".repeat(64);
        let pinned = ImageName::new("hub", "app", &format!("sha256:{hex}")).unwrap();
        assert_eq!(pinned.short(), format!("app@sha256:{hex}"));
        for (repository, tag) in
            [("Busybox", "1"), ("a//b", "1"), ("", "1"), ("a", ""), ("a", "sha256:zz"), ("a", "x/y"), ("../a", "1")]
        {
            assert!(ImageName::new("hub", repository, tag).is_err(), "{repository}:{tag}");
        }
    }

    #[test]
    fn plain_http_only_for_loopback_or_named_hosts() {
        let ok = Registries::parse(
            &["a=127.0.0.1:5000".into(), "b=http://127.0.0.1:5000".into(), "c=http://[::1]:80".into()],
            &[],
        )
        .unwrap();
        assert_eq!(ok.get("a"), Some(&Registry { host: "127.0.0.1:5000".into(), plain_http: false, credential: None }));
        assert!(ok.get("b").unwrap().plain_http && ok.get("c").unwrap().plain_http);
        assert!(Registries::parse(&["a=http://registry.example:5000".into()], &[]).is_err());
        let named = Registries::parse(&["a=http://registry.example:5000".into()], &["registry.example:5000".into()]);
        assert!(named.unwrap().get("a").unwrap().plain_http);
        for bad in ["a", "host=127.0.0.1:5000", "a=", "a=http://x/y"] {
            assert!(Registries::parse(&[bad.into()], &["x".into()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn docker_config_credentials_are_read_and_never_shown() {
        let config = r#"{"auths": {
            "https://registry.example:5000": {"auth": "YWxpY2U6czNjcmV0"},
            "other.example": {"username": "bob", "password": "hunter2"},
            "tokens.example": {"registrytoken": "tok-123"},
            "empty.example": {}
        }}"#;
        let credentials = docker_credentials(config).unwrap();
        let alice = Credential::Basic { username: "alice".into(), password: "s3cret".into() };
        assert_eq!(credentials.get("registry.example:5000"), Some(&alice));
        assert_eq!(credentials.get("tokens.example"), Some(&Credential::Bearer("tok-123".into())));
        assert_eq!(credentials.len(), 3);
        let registries =
            Registries::parse(&["r=registry.example:5000".into()], &[]).unwrap().with_credentials(&credentials);
        let shown = format!("{registries:?}");
        assert!(shown.contains("Basic(<redacted>)") && !shown.contains("s3cret"), "{shown}");
        let bad = docker_credentials(r#"{"auths": {"x": {"auth": "bm8tY29sb24="}}}"#).unwrap_err();
        assert!(bad.contains("auths.x.auth") && !bad.contains("no-colon"), "{bad}");
        let broken = docker_credentials(r#"{"auths": {"x": {"password": 7"#).unwrap_err();
        assert!(!broken.contains('7'), "{broken}");
    }
}
