//! The egress proxy a worker runs for an executor with an allowlist: HTTP
//! CONNECT, and plain HTTP in absolute form, to a destination only when
//! its name is on the executor's list ([`sluice_domain::egress`]) and, for
//! a TLS connection through CONNECT, the name the client asks the server
//! for (SNI) is the same name. Names are resolved here, with the host's
//! resolver or from a hosts file (`--egress-hosts`); the executor itself
//! resolves nothing and reaches no address. Every refusal is counted; a
//! URL's path is never logged. A host whose entry adds a credential is
//! brokered ([`credentials`]) rather than tunnelled.

pub mod credentials;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_domain::egress::Allowlist;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// The most a request's head may hold.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request's head (and a CONNECT's
/// TLS client hello).
pub(crate) const HEAD_WITHIN: Duration = Duration::from_secs(10);
/// How long reaching a destination may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(10);
/// The most connections one executor's proxy carries at once.
pub const MAX_CONNECTIONS: usize = 256;

/// Where names are looked up.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// The host's own resolver.
    #[default]
    System,
    /// A hosts file's names only (air-gapped installs, tests).
    Hosts(HashMap<String, Vec<IpAddr>>),
}

impl Resolver {
    /// Reads hosts-file text: `ADDRESS NAME [NAME…]` per line, `#` comments.
    pub fn from_hosts(text: &str) -> Result<Resolver, String> {
        let mut names: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let address = words.next().unwrap_or_default();
            let address: IpAddr =
                address.parse().map_err(|_| format!("line {}: {address:?} is not an IP address", n + 1))?;
            for name in words {
                names.entry(name.to_ascii_lowercase()).or_default().push(address);
            }
        }
        Ok(Resolver::Hosts(names))
    }

    async fn resolve(&self, name: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        match self {
            Resolver::System => Ok(tokio::net::lookup_host((name, port)).await?.collect()),
            Resolver::Hosts(names) => Ok(names
                .get(&name.to_ascii_lowercase())
                .map(|addresses| addresses.iter().map(|a| SocketAddr::new(*a, port)).collect())
                .unwrap_or_default()),
        }
    }
}

/// One executor's proxy: its list, the resolver, and its refusal count.
#[derive(Debug)]
pub struct EgressProxy {
    pub workspace_id: String,
    pub allowlist: Allowlist,
    pub resolver: Resolver,
    refused: AtomicU64,
    /// The process's refusal metric, where it keeps one.
    counted: Option<sluice_telemetry::prometheus::IntCounter>,
    /// What credentials are added with, where the list names any.
    credentials: Option<credentials::Credentials>,
}

impl EgressProxy {
    pub fn new(workspace_id: String, allowlist: Allowlist, resolver: Resolver) -> EgressProxy {
        EgressProxy { workspace_id, allowlist, resolver, refused: AtomicU64::new(0), counted: None, credentials: None }
    }

    /// Also adds the credentials the list names, with these.
    pub fn brokering(mut self, credentials: credentials::Credentials) -> EgressProxy {
        self.credentials = Some(credentials);
        self
    }

    /// Also counts each refusal in `metric`.
    pub fn counted_in(mut self, metric: sluice_telemetry::prometheus::IntCounter) -> EgressProxy {
        self.counted = Some(metric);
        self
    }

    /// Connections refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn refuse(&self, host: &str, port: u16, why: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(metric) = &self.counted {
            metric.inc();
        }
        tracing::info!(workspace = %self.workspace_id, %host, port, why, "egress refused");
    }
}

/// Where a proxy's clients come from: a TCP listener, or the unix socket
/// a worker gives an executor (whose daemon forwards the workload's
/// connections to it).
pub trait Incoming: Send + 'static {
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn next(&self) -> impl std::future::Future<Output = std::io::Result<Self::Stream>> + Send;
}

impl Incoming for TcpListener {
    type Stream = TcpStream;
    async fn next(&self) -> std::io::Result<TcpStream> {
        Ok(self.accept().await?.0)
    }
}

impl Incoming for UnixListener {
    type Stream = UnixStream;
    async fn next(&self) -> std::io::Result<UnixStream> {
        Ok(self.accept().await?.0)
    }
}

/// Serves the proxy on `listener` until `shutdown` resolves, at most
/// [`MAX_CONNECTIONS`] connections at once (more wait to be accepted).
pub async fn serve(listener: impl Incoming, proxy: Arc<EgressProxy>, shutdown: impl std::future::Future<Output = ()>) {
    tokio::pin!(shutdown);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("never closed"),
            _ = &mut shutdown => return,
        };
        let stream = tokio::select! {
            accepted = listener.next() => match accepted {
                Ok(stream) => stream,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let _ = handle(stream, &proxy).await;
            drop(slot);
        });
    }
}

/// The egress proxies of the executors this worker runs, one unix socket
/// each, and what they refused.
pub struct EgressHost {
    pub resolver: Resolver,
    served: Mutex<HashMap<String, (tokio::task::AbortHandle, Arc<EgressProxy>)>>,
    refusals: sluice_telemetry::prometheus::IntCounter,
    brokering: Option<Brokering>,
}

/// What this host's proxies add credentials with.
struct Brokering {
    authority: Arc<credentials::Authority>,
    upstream: Arc<rustls::ClientConfig>,
    brokered: sluice_telemetry::prometheus::IntCounter,
}

impl EgressHost {
    /// `refusals`: the metric every proxy's refusals are counted in.
    pub fn new(resolver: Resolver, refusals: sluice_telemetry::prometheus::IntCounter) -> EgressHost {
        EgressHost { resolver, served: Mutex::new(HashMap::new()), refusals, brokering: None }
    }

    /// Also adds the credentials executors' lists name: ends their TLS with
    /// `authority`'s certificates and checks the hosts' against `upstream`.
    pub fn brokering(
        mut self,
        authority: Arc<credentials::Authority>,
        upstream: Arc<rustls::ClientConfig>,
        brokered: sluice_telemetry::prometheus::IntCounter,
    ) -> EgressHost {
        self.brokering = Some(Brokering { authority, upstream, brokered });
        self
    }

    /// Whether this process serves a run's executor now.
    pub fn serving(&self, run_id: &str) -> bool {
        self.served.lock().unwrap().get(run_id).is_some_and(|(task, _)| !task.is_finished())
    }

    /// The authority executors with credentials added must trust.
    pub fn authority(&self) -> Option<&credentials::Authority> {
        self.brokering.as_ref().map(|b| b.authority.as_ref())
    }

    /// Serves `allowlist` to a run's executor on `socket` unless this
    /// process already does. The socket is for the owner of its directory
    /// (the executor's daemon) alone.
    /// `secrets`: the values of the `secretEnv` keys its credentials name.
    pub fn ensure(
        &self,
        socket: &Path,
        run_id: &str,
        workspace_id: &str,
        allowlist: &Allowlist,
        secrets: HashMap<String, credentials::SecretValue>,
    ) -> std::io::Result<()> {
        let mut served = self.served.lock().unwrap();
        if served.get(run_id).is_some_and(|(task, _)| !task.is_finished()) {
            return Ok(());
        }
        let listener = crate::sockets::bind_for_directory_owner(socket)?;
        let mut proxy = EgressProxy::new(workspace_id.to_owned(), allowlist.clone(), self.resolver.clone());
        if let (Some(brokering), false) = (&self.brokering, allowlist.injected_keys().is_empty()) {
            proxy = proxy.brokering(credentials::Credentials {
                authority: brokering.authority.clone(),
                upstream: brokering.upstream.clone(),
                secrets,
                brokered: Some(brokering.brokered.clone()),
            });
        }
        let proxy = Arc::new(proxy.counted_in(self.refusals.clone()));
        let task = tokio::spawn(serve(listener, proxy.clone(), std::future::pending()));
        served.insert(run_id.to_owned(), (task.abort_handle(), proxy));
        Ok(())
    }

    /// Stops serving a run's executor.
    pub fn forget(&self, run_id: &str) {
        if let Some((task, _)) = self.served.lock().unwrap().remove(run_id) {
            task.abort();
        }
    }

    /// Connections refused so far, per workspace, for the executors served now.
    pub fn refusals(&self) -> Vec<(String, u64)> {
        let served = self.served.lock().unwrap();
        let mut counts: HashMap<String, u64> = HashMap::new();
        for (_, proxy) in served.values() {
            *counts.entry(proxy.workspace_id.clone()).or_default() += proxy.refused();
        }
        let mut counts: Vec<(String, u64)> = counts.into_iter().collect();
        counts.sort();
        counts
    }
}

/// The socket a run's executor reaches its proxy on, as the host sees it.
pub fn egress_socket(run_dir: &Path) -> PathBuf {
    run_dir.join("run").join("egress.sock")
}

/// A request's head: its line's parts and its bytes, with what came after.
struct Head {
    method: String,
    target: String,
    version: String,
    /// Header lines after the request line, without the blank line.
    headers: Vec<String>,
    /// Bytes read past the head (the start of a body or a TLS hello).
    rest: Vec<u8>,
}

async fn read_head(stream: &mut (impl AsyncRead + Unpin)) -> Option<Head> {
    let mut buf = Vec::with_capacity(1024);
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() >= MAX_HEAD {
            return None;
        }
        let mut chunk = [0u8; 2048];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let text = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = text.split("\r\n");
    let mut line = lines.next()?.split(' ');
    let (method, target, version) = (line.next()?.to_owned(), line.next()?.to_owned(), line.next()?.to_owned());
    let headers = lines.map(str::to_owned).collect();
    Some(Head { method, target, version, headers, rest: buf[end + 4..].to_vec() })
}

/// `host:port` with a default port; `None` for a bracketed IPv6 or junk.
fn authority(text: &str, default_port: u16) -> Option<(String, u16)> {
    if text.starts_with('[') {
        return Some((text.to_owned(), default_port));
    }
    match text.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), port.parse().ok()?)),
        None => Some((text.to_owned(), default_port)),
    }
}

async fn answer(stream: &mut (impl AsyncWrite + Unpin), status: &str) {
    let _ = stream
        .write_all(format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes())
        .await;
    let _ = stream.shutdown().await;
}

/// Why a destination was not reached.
enum Unreached {
    /// The host's resolver answered only addresses inside a host or its
    /// networks (a refusal, counted).
    Internal,
    /// No address answered (or none resolved).
    Failed,
}

async fn connect(proxy: &EgressProxy, host: &str, port: u16) -> Result<TcpStream, Unreached> {
    let mut addresses = proxy.resolver.resolve(host, port).await.map_err(|_| Unreached::Failed)?;
    if matches!(proxy.resolver, Resolver::System) {
        let resolved = addresses.len();
        addresses.retain(|a| !sluice_domain::egress::is_internal(a.ip()));
        if resolved > 0 && addresses.is_empty() {
            return Err(Unreached::Internal);
        }
    }
    for address in addresses {
        if let Ok(Ok(stream)) = tokio::time::timeout(CONNECT_WITHIN, TcpStream::connect(address)).await {
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
    }
    Err(Unreached::Failed)
}

/// Reaches the destination, or answers the client why not.
async fn reach(
    client: &mut (impl AsyncWrite + Unpin),
    proxy: &EgressProxy,
    host: &str,
    port: u16,
) -> Option<TcpStream> {
    match connect(proxy, host, port).await {
        Ok(stream) => Some(stream),
        Err(Unreached::Internal) => {
            proxy.refuse(host, port, "resolves only to internal addresses");
            answer(client, "403 Forbidden").await;
            None
        }
        Err(Unreached::Failed) => {
            answer(client, "502 Bad Gateway").await;
            None
        }
    }
}

/// The name a TLS client hello asks for, reading more of `stream` into
/// `seen` as needed; `Ok(None)` when the bytes are not TLS.
async fn client_hello_name(stream: &mut (impl AsyncRead + Unpin), seen: &mut Vec<u8>) -> Result<Option<String>, ()> {
    loop {
        if seen.first().is_some_and(|b| *b != 0x16) {
            return Ok(None);
        }
        if !seen.is_empty() {
            let mut acceptor = rustls::server::Acceptor::default();
            let mut reader = &seen[..];
            while !reader.is_empty() {
                if acceptor.read_tls(&mut reader).is_err() {
                    return Err(());
                }
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => return Ok(accepted.client_hello().server_name().map(str::to_owned)),
                Ok(None) => {}
                Err(_) => return Err(()),
            }
        }
        if seen.len() >= MAX_HEAD {
            return Err(());
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(()),
            Ok(n) => seen.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn handle(
    mut client: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    proxy: &Arc<EgressProxy>,
) -> std::io::Result<()> {
    let Ok(Some(head)) = tokio::time::timeout(HEAD_WITHIN, read_head(&mut client)).await else {
        answer(&mut client, "400 Bad Request").await;
        return Ok(());
    };
    if head.method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = authority(&head.target, 443) else {
            answer(&mut client, "400 Bad Request").await;
            return Ok(());
        };
        if !proxy.allowlist.allows(&host, port) {
            proxy.refuse(&host, port, "not on the list");
            answer(&mut client, "403 Forbidden").await;
            return Ok(());
        }
        let injection = proxy.allowlist.injection(&host, port).cloned();
        if injection.is_some() && (proxy.credentials.is_none() || !head.rest.is_empty()) {
            // Tunnelled, the workload would talk to the host without the
            // credential it was promised: better refused, and said why.
            proxy.refuse(&host, port, "its credential cannot be added here");
            answer(&mut client, "403 Forbidden").await;
            return Ok(());
        }
        let Some(mut upstream) = reach(&mut client, proxy, &host, port).await else { return Ok(()) };
        client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
        if let Some(injection) = injection {
            credentials::broker(client, upstream, proxy, &host, port, &injection).await;
            return Ok(());
        }
        // A TLS client must ask for the name it connected to.
        let mut seen = head.rest;
        let named = tokio::time::timeout(HEAD_WITHIN, client_hello_name(&mut client, &mut seen)).await;
        match named {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(name))) if name.eq_ignore_ascii_case(host.trim_end_matches('.')) => {}
            Ok(Ok(Some(_))) => {
                proxy.refuse(&host, port, "TLS asked for another name");
                return Ok(());
            }
            Ok(Err(())) | Err(_) => {
                proxy.refuse(&host, port, "TLS without a readable client hello");
                return Ok(());
            }
        }
        upstream.write_all(&seen).await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }
    // Plain HTTP: an absolute URL, and a Host header (if any) that agrees.
    let Some(rest) = head.target.strip_prefix("http://") else {
        answer(&mut client, "400 Bad Request").await;
        return Ok(());
    };
    let (authority_text, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let Some((host, port)) = authority(authority_text, 80) else {
        answer(&mut client, "400 Bad Request").await;
        return Ok(());
    };
    let host_header = head
        .headers
        .iter()
        .find_map(|h| h.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("host")).map(|(_, v)| v.trim()));
    let agrees =
        host_header.is_none_or(|h| authority(h, 80).is_some_and(|(n, p)| n.eq_ignore_ascii_case(&host) && p == port));
    if !agrees || !proxy.allowlist.allows(&host, port) {
        proxy.refuse(&host, port, if agrees { "not on the list" } else { "Host disagrees with the URL" });
        answer(&mut client, "403 Forbidden").await;
        return Ok(());
    }
    let Some(mut upstream) = reach(&mut client, proxy, &host, port).await else { return Ok(()) };
    // Origin form, one request per connection (so a second request cannot
    // go to another host on it), without the proxy's own headers.
    let mut forwarded = format!("{} {} {}\r\n", head.method, path, head.version);
    for header in &head.headers {
        let name = header.split(':').next().unwrap_or_default().to_ascii_lowercase();
        if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
            continue;
        }
        forwarded.push_str(header);
        forwarded.push_str("\r\n");
    }
    if host_header.is_none() {
        forwarded.push_str(&format!("Host: {authority_text}\r\n"));
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    upstream.write_all(forwarded.as_bytes()).await?;
    upstream.write_all(&head.rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_files_name_addresses() {
        let Resolver::Hosts(names) =
            Resolver::from_hosts("# comment\n127.0.0.1 allowed.test Denied.Test # trailing\n\n::1 six.test\n").unwrap()
        else {
            panic!("a hosts resolver")
        };
        assert_eq!(names["allowed.test"], vec!["127.0.0.1".parse::<IpAddr>().unwrap()]);
        assert_eq!(names["denied.test"], vec!["127.0.0.1".parse::<IpAddr>().unwrap()]);
        assert_eq!(names["six.test"], vec!["::1".parse::<IpAddr>().unwrap()]);
        assert!(Resolver::from_hosts("not-an-address name.test\n").is_err());
    }

    #[test]
    fn authorities_split_host_and_port() {
        assert_eq!(authority("pypi.org:443", 80), Some(("pypi.org".into(), 443)));
        assert_eq!(authority("pypi.org", 80), Some(("pypi.org".into(), 80)));
        assert_eq!(authority("pypi.org:x", 80), None);
    }
}
