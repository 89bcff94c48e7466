//! Idempotent-create key records: (owner, key) → pending | found | cancelled.
//! A create records its key as `found` in the transaction that commits the
//! workspace, so a create that dies first leaves nothing. A cancel records
//! an unknown key (or one left `pending` by a create of an earlier release,
//! which recorded the key first) as `cancelled`, which no create can leave:
//! whichever of the two commits first, the other sees it. A broker snapshot's key is a record of the same kind, naming
//! its snapshot where a workspace's names its workspace.

use crate::Store;
use crate::clock::now_ms;
use crate::db::{DbRow, Pool, Tx, args};
use crate::error::StoreError;
use crate::model::{CreateKey, CreateKeyState};
use sluice_domain::ids::{IdempotencyKey, OwnerId};

/// An idempotent create's key and the keyed digest of its request.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub key: IdempotencyKey,
    pub request_hash: String,
}

pub(crate) use sluice_domain::create_key::{Claim, KeyRecord};

/// The domain's decision, as the store's error.
pub(crate) fn decide(record: &KeyRecord, request_hash: &str) -> Result<Claim, StoreError> {
    sluice_domain::create_key::decide(record, request_hash).map_err(StoreError::from)
}

fn record_from_row(row: &DbRow) -> Result<KeyRecord, StoreError> {
    Ok(KeyRecord {
        state: row.parsed("state")?,
        request_hash: row.opt_text("request_hash")?,
        workspace_id: row.opt_id("workspace_id")?,
    })
}

const SELECT_KEY: &str = "SELECT state, request_hash, workspace_id, run_id, launch_id FROM create_keys \
    WHERE owner_user_id = $1 AND idempotency_key = $2";

/// What an already settled key (found or cancelled) decides, from a plain
/// read: replays take no write lock. `None` when the create has to go on to
/// the committer (a new key, or one left `pending`).
pub(crate) async fn settled(pool: &Pool, owner: &OwnerId, idem: &Idempotency) -> Result<Option<Claim>, StoreError> {
    let Some(row) = pool.fetch_optional(SELECT_KEY, args![owner, &idem.key]).await? else { return Ok(None) };
    let record = record_from_row(&row)?;
    if record.state == CreateKeyState::Pending {
        return Ok(None);
    }
    decide(&record, &idem.request_hash).map(Some)
}

/// The key's record, inside the create's transaction, which found it there.
pub(crate) async fn read(tx: &mut Tx, owner: &OwnerId, key: &IdempotencyKey) -> Result<KeyRecord, StoreError> {
    record_from_row(&tx.fetch_one(SELECT_KEY, args![owner, key]).await?)
}

fn key_from_row(key: &IdempotencyKey, row: Option<DbRow>) -> Result<CreateKey, StoreError> {
    Ok(match row {
        None => CreateKey {
            idempotency_key: key.clone(),
            state: CreateKeyState::None,
            workspace_id: None,
            run_id: None,
            launch_id: None,
        },
        Some(row) => CreateKey {
            idempotency_key: key.clone(),
            state: row.parsed("state")?,
            workspace_id: row.opt_id("workspace_id")?,
            run_id: row.opt_id("run_id")?,
            launch_id: row.opt_id("launch_id")?,
        },
    })
}

impl Store {
    /// What became of the owner's create with this key.
    pub async fn get_create_key(&self, owner: &OwnerId, key: &IdempotencyKey) -> Result<CreateKey, StoreError> {
        let row = self.pool.fetch_optional(SELECT_KEY, args![owner, key]).await?;
        key_from_row(key, row)
    }

    /// Makes sure no create with this key ever commits. A key whose create
    /// already committed stays `found`.
    pub async fn cancel_create_key(&self, owner: &OwnerId, key: &IdempotencyKey) -> Result<CreateKey, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "INSERT INTO create_keys (owner_user_id, idempotency_key, state, created_at, updated_at) \
             VALUES ($1, $2, $4, $3, $3) ON CONFLICT (owner_user_id, idempotency_key) DO NOTHING",
            args![owner, key, now, CreateKeyState::Cancelled.as_str()],
        )
        .await?;
        tx.execute(
            "UPDATE create_keys SET state = $4, updated_at = $1 \
             WHERE owner_user_id = $2 AND idempotency_key = $3 AND state = $5",
            args![now, owner, key, CreateKeyState::Cancelled.as_str(), CreateKeyState::Pending.as_str()],
        )
        .await?;
        let row = tx.fetch_optional(SELECT_KEY, args![owner, key]).await?;
        tx.commit().await?;
        key_from_row(key, row)
    }

    /// Forgets key records last touched before `before_ms`. Callers keep
    /// records at least seven days.
    pub async fn purge_create_keys(&self, before_ms: i64) -> Result<u64, StoreError> {
        let purged = self.pool.execute("DELETE FROM create_keys WHERE updated_at < $1", args![before_ms]).await?;
        self.found_keys.forget_all();
        Ok(purged)
    }
}
