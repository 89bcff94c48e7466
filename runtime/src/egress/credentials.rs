//! Credentials added at the egress proxy. For a host whose entry names an
//! [`Injection`], the proxy ends the workload's TLS itself, with a
//! certificate for that host from the install's egress authority (which
//! the executor trusts), and carries each HTTP/1.1 request on to the host
//! over TLS verified against the host's real certificate, with the
//! credential's header set and whatever the workload sent under that name
//! dropped. The secret lives only in the sealed store and this process's
//! memory; each brokered request is logged and counted without its path,
//! headers or body.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use sluice_domain::egress::Injection;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::{EgressProxy, HEAD_WITHIN};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The install's egress authority: one Ed25519 key derived from the seal
/// key (so every worker of an install has the same one, and nothing
/// without the key can make it), issuing a certificate per brokered host.
pub struct Authority {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
    minted: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authority")
    }
}

fn authority_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "sluice egress authority");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.serial_number = Some(rcgen::SerialNumber::from(vec![1]));
    params
}

impl Authority {
    /// The authority of an Ed25519 key (PKCS#8): the seal key's, derived.
    pub fn from_key(pkcs8: Vec<u8>) -> Result<Authority, String> {
        let pkcs8 = PrivatePkcs8KeyDer::from(pkcs8);
        let key = KeyPair::from_pkcs8_der_and_sign_algo(&pkcs8, &rcgen::PKCS_ED25519).map_err(|e| e.to_string())?;
        let pem = authority_params().self_signed(&key).map_err(|e| e.to_string())?.pem();
        Ok(Authority { pem, issuer: Issuer::new(authority_params(), key), minted: Mutex::new(HashMap::new()) })
    }

    /// The authority's certificate: what an executor's trust store adds.
    pub fn certificate_pem(&self) -> &str {
        &self.pem
    }

    /// What the proxy ends a workload's TLS to `host` with: a certificate
    /// for that name alone, made once per process.
    fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, String> {
        if let Some(config) = self.minted.lock().unwrap().get(host) {
            return Ok(config.clone());
        }
        let key = KeyPair::generate().map_err(|e| e.to_string())?;
        let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(|e| e.to_string())?;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let certificate = params.signed_by(&key, &self.issuer).map_err(|e| e.to_string())?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(
                vec![certificate.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .map_err(|e| e.to_string())?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        self.minted.lock().unwrap().insert(host.to_owned(), config.clone());
        Ok(config)
    }
}

/// The roots a brokered host's certificate is checked against: the host
/// system's, and any the operator adds (`--egress-trust`).
pub fn upstream_tls(extra_pem: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let extra: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(extra_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the egress trust file is not PEM certificates: {e}"))?;
    for certificate in extra {
        roots.add(certificate).map_err(|e| format!("an egress trust certificate cannot be used: {e}"))?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A secret's value, never printed.
#[derive(Clone)]
pub struct SecretValue(pub String);

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue(…)")
    }
}

/// What one executor's proxy brokers with: the authority, the upstream
/// roots, and the secrets its entries name (by `secretEnv` key).
#[derive(Debug)]
pub struct Credentials {
    pub authority: Arc<Authority>,
    pub upstream: Arc<rustls::ClientConfig>,
    pub secrets: HashMap<String, SecretValue>,
    pub brokered: Option<sluice_telemetry::prometheus::IntCounter>,
}

type Upstream = hyper::client::conn::http1::SendRequest<Counted<Incoming>>;

/// Carries a CONNECT tunnel to `host:port` whose entry adds `injection`:
/// the workload's TLS ended here, each request sent on over `upstream`
/// (reached already) and TLS, with the credential set.
pub(super) async fn broker(
    client: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    upstream: TcpStream,
    proxy: &Arc<EgressProxy>,
    host: &str,
    port: u16,
    injection: &Injection,
) {
    let Some(credentials) = proxy.credentials.as_ref() else { return };
    let Some(secret) = credentials.secrets.get(&injection.value_from) else {
        proxy.refuse(host, port, "the credential's secret is not there");
        return;
    };
    let Ok(mut value) = hyper::header::HeaderValue::from_str(&injection.value(&secret.0)) else {
        proxy.refuse(host, port, "the credential is not a valid header value");
        return;
    };
    value.set_sensitive(true);
    let Ok(header) = hyper::header::HeaderName::from_bytes(injection.header.as_bytes()) else { return };
    let Ok(config) = credentials.authority.server_config(host) else { return };
    let accepted = tokio::time::timeout(HEAD_WITHIN, tokio_rustls::TlsAcceptor::from(config).accept(client)).await;
    let tls = match accepted {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::info!(workspace = %proxy.workspace_id, %host, port, error = %e, "egress: the workload's TLS failed");
            proxy.refuse(host, port, "TLS to the proxy's certificate did not complete");
            return;
        }
        Err(_) => {
            proxy.refuse(host, port, "TLS to the proxy's certificate did not complete in time");
            return;
        }
    };
    // The name the workload asked for is the tunnel's, or nothing is sent.
    let asked = tls.get_ref().1.server_name().map(str::to_owned);
    if asked.as_deref().is_none_or(|name| !name.eq_ignore_ascii_case(host.trim_end_matches('.'))) {
        proxy.refuse(host, port, "TLS asked for another name");
        return;
    }
    let sender = match open_upstream(upstream, credentials, host).await {
        Ok(sender) => sender,
        Err(error) => {
            tracing::info!(workspace = %proxy.workspace_id, %host, port, %error, "egress: the brokered host's TLS failed");
            return;
        }
    };
    let sender = Arc::new(tokio::sync::Mutex::new(Some(sender)));
    let proxy = proxy.clone();
    let host = host.to_owned();
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        let (proxy, host, sender, header, value) =
            (proxy.clone(), host.clone(), sender.clone(), header.clone(), value.clone());
        async move {
            // The credential is the named host's: a request that names
            // another (a CDN's other customer, through its Host header or
            // an absolute URL) is not sent, so it cannot carry it there.
            if !names_only(&request, &host, port) {
                proxy.refuse(&host, port, "a request inside named another host");
                let mut refused = Response::new(Counted::new(None, Arc::new(AtomicU64::new(0)), None));
                *refused.status_mut() = StatusCode::MISDIRECTED_REQUEST;
                return Ok::<_, hyper::Error>(refused);
            }
            let origin_form = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
            *request.uri_mut() = origin_form.parse().unwrap_or_default();
            let headers = request.headers_mut();
            headers.remove(&header);
            headers.insert(header, value);
            let proxy_headers: Vec<_> =
                headers.keys().filter(|name| name.as_str().starts_with("proxy-")).cloned().collect();
            for name in proxy_headers {
                headers.remove(name);
            }
            let method = request.method().clone();
            let sent = Arc::new(AtomicU64::new(0));
            let request = request.map(|body| Counted::new(Some(body), sent.clone(), None));
            let answer = {
                let mut held = sender.lock().await;
                match held.as_mut() {
                    Some(upstream) => match upstream.ready().await {
                        Ok(()) => upstream.send_request(request).await.ok(),
                        Err(_) => None,
                    },
                    None => None,
                }
            };
            let Some(answer) = answer else {
                *sender.lock().await = None;
                let mut failed = Response::new(Counted::new(None, sent, None));
                *failed.status_mut() = StatusCode::BAD_GATEWAY;
                return Ok::<_, hyper::Error>(failed);
            };
            let status = answer.status().as_u16();
            let record = Record { proxy: proxy.clone(), host, method: method.to_string(), status, sent: sent.clone() };
            Ok(answer.map(|body| Counted::new(Some(body), Arc::new(AtomicU64::new(0)), Some(record))))
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_WITHIN)
        .serve_connection(TokioIo::new(tls), service);
    let _ = served.await;
}

/// Whether a request names only `host:port` (or no host at all): its URL's
/// authority, if absolute, and its Host header.
fn names_only(request: &Request<Incoming>, host: &str, port: u16) -> bool {
    let same = |named: &str| {
        super::authority(named, 443).is_some_and(|(name, p)| {
            p == port && name.trim_end_matches('.').eq_ignore_ascii_case(host.trim_end_matches('.'))
        })
    };
    let by_url = request.uri().authority().is_none_or(|a| same(a.as_str()));
    let by_header = request.headers().get_all(hyper::header::HOST).iter().all(|h| h.to_str().is_ok_and(same));
    by_url && by_header
}

/// TLS to the real host, checked against the upstream roots, and an
/// HTTP/1.1 connection over it.
async fn open_upstream(upstream: TcpStream, credentials: &Credentials, host: &str) -> Result<Upstream, String> {
    let name = ServerName::try_from(host.trim_end_matches('.').to_owned()).map_err(|e| e.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(credentials.upstream.clone());
    let tls = tokio::time::timeout(HEAD_WITHIN, connector.connect(name, upstream))
        .await
        .map_err(|_| "no TLS handshake in time".to_owned())?
        .map_err(|e| e.to_string())?;
    let (sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    Ok(sender)
}

/// What one brokered request leaves in the log once its answer is through.
struct Record {
    proxy: Arc<EgressProxy>,
    host: String,
    method: String,
    status: u16,
    sent: Arc<AtomicU64>,
}

/// A body passed through, its bytes counted; an answer's logs its request
/// when it ends (or is dropped).
pub(super) struct Counted<B> {
    inner: Option<B>,
    bytes: Arc<AtomicU64>,
    record: Option<Record>,
}

impl<B> Counted<B> {
    fn new(inner: Option<B>, bytes: Arc<AtomicU64>, record: Option<Record>) -> Counted<B> {
        Counted { inner, bytes, record }
    }
}

impl<B> Drop for Counted<B> {
    fn drop(&mut self) {
        let Some(record) = self.record.take() else { return };
        if let Some(metric) = record.proxy.credentials.as_ref().and_then(|c| c.brokered.as_ref()) {
            metric.inc();
        }
        tracing::info!(
            workspace = %record.proxy.workspace_id,
            host = %record.host,
            method = %record.method,
            status = record.status,
            request_bytes = record.sent.load(Ordering::Relaxed),
            response_bytes = self.bytes.load(Ordering::Relaxed),
            "egress brokered"
        );
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Counted<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let Some(inner) = self.inner.as_mut() else { return Poll::Ready(None) };
        let polled = Pin::new(inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            self.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.as_ref().map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_one_authority_and_each_host_its_own_certificate() {
        let key = |seal: u8| sluice_store::Sealer::from_key([seal; 32]).derived_ed25519_pkcs8("egress authority");
        let a = Authority::from_key(key(7).expose().clone()).unwrap();
        let b = Authority::from_key(key(7).expose().clone()).unwrap();
        assert_eq!(a.certificate_pem(), b.certificate_pem(), "every worker of an install has the same authority");
        assert_ne!(a.certificate_pem(), Authority::from_key(key(8).expose().clone()).unwrap().certificate_pem());
        let first = a.server_config("api.example.test").unwrap();
        assert!(Arc::ptr_eq(&first, &a.server_config("api.example.test").unwrap()), "made once per host");
        assert!(!Arc::ptr_eq(&first, &a.server_config("other.example.test").unwrap()));
    }

    #[test]
    fn a_secret_value_is_never_printed() {
        let printed = format!("{:?}", SecretValue("ghp_abcdefghijklmnop".into()));
        assert!(!printed.contains("ghp_"), "{printed}");
    }
}
