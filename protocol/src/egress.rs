//! How an executor with an egress allowlist reaches its worker's proxy:
//! its daemon listens on the executor's own loopback and forwards each
//! connection to the unix socket the runtime mounted; the workload finds
//! the listener through the usual proxy variables.

/// Where the daemon listens for the workload, inside the executor's own
/// network namespace.
pub const LISTEN: &str = "127.0.0.1:3128";

/// The socket's path inside an executor that has a mount namespace (the
/// runtime mounts its run directory at `/run/sluice`).
pub const SOCKET_IN_EXECUTOR: &str = "/run/sluice/egress.sock";

/// The socket's file name beside the registrar's, in the run directory.
pub const SOCKET_NAME: &str = "egress.sock";

/// The variables that point the workload's HTTP clients at the proxy
/// (both spellings: tools read one or the other).
pub fn proxy_env() -> Vec<(&'static str, String)> {
    let url = format!("http://{LISTEN}");
    let mut env = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        env.push((name, url.clone()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name, "localhost,127.0.0.1,::1".to_owned()));
    }
    env
}

/// The egress authority's certificate's file name in the run directory,
/// when the proxy adds credentials for the executor (the daemon reads it).
pub const AUTHORITY_NAME: &str = "egress-ca.pem";

/// Where the daemon puts the executor's trust for the workload, in its
/// private `/tmp` (the daemon's, readable by all, writable by none else):
/// the system's roots with the egress authority, and the authority alone.
pub const TRUST_DIR: &str = "/tmp/.sluice-trust";
pub const TRUST_BUNDLE: &str = "/tmp/.sluice-trust/ca-bundle.pem";
pub const TRUST_AUTHORITY: &str = "/tmp/.sluice-trust/egress-ca.pem";

/// The variables that point the workload's TLS clients at that trust:
/// OpenSSL, Python's requests, curl and git take the whole bundle; Node
/// adds the authority to its own roots.
pub fn trust_env() -> Vec<(&'static str, String)> {
    let mut env: Vec<(&'static str, String)> =
        ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"]
            .into_iter()
            .map(|name| (name, TRUST_BUNDLE.to_owned()))
            .collect();
    env.push(("NODE_EXTRA_CA_CERTS", TRUST_AUTHORITY.to_owned()));
    env
}
