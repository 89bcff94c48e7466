//! Users' SSH public keys, each registered for one principal; an SSH
//! gateway learns a key's principal from here.

use crate::Store;
use crate::clock::now_ms;
use crate::db::{DbRow, args};
use crate::error::StoreError;

/// A registered key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshKey {
    /// `SHA256:` and the unpadded base64 of the key's digest, as
    /// `ssh-keygen -l` prints it.
    pub fingerprint: String,
    pub principal: String,
    /// The key's algorithm name (`ssh-ed25519`, …).
    pub algorithm: String,
    /// The key itself, base64, as in an `authorized_keys` line.
    pub public_key: String,
    pub created_at: i64,
}

/// What registering a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    Created(SshKey),
    /// The principal had registered this key already.
    Existing(SshKey),
    /// Another principal holds the key.
    HeldByAnother,
}

fn ssh_key(row: &DbRow) -> Result<SshKey, StoreError> {
    Ok(SshKey {
        fingerprint: row.text("fingerprint")?,
        principal: row.text("principal")?,
        algorithm: row.text("algorithm")?,
        public_key: row.text("public_key")?,
        created_at: row.int("created_at")?,
    })
}

const COLUMNS: &str = "fingerprint, principal, algorithm, public_key, created_at";

impl Store {
    /// Registers `key` for its principal; registering it again for the same
    /// principal changes nothing.
    pub async fn register_ssh_key(&self, key: &SshKey) -> Result<Registration, StoreError> {
        let inserted = self
            .pool
            .execute(
                "INSERT INTO ssh_keys (fingerprint, principal, algorithm, public_key, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (fingerprint) DO NOTHING",
                args![
                    key.fingerprint.as_str(),
                    key.principal.as_str(),
                    key.algorithm.as_str(),
                    key.public_key.as_str(),
                    now_ms()
                ],
            )
            .await?;
        let stored = self
            .ssh_key(&key.fingerprint)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("ssh key {} vanished as it was registered", key.fingerprint)))?;
        Ok(match (inserted, stored.principal == key.principal) {
            (1, _) => Registration::Created(stored),
            (_, true) => Registration::Existing(stored),
            (_, false) => Registration::HeldByAnother,
        })
    }

    pub async fn ssh_key(&self, fingerprint: &str) -> Result<Option<SshKey>, StoreError> {
        let row = self
            .pool
            .fetch_optional(&format!("SELECT {COLUMNS} FROM ssh_keys WHERE fingerprint = $1"), args![fingerprint])
            .await?;
        row.as_ref().map(ssh_key).transpose()
    }

    /// A principal's keys, oldest first.
    pub async fn ssh_keys_of(&self, principal: &str) -> Result<Vec<SshKey>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                &format!("SELECT {COLUMNS} FROM ssh_keys WHERE principal = $1 ORDER BY created_at, fingerprint"),
                args![principal],
            )
            .await?;
        rows.iter().map(ssh_key).collect()
    }

    /// Removes a key; false when none had that fingerprint.
    pub async fn delete_ssh_key(&self, fingerprint: &str) -> Result<bool, StoreError> {
        Ok(self.pool.execute("DELETE FROM ssh_keys WHERE fingerprint = $1", args![fingerprint]).await? == 1)
    }
}
