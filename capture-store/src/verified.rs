//! An object whose bytes were checked against its key: what the registrar
//! stores and packs, and nothing else.

use bytes::Bytes;
use sluice_protocol::registrar::object_key;

/// Bytes that do not hash to the key they came with.
#[derive(Debug, thiserror::Error)]
#[error("object {key} does not hash to its key")]
pub struct Mismatch {
    pub key: String,
}

/// An object whose bytes were checked to hash to its key: only such an
/// object is stored under a key it names.
#[derive(Debug, Clone)]
pub struct Verified {
    key: String,
    bytes: Bytes,
}

impl Verified {
    /// Checks that `bytes` hash to `key`.
    pub fn check(key: String, bytes: Bytes) -> Result<Verified, Mismatch> {
        if object_key(&bytes) != key {
            return Err(Mismatch { key: key.chars().take(80).collect() });
        }
        Ok(Verified { key, bytes })
    }

    /// `bytes` under their own key.
    pub fn of(bytes: Bytes) -> Verified {
        Verified { key: object_key(&bytes), bytes }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The key and the bytes, to store.
    pub fn into_parts(self) -> (String, Bytes) {
        (self.key, self.bytes)
    }
}
