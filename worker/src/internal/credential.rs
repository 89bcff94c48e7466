//! The cluster credential. Every sluice process of an install derives the
//! same certificate authority from the shared seal key, and issues itself
//! a certificate under it. A worker serves its internal API with its
//! certificate; the rest of sluice calls it presenting its own, and only
//! such callers may make executor calls there. Nothing that lacks the key
//! (an executor's workload, another install) can get either side. A client
//! without a certificate (an SSH gateway, with a ticket) gets through the
//! handshake but not to those calls; one with a certificate of another
//! authority does not get through at all.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PKCS_ED25519,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sluice_store::Sealer;

/// Why the credential could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cluster credential: {0}")]
pub struct ClusterTlsError(String);

impl ClusterTlsError {
    pub(crate) fn from_message(message: String) -> ClusterTlsError {
        ClusterTlsError(message)
    }
}

fn failed(e: impl std::fmt::Display) -> ClusterTlsError {
    ClusterTlsError(e.to_string())
}

/// This process's certificate under the install's authority.
#[derive(Debug)]
pub struct ClusterTls {
    authority: CertificateDer<'static>,
    authority_pem: String,
    certificate: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

fn authority_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "sluice cluster authority");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.serial_number = Some(rcgen::SerialNumber::from(vec![1]));
    params
}

impl ClusterTls {
    /// The authority from `sealer`'s key, and a fresh certificate under it
    /// for `names` (the host names or addresses this process is reached at;
    /// a process that only calls out may give any).
    pub fn new(sealer: &Sealer, names: &[String]) -> Result<ClusterTls, ClusterTlsError> {
        let pkcs8 = PrivatePkcs8KeyDer::from(sealer.derived_ed25519_pkcs8("cluster authority").expose().clone());
        let authority_key = KeyPair::from_pkcs8_der_and_sign_algo(&pkcs8, &PKCS_ED25519).map_err(failed)?;
        let authority = authority_params().self_signed(&authority_key).map_err(failed)?;
        let issuer = Issuer::new(authority_params(), authority_key);

        let key = KeyPair::generate_for(&PKCS_ED25519).map_err(failed)?;
        let mut params = CertificateParams::new(names.to_vec()).map_err(failed)?;
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, "sluice cluster member");
        params.distinguished_name = name;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let certificate = params.signed_by(&key, &issuer).map_err(failed)?;
        Ok(ClusterTls {
            authority: authority.der().clone(),
            authority_pem: authority.pem(),
            certificate: certificate.der().clone(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()),
        })
    }

    /// The authority's certificate (PEM): public, for a client that checks
    /// a worker's certificate without being a member (a gateway).
    pub fn authority_pem(&self) -> &str {
        &self.authority_pem
    }

    fn roots(&self) -> Result<Arc<rustls::RootCertStore>, ClusterTlsError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.authority.clone()).map_err(failed)?;
        Ok(Arc::new(roots))
    }

    pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    /// What a worker's internal API serves with: its certificate; a caller's
    /// certificate, if it presents one, must be of the same authority.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, ClusterTlsError> {
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(self.roots()?, Self::provider())
            .allow_unauthenticated()
            .build()
            .map_err(failed)?;
        let config = rustls::ServerConfig::builder_with_provider(Self::provider())
            .with_safe_default_protocol_versions()
            .map_err(failed)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![self.certificate.clone()], PrivateKeyDer::Pkcs8(self.key.clone_key()))
            .map_err(failed)?;
        Ok(Arc::new(config))
    }

    /// What a caller of a worker's internal API connects with: it trusts
    /// only the authority, and presents its own certificate.
    pub fn client_config(&self) -> Result<rustls::ClientConfig, ClusterTlsError> {
        rustls::ClientConfig::builder_with_provider(Self::provider())
            .with_safe_default_protocol_versions()
            .map_err(failed)?
            .with_root_certificates(self.roots()?)
            .with_client_auth_cert(vec![self.certificate.clone()], PrivateKeyDer::Pkcs8(self.key.clone_key()))
            .map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_one_authority_and_each_process_its_own_certificate() {
        let sealer = Sealer::from_key([7; 32]);
        let a = ClusterTls::new(&sealer, &["10.0.0.1".into()]).unwrap();
        let b = ClusterTls::new(&sealer, &["worker-b".into()]).unwrap();
        assert_eq!(a.authority, b.authority, "the authority is the key's, whoever derives it");
        assert_ne!(a.certificate, b.certificate);
        let other = ClusterTls::new(&Sealer::from_key([8; 32]), &["10.0.0.1".into()]).unwrap();
        assert_ne!(a.authority, other.authority, "another key, another authority");
        a.server_config().unwrap();
        a.client_config().unwrap();
    }

    fn other_pem_of(sealer: &Sealer) -> String {
        ClusterTls::new(sealer, &["elsewhere".into()]).unwrap().authority_pem().to_owned()
    }

    /// A TLS handshake over an in-memory pipe: `None` when either side
    /// refused, else whether the server saw a verified client certificate.
    async fn handshake(server: &ClusterTls, client: rustls::ClientConfig, name: &str) -> Option<bool> {
        let (near, far) = tokio::io::duplex(64 << 10);
        let acceptor = tokio_rustls::TlsAcceptor::from(server.server_config().unwrap());
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
        let name = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
        let (accepted, connected) = tokio::join!(acceptor.accept(far), connector.connect(name, near));
        let (accepted, _) = (accepted.ok()?, connected.ok()?);
        Some(accepted.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty()))
    }

    #[tokio::test]
    async fn only_members_of_the_install_get_through() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let sealer = Sealer::from_key([7; 32]);
        let worker = ClusterTls::new(&sealer, &["10.0.0.1".into()]).unwrap();
        let member = ClusterTls::new(&sealer, &["caller".into()]).unwrap();
        assert_eq!(handshake(&worker, member.client_config().unwrap(), "10.0.0.1").await, Some(true));

        // Another install's process: its certificate is not of this authority.
        let stranger = ClusterTls::new(&Sealer::from_key([8; 32]), &["caller".into()]).unwrap();
        assert_eq!(handshake(&worker, stranger.client_config().unwrap(), "10.0.0.1").await, None);
        // No certificate at all (a gateway, or a workload that reached the
        // port): through the handshake, but not a member.
        use rustls::pki_types::pem::PemObject;
        let pem = worker.authority_pem();
        let der = rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        assert_eq!(pem, other_pem_of(&sealer), "every process derives the same authority");
        assert_eq!(der, worker.authority, "the PEM is the authority's certificate");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der).unwrap();
        let anonymous = rustls::ClientConfig::builder_with_provider(ClusterTls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        assert_eq!(handshake(&worker, anonymous, "10.0.0.1").await, Some(false));
        // A member does not take a stranger's worker for one of its own.
        let impostor = ClusterTls::new(&Sealer::from_key([8; 32]), &["10.0.0.1".into()]).unwrap();
        assert_eq!(handshake(&impostor, member.client_config().unwrap(), "10.0.0.1").await, None);
        // Nor its own worker under another name.
        assert_eq!(handshake(&worker, member.client_config().unwrap(), "10.0.0.9").await, None);
    }
}
