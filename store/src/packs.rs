//! The pack index: which pack of the object store holds each packed
//! capture object, and where in it.
//!
//! A pack's row is written before its file and its members after it: a
//! pack is `writing`, then `ready` (its members recorded in the same
//! transaction), then `deleting` (its members forgotten in the same
//! transaction) before its file is deleted, and its row goes last. So a
//! member never names a file not yet written or already deleted, whatever
//! is killed when; a pack left `writing` past the grace period is a write
//! that died, and is collected. An object written again in a newer pack is
//! held by the newer one; the older pack's copy is dead bytes from then on.

use std::collections::HashMap;

pub use sluice_domain::packing::PackState;

use crate::Store;
use crate::clock::now_ms;
use crate::db::{Arg, DbRow, Tx, args};
use crate::error::StoreError;

/// One object in a pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackMember {
    pub object_key: String,
    pub offset: u64,
    pub length: u64,
}

/// Where a packed object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedObject {
    pub pack_key: String,
    pub offset: u64,
    pub length: u64,
}

/// A recorded pack and the members it holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedPack {
    pub pack_key: String,
    pub state: PackState,
    pub bytes: u64,
    pub created_ms: i64,
    pub members: Vec<PackMember>,
}

/// Rows per statement (four values each: far inside both backends' limits).
const ROWS_PER_STATEMENT: usize = 200;

fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn member_from_row(row: &DbRow) -> Result<PackMember, StoreError> {
    Ok(PackMember {
        object_key: row.text("object_key")?,
        offset: unsigned(row.int("at_offset")?),
        length: unsigned(row.int("length")?),
    })
}

/// Makes `pack_key` the holder of `members`. With `only_from`, a member is
/// moved only while one of those packs still holds it (a newer pack keeps
/// what it holds); without, the newest write wins.
async fn hold_members(
    tx: &mut Tx,
    pack_key: &str,
    members: &[PackMember],
    only_from: &[String],
) -> Result<(), StoreError> {
    for rows in members.chunks(ROWS_PER_STATEMENT) {
        let mut values: Vec<Arg> = args![pack_key];
        let mut tuples = Vec::with_capacity(rows.len());
        for member in rows {
            let at = values.len();
            tuples.push(format!("(${}, $1, ${}, ${})", at + 1, at + 2, at + 3));
            values.push(Arg::from(member.object_key.as_str()));
            values.push(Arg::from(signed(member.offset)));
            values.push(Arg::from(signed(member.length)));
        }
        let mut condition = String::new();
        if !only_from.is_empty() {
            let mut placeholders = Vec::new();
            for from in only_from {
                values.push(Arg::from(from));
                placeholders.push(format!("${}", values.len()));
            }
            condition = format!(" WHERE pack_members.pack_key IN ({})", placeholders.join(", "));
        }
        let sql = format!(
            "INSERT INTO pack_members (object_key, pack_key, at_offset, length) VALUES {} \
             ON CONFLICT (object_key) DO UPDATE SET pack_key = excluded.pack_key, \
             at_offset = excluded.at_offset, length = excluded.length{condition}",
            tuples.join(", ")
        );
        tx.execute(&sql, values).await?;
    }
    Ok(())
}

/// Moves the pack from one of `from` to `to`; false when it is in neither.
async fn set_state(tx: &mut Tx, pack_key: &str, from: &[PackState], to: PackState) -> Result<bool, StoreError> {
    let mut values = args![pack_key, to.as_str()];
    let mut placeholders = Vec::new();
    for state in from {
        values.push(Arg::from(state.as_str()));
        placeholders.push(format!("${}", values.len()));
    }
    let sql = format!("UPDATE packs SET state = $2 WHERE pack_key = $1 AND state IN ({})", placeholders.join(", "));
    Ok(tx.execute(&sql, values).await? == 1)
}

impl Store {
    /// Notes a pack about to be written. A pack being deleted under the
    /// same key keeps its row: the write's [`Store::record_pack`] then fails.
    pub async fn begin_pack(&self, pack_key: &str, bytes: u64) -> Result<(), StoreError> {
        self.pool
            .execute(
                "INSERT INTO packs (pack_key, state, bytes, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (pack_key) DO NOTHING",
                args![pack_key, PackState::Writing.as_str(), signed(bytes), now_ms()],
            )
            .await?;
        Ok(())
    }

    /// Forgets a pack whose write failed, while it is still `writing`: the
    /// same pack (its key is its content's) can be begun again at once. A
    /// part of its file the failed write left is a file no row names, which
    /// the collector's sweep deletes.
    pub async fn abandon_pack(&self, pack_key: &str) -> Result<(), StoreError> {
        self.pool
            .execute(
                "DELETE FROM packs WHERE pack_key = $1 AND state = $2",
                args![pack_key, PackState::Writing.as_str()],
            )
            .await?;
        Ok(())
    }

    /// Records a pack whose file is written: it holds each of its members
    /// from now on. False when a sweep took the pack meanwhile (the write
    /// is lost and must be made again).
    pub async fn record_pack(&self, pack_key: &str, members: &[PackMember]) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        if !set_state(&mut tx, pack_key, &[PackState::Writing, PackState::Ready], PackState::Ready).await? {
            return Ok(false);
        }
        hold_members(&mut tx, pack_key, members, &[]).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Where each packed one of `keys` is; a key not packed is absent.
    pub async fn packed_objects(&self, keys: &[String]) -> Result<HashMap<String, PackedObject>, StoreError> {
        let mut found = HashMap::new();
        for batch in keys.chunks(ROWS_PER_STATEMENT * 4) {
            let placeholders: Vec<String> = (1..=batch.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT object_key, pack_key, at_offset, length FROM pack_members WHERE object_key IN ({})",
                placeholders.join(", ")
            );
            for row in self.pool.fetch_all(&sql, batch.iter().map(Arg::from).collect()).await? {
                let member = member_from_row(&row)?;
                let packed =
                    PackedObject { pack_key: row.text("pack_key")?, offset: member.offset, length: member.length };
                found.insert(member.object_key, packed);
            }
        }
        Ok(found)
    }

    /// Every pack with a row, with the members it holds now.
    pub async fn recorded_packs(&self) -> Result<Vec<RecordedPack>, StoreError> {
        let mut packs: Vec<RecordedPack> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let rows = self
            .pool
            .fetch_all("SELECT pack_key, state, bytes, created_at FROM packs ORDER BY pack_key", args![])
            .await?;
        for row in rows {
            let pack_key = row.text("pack_key")?;
            at.insert(pack_key.clone(), packs.len());
            packs.push(RecordedPack {
                pack_key,
                state: {
                    let state = row.text("state")?;
                    PackState::parse(&state)
                        .ok_or_else(|| StoreError::Corrupt(format!("unknown pack state {state}")))?
                },
                bytes: unsigned(row.int("bytes")?),
                created_ms: row.int("created_at")?,
                members: Vec::new(),
            });
        }
        let rows = self
            .pool
            .fetch_all("SELECT object_key, pack_key, at_offset, length FROM pack_members ORDER BY object_key", args![])
            .await?;
        for row in rows {
            if let Some(i) = at.get(&row.text("pack_key")?) {
                packs[*i].members.push(member_from_row(&row)?);
            }
        }
        for pack in &mut packs {
            pack.members.sort_by_key(|m| m.offset);
        }
        Ok(packs)
    }

    /// Takes a pack that is `from` out of use before its file is deleted:
    /// it holds nothing from now on. False when it is no longer `from`.
    pub async fn retire_pack(&self, pack_key: &str, from: PackState) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        if !set_state(&mut tx, pack_key, &[from], PackState::Deleting).await? {
            return Ok(false);
        }
        tx.execute("DELETE FROM pack_members WHERE pack_key = $1", args![pack_key]).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Claims a pack file no row names (a deletion that died between its
    /// row and its file) for deletion; false when a write took the key first.
    pub async fn claim_unrecorded_pack(&self, pack_key: &str, bytes: u64) -> Result<bool, StoreError> {
        let inserted = self
            .pool
            .execute(
                "INSERT INTO packs (pack_key, state, bytes, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (pack_key) DO NOTHING",
                args![pack_key, PackState::Deleting.as_str(), signed(bytes), now_ms()],
            )
            .await?;
        Ok(inserted == 1)
    }

    /// Forgets a retired pack whose file is deleted.
    pub async fn forget_pack(&self, pack_key: &str) -> Result<(), StoreError> {
        self.pool
            .execute(
                "DELETE FROM packs WHERE pack_key = $1 AND state = $2",
                args![pack_key, PackState::Deleting.as_str()],
            )
            .await?;
        Ok(())
    }

    /// Records the pack `into` (begun, its file written) as the holder of
    /// `moved`, the members of the packs `from` worth keeping, and retires
    /// those: one transaction, so each member is held by one pack
    /// throughout. False when a sweep took `into` meanwhile.
    pub async fn repack(&self, from: &[String], into: &str, moved: &[PackMember]) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        if !set_state(&mut tx, into, &[PackState::Writing, PackState::Ready], PackState::Ready).await? {
            return Ok(false);
        }
        hold_members(&mut tx, into, moved, from).await?;
        for pack in from {
            tx.execute("DELETE FROM pack_members WHERE pack_key = $1", args![pack]).await?;
            set_state(&mut tx, pack, &[PackState::Ready], PackState::Deleting).await?;
        }
        tx.commit().await?;
        Ok(true)
    }
}
