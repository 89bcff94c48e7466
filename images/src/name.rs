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
            map.insert(id.to_owned(), Registry { host: host.to_owned(), plain_http });
        }
        Ok(Registries(map))
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
        assert_eq!(ok.get("a"), Some(&Registry { host: "127.0.0.1:5000".into(), plain_http: false }));
        assert!(ok.get("b").unwrap().plain_http && ok.get("c").unwrap().plain_http);
        assert!(Registries::parse(&["a=http://registry.example:5000".into()], &[]).is_err());
        let named = Registries::parse(&["a=http://registry.example:5000".into()], &["registry.example:5000".into()]);
        assert!(named.unwrap().get("a").unwrap().plain_http);
        for bad in ["a", "host=127.0.0.1:5000", "a=", "a=http://x/y"] {
            assert!(Registries::parse(&[bad.into()], &["x".into()]).is_err(), "{bad}");
        }
    }
}
