//! The broker's certificate: the operator's (`--tls-cert`, `--tls-key`),
//! or one generated once into `DATA_DIR/broker-tls/` (self-signed, for
//! `localhost` and the loopback addresses) for the embedded default.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

/// The listener's TLS setup and what to tell the operator about it.
pub struct BrokerTls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub cert_path: PathBuf,
    /// SHA-256 of the leaf certificate, colon-separated hex.
    pub fingerprint: String,
}

fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    file.write_all(contents)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Generates the self-signed pair into `dir` unless both files are there.
pub fn ensure_self_signed(dir: &Path) -> Result<(PathBuf, PathBuf), TlsSetupError> {
    ensure_self_signed_for(dir, &["localhost", "127.0.0.1", "::1"])
}

/// Generates a self-signed pair for `names` into `dir` unless both files
/// are there.
pub fn ensure_self_signed_for(dir: &Path, names: &[&str]) -> Result<(PathBuf, PathBuf), TlsSetupError> {
    use std::os::unix::fs::DirBuilderExt;
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    if cert.is_file() && key.is_file() {
        return Ok((cert, key));
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let certified = rcgen::generate_simple_self_signed(names).map_err(|e| TlsSetupError(e.to_string()))?;
    write_private(&key, certified.signing_key.serialize_pem().as_bytes())?;
    write_private(&cert, certified.cert.pem().as_bytes())?;
    Ok((cert, key))
}

/// Loads the pair and builds the acceptor: TLS 1.2 and 1.3 only.
pub fn load(cert_path: &Path, key_path: &Path) -> Result<BrokerTls, TlsSetupError> {
    load_offering(cert_path, key_path, &[])
}

/// As [`load`], offering `protocols` (ALPN names, most wanted first).
pub fn load_offering(cert_path: &Path, key_path: &Path, protocols: &[&[u8]]) -> Result<BrokerTls, TlsSetupError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect())
        .map_err(|e| TlsSetupError(format!("{}: {e}", cert_path.display())))?;
    let leaf = certs.first().ok_or_else(|| TlsSetupError(format!("{}: no certificate", cert_path.display())))?;
    let fingerprint = Sha256::digest(leaf.as_ref()).iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":");
    let key =
        PrivateKeyDer::from_pem_file(key_path).map_err(|e| TlsSetupError(format!("{}: {e}", key_path.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsSetupError(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsSetupError(e.to_string()))?;
    config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
    Ok(BrokerTls {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        cert_path: cert_path.to_path_buf(),
        fingerprint,
    })
}

/// Why TLS could not be set up, for the operator.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsSetupError(String);

impl From<std::io::Error> for TlsSetupError {
    fn from(e: std::io::Error) -> Self {
        TlsSetupError(e.to_string())
    }
}
