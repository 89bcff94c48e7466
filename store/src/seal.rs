//! Secrets at rest. `secretEnv` and capture tokens are sealed with
//! XChaCha20-Poly1305 under a 32-byte key that never leaves configuration;
//! the workspace id and secret kind are bound in as associated data so a
//! sealed value cannot be moved to another row. The same key (through a
//! derived HMAC key) digests idempotent-create requests, so a request hash
//! stored in plain text reveals nothing about the secrets it covered.

use std::fmt;
use std::path::Path;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::error::StoreError;

pub use sluice_domain::secret::Secret;

/// Fills a buffer from the operating system's random source.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).expect("the operating system random source failed");
    buf
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// A fresh random token (256 bits, hex).
pub fn new_token() -> Secret<String> {
    Secret::new(hex(&random_bytes::<32>()))
}

/// SHA-256 of a token, hex: what the API keeps in memory to compare against.
pub fn token_digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Seals and opens secrets with one key.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
    digest_key: [u8; 32],
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer([redacted])")
    }
}

/// A sealed secret as stored.
#[derive(Debug, Clone)]
pub struct Sealed {
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

impl Sealer {
    pub fn from_key(key: [u8; 32]) -> Sealer {
        let digest_key: [u8; 32] =
            Sha256::new().chain_update(b"sluice request digest key v1").chain_update(key).finalize().into();
        Sealer { cipher: XChaCha20Poly1305::new(&key.into()), digest_key }
    }

    /// Reads a key file (64 hex characters), creating it with a fresh random
    /// key (mode 0600) when it does not exist.
    pub fn load_or_create(path: &Path) -> Result<Sealer, StoreError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_hex(&text)
                .ok_or_else(|| StoreError::Config(format!("{} must hold 64 hex characters", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = random_bytes::<32>();
                write_private_file(path, &hex(&key))?;
                Ok(Sealer::from_key(key))
            }
            Err(e) => Err(e.into()),
        }
    }

    pub fn from_hex(text: &str) -> Option<Sealer> {
        let key: [u8; 32] = unhex(text)?.try_into().ok()?;
        Some(Sealer::from_key(key))
    }

    pub fn seal(&self, aad: &str, plaintext: &[u8]) -> Result<Sealed, StoreError> {
        let nonce = random_bytes::<24>();
        let ciphertext = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad: aad.as_bytes() })
            .map_err(|_| StoreError::Seal("encryption failed".into()))?;
        Ok(Sealed { nonce: nonce.to_vec(), ciphertext })
    }

    pub fn open(&self, aad: &str, sealed: &Sealed) -> Result<Secret<Vec<u8>>, StoreError> {
        if sealed.nonce.len() != 24 {
            return Err(StoreError::Seal("stored nonce has the wrong length".into()));
        }
        self.cipher
            .decrypt(XNonce::from_slice(&sealed.nonce), Payload { msg: &sealed.ciphertext, aad: aad.as_bytes() })
            .map(Secret::new)
            .map_err(|_| StoreError::Seal("a sealed secret does not open with the configured key".into()))
    }

    /// A secret derived from the key for one purpose (`label`): every
    /// process holding the key derives the same, and none reveals the key.
    pub fn derived_secret(&self, label: &str) -> Secret<[u8; 32]> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.digest_key).expect("HMAC accepts any key length");
        mac.update(b"sluice derived secret v1/");
        mac.update(label.as_bytes());
        Secret::new(mac.finalize().into_bytes().into())
    }

    /// An Ed25519 key derived for `label`, as PKCS#8 (RFC 8410): the key of
    /// an authority every process of an install holds alike.
    pub fn derived_ed25519_pkcs8(&self, label: &str) -> Secret<Vec<u8>> {
        const PREFIX: [u8; 16] =
            [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
        let mut der = PREFIX.to_vec();
        der.extend_from_slice(self.derived_secret(label).expose());
        Secret::new(der)
    }

    /// A keyed digest (HMAC-SHA-256, hex) of data that may contain secrets.
    pub fn keyed_digest(&self, data: &[u8]) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.digest_key).expect("HMAC accepts any key length");
        mac.update(data);
        hex(&mac.finalize().into_bytes())
    }
}

/// Writes a file only its owner can read, replacing nothing that exists.
pub fn write_private_file(path: &Path, contents: &str) -> Result<(), StoreError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(contents.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_row() {
        let sealer = Sealer::from_key([7; 32]);
        let sealed = sealer.seal("ws_1/secret_env", b"hunter2").unwrap();
        assert!(!sealed.ciphertext.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(sealer.open("ws_1/secret_env", &sealed).unwrap().expose(), b"hunter2");
        assert!(sealer.open("ws_2/secret_env", &sealed).is_err());
        assert!(Sealer::from_key([8; 32]).open("ws_1/secret_env", &sealed).is_err());
    }

    #[test]
    fn key_file_is_created_private_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seal-key");
        let a = Sealer::load_or_create(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let b = Sealer::load_or_create(&path).unwrap();
        let sealed = a.seal("x", b"v").unwrap();
        assert_eq!(b.open("x", &sealed).unwrap().expose(), b"v");
        assert_eq!(a.keyed_digest(b"abc"), b.keyed_digest(b"abc"));
        assert_ne!(a.keyed_digest(b"abc"), a.keyed_digest(b"abd"));
    }

    #[test]
    fn secrets_do_not_debug_print() {
        assert_eq!(format!("{:?}", Secret::new("hunter2")), "[redacted]");
    }
}
