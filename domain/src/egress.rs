//! Egress by name: which destinations an executor with an allowlist may
//! reach through its worker's egress proxy. An entry is a host name
//! (`pypi.org`), a wildcard for its subdomains (`*.githubusercontent.com`,
//! which does not match the bare domain), either with a port
//! (`registry.example:5000`); without one, ports 80 and 443. Raw IP
//! addresses are never allowed: names are what a policy is about.
//!
//! An exact name may carry an [`Injection`]: a credential the proxy adds
//! to each request for that host, made from a key of the workspace's
//! `secretEnv`, which is then not given to the workload at all.

use std::fmt;

/// Ports an entry without its own allows.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// The most entries one allowlist holds.
pub const MAX_ENTRIES: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    /// The suffix after `*.`: matches names with at least one more label.
    Subdomains(String),
}

/// One allowed destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pattern: Pattern,
    port: Option<u16>,
    inject: Option<Injection>,
}

/// Headers a credential may not be: the ones that frame a request or
/// steer a proxy, which the workload could not use and the proxy must own.
const FRAMING_HEADERS: [&str; 10] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "cookie",
];

/// A credential added to every request for one host: `header`, whose value
/// is `format` with the secret `value_from` where `{}` stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// The header's name, lower case.
    pub header: String,
    /// The key of the workspace's `secretEnv` the value is made from.
    pub value_from: String,
    prefix: String,
    suffix: String,
}

impl Injection {
    /// Reads `{"header", "valueFrom", "format"}` (format defaults to `{}`).
    pub fn parse(header: &str, value_from: &str, format: Option<&str>) -> Result<Injection, EntryError> {
        let header = header.to_ascii_lowercase();
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if header.is_empty() || header.len() > 128 || !header.chars().all(token) {
            return Err(EntryError(format!("inject.header {header:?} is not a header name")));
        }
        if FRAMING_HEADERS.contains(&header.as_str()) || header.starts_with("proxy-") {
            return Err(EntryError(format!("inject.header {header:?} frames the request; it cannot carry a secret")));
        }
        let name_ok = value_from.len() <= 128
            && value_from.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && value_from.chars().next().is_some_and(|c| !c.is_ascii_digit());
        if !name_ok {
            return Err(EntryError("inject.valueFrom must name a key of secretEnv".into()));
        }
        let format = format.unwrap_or("{}");
        let (prefix, suffix) = match format.split_once("{}") {
            Some((prefix, suffix)) if !suffix.contains("{}") => (prefix, suffix),
            _ => return Err(EntryError("inject.format must hold `{}` exactly once".into())),
        };
        if format.len() > 256 || format.chars().any(|c| c.is_control()) {
            return Err(EntryError("inject.format must be at most 256 characters, none of them control".into()));
        }
        Ok(Injection {
            header,
            value_from: value_from.to_owned(),
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
        })
    }

    /// The header's value for `secret`.
    pub fn value(&self, secret: &str) -> String {
        format!("{}{secret}{}", self.prefix, self.suffix)
    }
}

/// Why an entry cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryError(pub String);

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `name` is a host name as DNS has them: labels of letters,
/// digits and hyphens, not starting or ending with a hyphen, at most 253
/// characters, and not all digits (so never an IPv4 address).
fn valid_name(name: &str) -> bool {
    let labels_ok = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    let last_is_numeric = name.rsplit('.').next().is_some_and(|l| l.chars().all(|c| c.is_ascii_digit()));
    !name.is_empty() && name.len() <= 253 && labels_ok && !last_is_numeric
}

impl Entry {
    /// Reads one entry (case-insensitive; a trailing dot is dropped).
    pub fn parse(text: &str) -> Result<Entry, EntryError> {
        let refuse = |why: &str| Err(EntryError(format!("{text:?} {why}")));
        let lowered = text.trim().to_ascii_lowercase();
        let (name, port) = match lowered.rsplit_once(':') {
            Some((name, port)) => match port.parse::<u16>() {
                Ok(port) if port > 0 => (name.to_owned(), Some(port)),
                _ => return refuse("has a port that is not 1 to 65535"),
            },
            None => (lowered.clone(), None),
        };
        let name = name.strip_suffix('.').unwrap_or(&name).to_owned();
        let pattern = match name.strip_prefix("*.") {
            Some(suffix) if valid_name(suffix) && suffix.contains('.') => Pattern::Subdomains(suffix.to_owned()),
            Some(_) => return refuse("must be *. and a domain of at least two labels"),
            None if valid_name(&name) => Pattern::Exact(name),
            None if name.parse::<std::net::IpAddr>().is_ok() || name.starts_with('[') => {
                return refuse("is an IP address; egress is allowed by name only");
            }
            None => return refuse("is not a host name"),
        };
        Ok(Entry { pattern, port, inject: None })
    }

    /// This entry, adding `inject` to its requests: only for an exact name,
    /// reached over TLS (a credential never crosses the network in clear).
    pub fn injecting(self, inject: Injection) -> Result<Entry, EntryError> {
        if !matches!(self.pattern, Pattern::Exact(_)) {
            return Err(EntryError(format!("{self}: a credential is added only for an exact name")));
        }
        if self.port == Some(80) {
            return Err(EntryError(format!("{self}: a credential is added only over TLS, not to port 80")));
        }
        Ok(Entry { inject: Some(inject), ..self })
    }

    pub fn injection(&self) -> Option<&Injection> {
        self.inject.as_ref()
    }

    fn matches(&self, name: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => DEFAULT_PORTS.contains(&port),
        };
        let name_ok = match &self.pattern {
            Pattern::Exact(exact) => name == exact,
            Pattern::Subdomains(suffix) => {
                name.len() > suffix.len() + 1 && name.ends_with(suffix.as_str()) && {
                    let cut = name.len() - suffix.len();
                    name.as_bytes()[cut - 1] == b'.'
                }
            }
        };
        port_ok && name_ok
    }

    /// Whether this entry lies within `ceiling` (every destination it
    /// allows, the ceiling allows too).
    pub fn within(&self, ceiling: &Entry) -> bool {
        let port_ok = match (self.port, ceiling.port) {
            (_, None) => self.port.is_none_or(|p| DEFAULT_PORTS.contains(&p)),
            (Some(p), Some(c)) => p == c,
            (None, Some(_)) => false,
        };
        let name_ok = match (&self.pattern, &ceiling.pattern) {
            (Pattern::Exact(a), Pattern::Exact(b)) => a == b,
            (Pattern::Exact(name), Pattern::Subdomains(_)) => ceiling.matches(name, ceiling.port.unwrap_or(443)),
            (Pattern::Subdomains(a), Pattern::Subdomains(b)) => {
                a == b || (a.len() > b.len() && a.ends_with(b.as_str()) && a.as_bytes()[a.len() - b.len() - 1] == b'.')
            }
            (Pattern::Subdomains(_), Pattern::Exact(_)) => false,
        };
        port_ok && name_ok
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Pattern::Exact(name) => f.write_str(name)?,
            Pattern::Subdomains(suffix) => write!(f, "*.{suffix}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// Whether `ip` is an address inside a host or its networks: loopback,
/// unspecified, link-local (cloud metadata among them), private, shared
/// (carrier-grade NAT), multicast or broadcast, and the IPv4 ones written
/// as IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
/// `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::`) included. A name the host's resolver answers with one of these is not
/// reached through the egress proxy: a public name pointed at the host's
/// own services would otherwise open them to the workload. An operator's
/// hosts file may still name such addresses.
pub fn is_internal(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_link_local()
                || v4.is_private()
                || v4.is_multicast()
                || v4.is_broadcast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_internal(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xffc0) == 0xfe80
                    || (first & 0xfe00) == 0xfc00
            }
        },
    }
}

/// The IPv4 address an IPv6 one carries where it is only a way of writing
/// it, or of reaching it through a translator.
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let tail = std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // Mapped and compatible (`::1` and `::` are themselves, not 0.0.0.x).
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(tail),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        [0x2002, hi, lo, ..] => Some(std::net::Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

/// An executor's allowed destinations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

impl Allowlist {
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Allowlist, EntryError> {
        Allowlist::of(entries.into_iter().map(Entry::parse).collect::<Result<_, _>>()?)
    }

    pub fn of(entries: Vec<Entry>) -> Result<Allowlist, EntryError> {
        if entries.len() > MAX_ENTRIES {
            return Err(EntryError(format!("at most {MAX_ENTRIES} entries")));
        }
        Ok(Allowlist { entries })
    }

    /// The credential added to requests for `host` on `port` (a TLS
    /// connection), if an allowing entry names one.
    pub fn injection(&self, host: &str, port: u16) -> Option<&Injection> {
        let lowered = host.to_ascii_lowercase();
        let name = lowered.strip_suffix('.').unwrap_or(&lowered);
        if port == 80 {
            return None;
        }
        self.entries.iter().filter(|e| e.matches(name, port)).find_map(Entry::injection)
    }

    /// The `secretEnv` keys credentials are made from: never the workload's.
    pub fn injected_keys(&self) -> std::collections::BTreeSet<&str> {
        self.entries.iter().filter_map(|e| e.inject.as_ref()).map(|i| i.value_from.as_str()).collect()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Whether a connection to `host` (a name as the client gave it) on
    /// `port` is allowed. An IP address never is.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let lowered = host.to_ascii_lowercase();
        let name = lowered.strip_suffix('.').unwrap_or(&lowered);
        valid_name(name) && self.entries.iter().any(|e| e.matches(name, port))
    }

    /// The entries not within `ceiling` (none: all of them are).
    pub fn outside<'a>(&'a self, ceiling: &Allowlist) -> Vec<&'a Entry> {
        self.entries.iter().filter(|e| !ceiling.entries.iter().any(|c| e.within(c))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_is_added_for_an_exact_name_over_tls_only() {
        let inject = Injection::parse("Authorization", "GITHUB_TOKEN", Some("Bearer {}")).unwrap();
        assert_eq!(inject.header, "authorization");
        assert_eq!(inject.value("t0k"), "Bearer t0k");
        let entry = Entry::parse("api.github.com").unwrap().injecting(inject.clone()).unwrap();
        let allowlist = Allowlist::of(vec![entry, Entry::parse("pypi.org").unwrap()]).unwrap();
        assert_eq!(allowlist.injection("API.github.com.", 443), Some(&inject));
        assert_eq!(allowlist.injection("api.github.com", 80), None, "never in clear");
        assert_eq!(allowlist.injection("pypi.org", 443), None);
        assert_eq!(allowlist.injected_keys().into_iter().collect::<Vec<_>>(), ["GITHUB_TOKEN"]);
        assert!(Entry::parse("*.github.com").unwrap().injecting(inject.clone()).is_err(), "a wildcard");
        assert!(Entry::parse("api.github.com:80").unwrap().injecting(inject).is_err(), "port 80");
    }

    #[test]
    fn a_credential_header_and_format_are_checked() {
        for (header, from, format, refused) in [
            ("x-api-key", "KEY", None, None),
            ("host", "KEY", None, Some("frames the request")),
            ("Content-Length", "KEY", None, Some("frames the request")),
            ("proxy-authorization", "KEY", None, Some("frames the request")),
            ("bad header", "KEY", None, Some("not a header name")),
            ("x-key", "1KEY", None, Some("valueFrom")),
            ("x-key", "KEY", Some("Bearer"), Some("exactly once")),
            ("x-key", "KEY", Some("{}{}"), Some("exactly once")),
            ("x-key", "KEY", Some("a\r\n{}"), Some("control")),
        ] {
            let format = format.map(|f: &str| f.replace("\\r\\n", "\r\n"));
            match (Injection::parse(header, from, format.as_deref()), refused) {
                (Ok(_), None) => {}
                (Err(e), Some(why)) => assert!(e.0.contains(why), "{header} {from} {format:?}: {e}"),
                (got, _) => panic!("{header} {from} {format:?}: {got:?}"),
            }
        }
    }

    fn list(entries: &[&str]) -> Allowlist {
        Allowlist::parse(entries.iter().copied()).unwrap()
    }

    #[test]
    fn names_ports_and_wildcards_allow_what_they_say() {
        let allowed = list(&["pypi.org", "*.githubusercontent.com", "registry.test:5000", "Files.Example."]);
        for (host, port, expected) in [
            ("pypi.org", 443, true),
            ("pypi.org", 80, true),
            ("PYPI.ORG.", 443, true),
            ("pypi.org", 8443, false),
            ("evil-pypi.org", 443, false),
            ("pypi.org.evil.test", 443, false),
            ("raw.githubusercontent.com", 443, true),
            ("a.b.githubusercontent.com", 443, true),
            ("githubusercontent.com", 443, false),
            ("xgithubusercontent.com", 443, false),
            ("registry.test", 5000, true),
            ("registry.test", 443, false),
            ("files.example", 80, true),
            ("151.101.0.223", 443, false),
            ("::1", 443, false),
            ("", 443, false),
        ] {
            assert_eq!(allowed.allows(host, port), expected, "{host}:{port}");
        }
        assert!(!Allowlist::default().allows("pypi.org", 443), "an empty list allows nothing");
    }

    #[test]
    fn internal_addresses_are_told_from_public_ones() {
        for (address, internal) in [
            ("127.0.0.1", true),
            ("127.8.9.10", true),
            ("0.0.0.0", true),
            ("10.1.2.3", true),
            ("172.16.0.1", true),
            ("172.32.0.1", false),
            ("192.168.1.1", true),
            ("169.254.169.254", true),
            ("100.64.0.1", true),
            ("100.128.0.1", false),
            ("224.0.0.1", true),
            ("255.255.255.255", true),
            ("151.101.0.223", false),
            ("::1", true),
            ("::", true),
            ("fe80::1", true),
            ("fd00::1", true),
            ("::ffff:127.0.0.1", true),
            ("::ffff:151.101.0.223", false),
            ("::127.0.0.1", true),
            ("::10.0.0.1", true),
            ("::151.101.0.223", false),
            ("64:ff9b::7f00:1", true),
            ("64:ff9b::9765:df", false),
            ("2002:7f00:1::", true),
            ("2002:a9fe:a9fe::1", true),
            ("2002:9765:df::", false),
            ("2a04:4e42::223", false),
        ] {
            assert_eq!(is_internal(address.parse().unwrap()), internal, "{address}");
        }
    }

    #[test]
    fn entries_that_are_not_names_are_refused() {
        for bad in ["10.0.0.1", "[::1]", "*.com", "*", "a..b", "-a.test", "host:0", "host:99999", "host:x", "a b", ""] {
            assert!(Entry::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Entry::parse("*.Example.TEST:8080").unwrap().to_string(), "*.example.test:8080");
    }

    #[test]
    fn an_allowlist_lies_within_a_ceiling_entry_by_entry() {
        let ceiling = list(&["pypi.org", "*.pythonhosted.org", "*.example.test", "git.test:2222"]);
        let inside =
            list(&["pypi.org", "files.pythonhosted.org", "*.a.example.test", "*.example.test", "git.test:2222"]);
        assert!(inside.outside(&ceiling).is_empty(), "{:?}", inside.outside(&ceiling));
        let outside = list(&["npmjs.org", "*.pythonhosted.org:8080", "pythonhosted.org", "git.test", "pypi.org:443"]);
        let names: Vec<String> = outside.outside(&ceiling).iter().map(|e| e.to_string()).collect();
        assert_eq!(names, ["npmjs.org", "*.pythonhosted.org:8080", "pythonhosted.org", "git.test"]);
        assert_eq!(list(&["pypi.org"]).outside(&Allowlist::default()).len(), 1, "an empty ceiling allows nothing");
    }
}
