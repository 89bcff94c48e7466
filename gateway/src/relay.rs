//! The way to an executor: HTTPS to its worker (trusting only the
//! install's cluster authority), upgraded to a session.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use sluice_protocol::session::{self, FrameKind, Open, Refusal};

use crate::api::Target;

/// How long reaching the worker and opening the session may take.
const OPEN_WITHIN: Duration = Duration::from_secs(15);

/// The header the worker records the user's key from.
const KEY_HEADER: &str = "x-sluice-key-fingerprint";

pub type Stream = TokioIo<hyper::upgrade::Upgraded>;

/// How opening a session failed, in words for the user.
#[derive(Debug, thiserror::Error)]
pub enum OpenFailed {
    #[error("{0}")]
    Refused(String),
    #[error("the workspace's host did not answer ({0}); try again shortly")]
    Unreachable(String),
}

fn tls(authority_pem: &str) -> Result<tokio_rustls::TlsConnector, OpenFailed> {
    let unusable = |e: &dyn std::fmt::Display| OpenFailed::Unreachable(format!("the cluster authority: {e}"));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(authority_pem.as_bytes()) {
        roots.add(cert.map_err(|e| unusable(&e))?).map_err(|e| unusable(&e))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| unusable(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Opens a session of `open` on the target's executor; answers the stream
/// once the daemon has started it.
pub async fn open(target: &Target, fingerprint: &str, open: &Open) -> Result<Stream, OpenFailed> {
    tokio::time::timeout(OPEN_WITHIN, open_now(target, fingerprint, open))
        .await
        .map_err(|_| OpenFailed::Unreachable("timed out".into()))?
}

async fn open_now(target: &Target, fingerprint: &str, open: &Open) -> Result<Stream, OpenFailed> {
    let unreachable = |e: &dyn std::fmt::Display| OpenFailed::Unreachable(e.to_string());
    let uri: hyper::Uri = format!("{}/session", target.endpoint).parse().map_err(|e| unreachable(&e))?;
    let host = uri.host().ok_or_else(|| OpenFailed::Unreachable("the endpoint names no host".into()))?;
    let port = uri.port_u16().unwrap_or(443);
    let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned())
        .map_err(|e| unreachable(&e))?;
    let tcp = tokio::net::TcpStream::connect((host.trim_start_matches('[').trim_end_matches(']'), port))
        .await
        .map_err(|e| unreachable(&e))?;
    let _ = tcp.set_nodelay(true);
    let stream = tls(&target.authority_pem)?.connect(name, tcp).await.map_err(|e| unreachable(&e))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| unreachable(&e))?;
    tokio::spawn(connection.with_upgrades());
    let request = hyper::Request::get(uri.path())
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .header(hyper::header::AUTHORIZATION, format!("Bearer {}", target.ticket))
        .header(hyper::header::CONNECTION, "upgrade")
        .header(hyper::header::UPGRADE, session::UPGRADE)
        .header(KEY_HEADER, fingerprint)
        .body(Empty::<Bytes>::new())
        .map_err(|e| unreachable(&e))?;
    let response = sender.send_request(request).await.map_err(|e| unreachable(&e))?;
    if response.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
        return Err(match response.status().as_u16() {
            409 => OpenFailed::Refused("the workspace's executor is not running".into()),
            401 | 404 => OpenFailed::Refused("the workspace moved; try again".into()),
            status => OpenFailed::Unreachable(format!("its worker answered {status}")),
        });
    }
    let upgraded = hyper::upgrade::on(response).await.map_err(|e| unreachable(&e))?;
    let mut stream = TokioIo::new(upgraded);
    let payload = serde_json::to_vec(open).map_err(|e| unreachable(&e))?;
    sluice_session::write_frames(&mut stream, FrameKind::Open, &payload).await.map_err(|e| unreachable(&e))?;
    match sluice_session::read_frame(&mut stream).await {
        Ok(Some((FrameKind::Started, _))) => Ok(stream),
        Ok(Some((FrameKind::Refused, payload))) => {
            let refusal: Option<Refusal> = serde_json::from_slice(&payload).ok();
            Err(OpenFailed::Refused(refusal.map(|r| r.message).unwrap_or_else(|| "refused".into())))
        }
        Ok(_) => Err(OpenFailed::Unreachable("the session ended before it started".into())),
        Err(e) => Err(unreachable(&e)),
    }
}
