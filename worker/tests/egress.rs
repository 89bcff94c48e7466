//! The egress proxy with curl as its client: an allowed name is reached
//! over HTTPS (CONNECT) and plain HTTP; another name, a raw IP address and
//! a TLS hello asking for another name than the CONNECT's are refused and
//! counted.

use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use sluice_domain::egress::Allowlist;
use sluice_worker::egress::{EgressProxy, Resolver, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An HTTPS server for `allowed.test` and `denied.test` on loopback; its
/// certificate (PEM) for the client to trust.
async fn https_server() -> (u16, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["allowed.test".into(), "denied.test".into()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let pem = cert.pem();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else { return };
                let mut buf = [0u8; 4096];
                let _ = tls.read(&mut buf).await;
                let body = "hello over tls";
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (port, pem)
}

/// A plain HTTP server on loopback that answers with the request line it got.
async fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let line = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_owned();
                let body = format!("plain saw {line}");
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// curl through the proxy: (exit code, HTTP status, body).
async fn curl(proxy: u16, ca: &std::path::Path, extra: &[&str], url: &str) -> (i32, String, String) {
    let mut command = Command::new("curl");
    command
        .args(["-s", "--max-time", "10", "-w", "\n%{http_code}", "--proxy", &format!("http://127.0.0.1:{proxy}")])
        .arg("--cacert")
        .arg(ca)
        .args(extra)
        .arg(url);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or((&text, ""));
    (out.status.code().unwrap_or(-1), status.to_owned(), body.to_owned())
}

#[tokio::test]
async fn only_named_destinations_are_reached_and_every_refusal_is_counted() {
    let (tls_port, pem) = https_server().await;
    let plain_port = http_server().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    let allowlist =
        Allowlist::parse([format!("allowed.test:{tls_port}").as_str(), format!("allowed.test:{plain_port}").as_str()])
            .unwrap();
    let resolver = Resolver::from_hosts("127.0.0.1 allowed.test denied.test\n").unwrap();
    let proxy = Arc::new(EgressProxy::new("ws_test".into(), allowlist, resolver));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    tokio::spawn(serve(listener, proxy.clone(), std::future::pending()));

    let (code, status, body) = curl(proxy_port, &ca, &[], &format!("https://allowed.test:{tls_port}/")).await;
    assert_eq!((code, status.as_str(), body.as_str()), (0, "200", "hello over tls"));
    let (_, status, body) = curl(proxy_port, &ca, &[], &format!("http://allowed.test:{plain_port}/p?q=1")).await;
    assert_eq!((status.as_str(), body.as_str()), ("200", "plain saw GET /p?q=1 HTTP/1.1"), "origin form upstream");
    assert_eq!(proxy.refused(), 0);

    // Another name, over TLS and plain HTTP.
    let (code, _, _) = curl(proxy_port, &ca, &[], &format!("https://denied.test:{tls_port}/")).await;
    assert_ne!(code, 0, "a name not on the list");
    let (_, status, _) = curl(proxy_port, &ca, &[], &format!("http://denied.test:{plain_port}/")).await;
    assert_eq!(status, "403");
    // A raw address, whatever it is.
    let (code, _, _) = curl(proxy_port, &ca, &["-k"], &format!("https://127.0.0.1:{tls_port}/")).await;
    assert_ne!(code, 0, "a raw IP address");
    // An allowed port of an allowed name, but another port than listed.
    let (code, _, _) = curl(proxy_port, &ca, &[], "https://allowed.test/").await;
    assert_ne!(code, 0, "port 443 is not listed for allowed.test here");
    // The CONNECT names allowed.test (and is let through), then the TLS
    // hello asks for denied.test: the tunnel is closed.
    let mut tunnel = tokio::net::TcpStream::connect(("127.0.0.1", proxy_port)).await.unwrap();
    let connect = format!("CONNECT allowed.test:{tls_port} HTTP/1.1\r\nHost: allowed.test:{tls_port}\r\n\r\n");
    tunnel.write_all(connect.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 39];
    tunnel.read_exact(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from_pem_file(&ca).unwrap()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("denied.test").unwrap();
    let handshake = tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name, tunnel).await;
    assert!(handshake.is_err(), "a hello for another name than the CONNECT's");
    assert_eq!(proxy.refused(), 5, "every refusal counted");
}
