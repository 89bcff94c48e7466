//! Broker snapshots: taking (the key claimed, the quota held), ready,
//! deleting (asked for, or past its TTL) and deleted. A snapshot's
//! idempotency key is a create key like a workspace's, so both share one
//! mechanism: pending while the snapshot is being taken, found once it is.

use crate::Store;
use crate::clock::now_ms;
use crate::creates::keys::{Claim, KeyRecord, decide};
use crate::db::{DbRow, args};
use crate::error::StoreError;
use crate::model::{ConflictCode, CreateKeyState};
use crate::seal::{Sealed, Secret};
use sluice_domain::ids::{SnapshotId, WorkspaceId};

/// How long a snapshot may stay `taking` before its key is taken to be
/// abandoned (its taker died): longer than any snapshot takes.
pub const TAKING_STALE_MS: i64 = 15 * 60 * 1000;

/// A snapshot as the protocol answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerSnapshot {
    pub snapshot_id: SnapshotId,
    pub instance: String,
    pub workspace_id: WorkspaceId,
    pub state: SnapshotState,
    pub created_at: i64,
    pub expires_at: i64,
}

pub use sluice_domain::model::SnapshotState;

impl BrokerSnapshot {
    /// Whether a warm start may use it at `now`.
    pub fn usable(&self, now: i64) -> bool {
        self.state == SnapshotState::Ready && now < self.expires_at
    }
}

/// What a snapshot request with an idempotency key may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotClaim {
    /// Take the snapshot under this id (a new one, or one whose taker died).
    Take(SnapshotId),
    /// The key already made this snapshot.
    Replay(BrokerSnapshot),
    /// The snapshot is being taken by another request.
    InProgress,
}

/// A new snapshot request.
#[derive(Debug)]
pub struct NewSnapshot<'a> {
    pub instance: &'a str,
    pub workspace_id: &'a WorkspaceId,
    pub key: &'a str,
    pub request_hash: &'a str,
    pub dir: &'a str,
    pub max_snapshots: u64,
    pub ttl_seconds: u64,
}

pub use sluice_domain::model::TakenSnapshot;

/// What a warm start restores.
#[derive(Debug)]
pub struct SnapshotRestore {
    pub snapshot_id: SnapshotId,
    /// `None` once the snapshot was deleted.
    pub manifests: Option<(String, String)>,
    pub dir: Secret<String>,
}

/// A snapshot whose store objects are due to be deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueDeletion {
    pub snapshot_id: SnapshotId,
    pub manifests: Vec<String>,
    /// Its taker died before it was ready: forget it and its key.
    pub abandoned: bool,
}

const COLUMNS: &str = "snapshot_id, instance, workspace_id, state, created_at, expires_at";

fn from_row(row: &DbRow) -> Result<BrokerSnapshot, StoreError> {
    Ok(BrokerSnapshot {
        snapshot_id: row.id("snapshot_id")?,
        instance: row.text("instance")?,
        workspace_id: row.id("workspace_id")?,
        state: row.parsed("state")?,
        created_at: row.int("created_at")?,
        expires_at: row.int("expires_at")?,
    })
}

fn key_owner(instance: &str) -> String {
    format!("broker:{instance}")
}

fn key_name(key: &str) -> String {
    format!("snapshot:{key}")
}

fn dir_aad(snapshot_id: &SnapshotId) -> String {
    format!("broker-snapshot/{snapshot_id}/dir")
}

impl Store {
    /// Claims the key for a snapshot: a new one holds a place in the
    /// instance's quota from here. Nothing is written when the quota is full.
    pub async fn claim_broker_snapshot(&self, new: &NewSnapshot<'_>) -> Result<SnapshotClaim, StoreError> {
        let now = now_ms();
        let (owner, key) = (key_owner(new.instance), key_name(new.key));
        let mut tx = self.pool.begin().await?;
        // The instance's row lock: one claim at a time counts the quota.
        tx.execute("UPDATE broker_instances SET created_at = created_at WHERE name = $1", args![new.instance]).await?;
        let record = tx
            .fetch_optional(
                "SELECT state, request_hash, snapshot_id FROM create_keys WHERE owner_user_id = $1 AND idempotency_key = $2",
                args![&owner, &key],
            )
            .await?;
        if let Some(row) = record {
            // The workspaces API's own decision, with the snapshot as the
            // resource the key made.
            let record = KeyRecord {
                state: row.parsed("state")?,
                request_hash: row.opt_text("request_hash")?,
                workspace_id: row.opt_id("snapshot_id")?,
            };
            let id = SnapshotId::from(
                match decide(&record, new.request_hash)? {
                    Claim::Replay(id) => id,
                    Claim::Proceed => record
                        .workspace_id
                        .clone()
                        .ok_or_else(|| StoreError::Corrupt("a snapshot key names none".into()))?,
                }
                .into_string(),
            );
            let row = tx
                .fetch_optional(
                    &format!("SELECT {COLUMNS}, updated_at FROM broker_snapshots WHERE snapshot_id = $1"),
                    args![&id],
                )
                .await?
                .ok_or_else(|| StoreError::Corrupt("a snapshot key names a snapshot that is not stored".into()))?;
            let snapshot = from_row(&row)?;
            if snapshot.state != SnapshotState::Taking {
                return Ok(SnapshotClaim::Replay(snapshot));
            }
            if row.int("updated_at")? > now - TAKING_STALE_MS {
                return Ok(SnapshotClaim::InProgress);
            }
            tx.execute("UPDATE broker_snapshots SET updated_at = $1 WHERE snapshot_id = $2", args![now, &id]).await?;
            tx.commit().await?;
            return Ok(SnapshotClaim::Take(id));
        }
        let live = tx
            .fetch_one(
                "SELECT COUNT(*) AS live FROM broker_snapshots WHERE instance = $1 \
                 AND (state = $3 OR (state = $4 AND expires_at > $2))",
                args![new.instance, now, SnapshotState::Taking.as_str(), SnapshotState::Ready.as_str()],
            )
            .await?
            .int("live")?;
        if live as u64 >= new.max_snapshots {
            return Err(StoreError::Conflict {
                message: format!("the instance holds its limit of {} live snapshots", new.max_snapshots),
                code: ConflictCode::SnapshotQuotaExceeded,
            });
        }
        let id = SnapshotId::from(format!("snap_{}", crate::seal::hex(&crate::seal::random_bytes::<13>())));
        let Sealed { nonce, ciphertext } = self.sealer.seal(&dir_aad(&id), new.dir.as_bytes())?;
        let expires_at = now + (new.ttl_seconds as i64) * 1000;
        tx.execute(
            "INSERT INTO broker_snapshots (snapshot_id, instance, workspace_id, state, dir_nonce, dir_sealed, \
             created_at, expires_at, updated_at) VALUES ($1, $2, $3, $8, $4, $5, $6, $7, $6)",
            args![
                &id,
                new.instance,
                new.workspace_id,
                nonce,
                ciphertext,
                now,
                expires_at,
                SnapshotState::Taking.as_str()
            ],
        )
        .await?;
        tx.execute(
            "INSERT INTO create_keys (owner_user_id, idempotency_key, state, request_hash, snapshot_id, created_at, \
             updated_at) VALUES ($1, $2, $6, $3, $4, $5, $5)",
            args![&owner, &key, new.request_hash, &id, now, CreateKeyState::Pending.as_str()],
        )
        .await?;
        tx.commit().await?;
        Ok(SnapshotClaim::Take(id))
    }

    /// Records a taken snapshot: it is ready (unless deleted meanwhile),
    /// its TTL runs from now, and its key is settled.
    pub async fn finish_broker_snapshot(
        &self,
        id: &SnapshotId,
        taken: &TakenSnapshot,
        ttl_seconds: u64,
    ) -> Result<BrokerSnapshot, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "UPDATE broker_snapshots SET state = CASE WHEN state = $8 THEN $9 ELSE state END, \
             small_manifest = $1, bulk_manifest = $2, files = $3, bytes = $4, created_at = $5, expires_at = $6, \
             updated_at = $5 WHERE snapshot_id = $7",
            args![
                &taken.small_manifest,
                &taken.bulk_manifest,
                taken.files as i64,
                taken.bytes as i64,
                now,
                now + (ttl_seconds as i64) * 1000,
                id,
                SnapshotState::Taking.as_str(),
                SnapshotState::Ready.as_str()
            ],
        )
        .await?;
        tx.execute(
            "UPDATE create_keys SET state = $3, updated_at = $1 WHERE snapshot_id = $2",
            args![now, id, CreateKeyState::Found.as_str()],
        )
        .await?;
        let row =
            tx.fetch_one(&format!("SELECT {COLUMNS} FROM broker_snapshots WHERE snapshot_id = $1"), args![id]).await?;
        tx.commit().await?;
        from_row(&row)
    }

    /// Forgets a snapshot that could not be taken, and its key, so a retry
    /// with the same key tries again.
    pub async fn abandon_broker_snapshot(&self, id: &SnapshotId) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "DELETE FROM create_keys WHERE snapshot_id = $1 AND state = $2",
            args![id, CreateKeyState::Pending.as_str()],
        )
        .await?;
        tx.execute(
            "DELETE FROM broker_snapshots WHERE snapshot_id = $1 AND state = $2",
            args![id, SnapshotState::Taking.as_str()],
        )
        .await?;
        tx.commit().await
    }

    /// The instance's snapshot; `None` for an unknown id and for another
    /// instance's alike.
    pub async fn broker_snapshot(&self, instance: &str, id: &SnapshotId) -> Result<Option<BrokerSnapshot>, StoreError> {
        self.pool
            .fetch_optional(
                &format!("SELECT {COLUMNS} FROM broker_snapshots WHERE instance = $1 AND snapshot_id = $2"),
                args![instance, id],
            )
            .await?
            .map(|r| from_row(&r))
            .transpose()
    }

    /// Asks for a snapshot's deletion (the sweep does it). Answers whether
    /// the instance has such a snapshot.
    pub async fn delete_broker_snapshot(&self, instance: &str, id: &SnapshotId) -> Result<bool, StoreError> {
        let now = now_ms();
        self.pool
            .execute(
                "UPDATE broker_snapshots SET state = $4, deleted_at = $1, updated_at = $1 \
                 WHERE instance = $2 AND snapshot_id = $3 AND state IN ($5, $6)",
                args![
                    now,
                    instance,
                    id,
                    SnapshotState::Deleting.as_str(),
                    SnapshotState::Taking.as_str(),
                    SnapshotState::Ready.as_str()
                ],
            )
            .await?;
        Ok(self.broker_snapshot(instance, id).await?.is_some())
    }

    /// What a broker workspace restores before it runs, if anything.
    pub async fn broker_restore(&self, workspace_id: &WorkspaceId) -> Result<Option<SnapshotRestore>, StoreError> {
        let Some(row) = self
            .pool
            .fetch_optional(
                "SELECT s.snapshot_id, s.state, s.small_manifest, s.bulk_manifest, s.dir_nonce, s.dir_sealed \
                 FROM broker_workspaces b JOIN broker_snapshots s ON s.snapshot_id = b.restore_snapshot \
                 WHERE b.workspace_id = $1",
                args![workspace_id],
            )
            .await?
        else {
            return Ok(None);
        };
        let snapshot_id: SnapshotId = row.id("snapshot_id")?;
        let state: SnapshotState = row.parsed("state")?;
        let manifests = match (state, row.opt_text("small_manifest")?, row.opt_text("bulk_manifest")?) {
            (SnapshotState::Ready, Some(small), Some(bulk)) => Some((small, bulk)),
            _ => None,
        };
        let dir = match manifests {
            Some(_) => {
                let sealed = Sealed { nonce: row.bytes("dir_nonce")?, ciphertext: row.bytes("dir_sealed")? };
                let plain = self.sealer.open(&dir_aad(&snapshot_id), &sealed)?;
                String::from_utf8(plain.expose().clone()).map_err(|_| StoreError::Corrupt("a snapshot dir".into()))?
            }
            None => String::new(),
        };
        Ok(Some(SnapshotRestore { snapshot_id, manifests, dir: Secret::new(dir) }))
    }

    /// Snapshots whose deletion is due: asked for, past their TTL, or
    /// abandoned while being taken.
    pub async fn due_snapshot_deletions(&self, now: i64, limit: i64) -> Result<Vec<DueDeletion>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT snapshot_id, state, small_manifest, bulk_manifest FROM broker_snapshots \
                 WHERE state = $4 OR (state = $5 AND expires_at <= $1) \
                 OR (state = $6 AND updated_at <= $2) ORDER BY updated_at LIMIT $3",
                args![
                    now,
                    now - TAKING_STALE_MS,
                    limit,
                    SnapshotState::Deleting.as_str(),
                    SnapshotState::Ready.as_str(),
                    SnapshotState::Taking.as_str()
                ],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(DueDeletion {
                    snapshot_id: row.id("snapshot_id")?,
                    manifests: [row.opt_text("small_manifest")?, row.opt_text("bulk_manifest")?]
                        .into_iter()
                        .flatten()
                        .collect(),
                    abandoned: row.parsed::<SnapshotState>("state")? == SnapshotState::Taking,
                })
            })
            .collect()
    }

    /// The store confirmed the deletion: the row stays (its id answers
    /// gone) without its directory or manifests.
    pub async fn record_snapshot_deleted(&self, id: &SnapshotId) -> Result<(), StoreError> {
        let now = now_ms();
        self.pool
            .execute(
                "UPDATE broker_snapshots SET state = $3, deleted_at = COALESCE(deleted_at, $1), updated_at = $1, \
                 dir_nonce = NULL, dir_sealed = NULL, small_manifest = NULL, bulk_manifest = NULL, delete_error = NULL \
                 WHERE snapshot_id = $2 AND state <> $4",
                args![now, id, SnapshotState::Deleted.as_str(), SnapshotState::Taking.as_str()],
            )
            .await?;
        Ok(())
    }

    /// The deletion failed; the sweep tries again.
    pub async fn record_snapshot_delete_failed(&self, id: &SnapshotId, error: &str) -> Result<(), StoreError> {
        self.pool
            .execute(
                "UPDATE broker_snapshots SET delete_attempts = delete_attempts + 1, delete_error = $1 \
                 WHERE snapshot_id = $2",
                args![error, id],
            )
            .await?;
        Ok(())
    }
}
