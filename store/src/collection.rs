//! What the object sweep needs of the database: each session's retention
//! applied to its chain, the manifests every kept capture and live snapshot
//! names, the fence that keeps a registration from naming an object a sweep
//! is deleting, and each session's stored bytes (counted as they are
//! uploaded, recounted by each sweep).
//!
//! The fence: a sweep raises the generation and sets `deleting_until` in
//! one transaction before it reads what is live, and raises it again when
//! it has deleted. A registration reads the generation before it checks its
//! objects exist, and commits only if the generation is the same and no
//! sweep is deleting; so a capture that named an object a sweep then
//! deleted is never recorded.

use sluice_domain::retention::{self, Registered, Retention};

use crate::Store;
use crate::broker_snapshots::SnapshotState;
use crate::clock::now_ms;
use crate::db::{BackendKind, Tx, args};
use crate::error::StoreError;
use crate::model::{ConflictCode, Refusal};
use sluice_domain::ids::SessionId;

/// A manifest document something live names, and the session it belongs
/// to (none for a snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveManifest {
    pub session_id: Option<SessionId>,
    /// The capture that names it (none for a session's head or a snapshot).
    pub capture_n: Option<u64>,
    pub key: String,
}

/// A session's stored-bytes count, read when a sweep begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCount {
    pub session_id: SessionId,
    pub stored_bytes: u64,
}

fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Refuses a registration a sweep could have raced: its objects are
/// checked again (the daemon asks again soon).
pub(crate) async fn check_fence(tx: &mut Tx, kind: BackendKind, generation: u64) -> Result<(), StoreError> {
    let lock = kind.for_share();
    let row = tx
        .fetch_one(&format!("SELECT generation, deleting_until FROM object_sweeps WHERE id = 1{lock}"), args![])
        .await?;
    let deleting = row.opt_int("deleting_until")?.is_some_and(|until| until > now_ms());
    if deleting || unsigned(row.int("generation")?) != generation {
        return Err(Refusal {
            message: "objects are being collected: the capture's objects are checked again".into(),
            code: ConflictCode::Collecting,
        }
        .into());
    }
    Ok(())
}

impl Store {
    /// The sweep generation now: read before a registration checks that
    /// its objects exist.
    pub async fn object_sweep_generation(&self) -> Result<u64, StoreError> {
        let row = self.pool.fetch_optional("SELECT generation FROM object_sweeps WHERE id = 1", args![]).await?;
        let row = row.ok_or_else(|| StoreError::Corrupt("object_sweeps has no row".into()))?;
        Ok(unsigned(row.int("generation")?))
    }

    /// Begins a sweep's deletions: raises the generation and holds off
    /// registrations until `until_ms`. `None` while another sweep deletes.
    pub async fn begin_object_deletion(&self, until_ms: i64) -> Result<Option<u64>, StoreError> {
        let now = now_ms();
        let row = self
            .pool
            .fetch_optional(
                "UPDATE object_sweeps SET generation = generation + 1, deleting_until = $1, updated_at = $2 \
                 WHERE id = 1 AND (deleting_until IS NULL OR deleting_until <= $2) RETURNING generation",
                args![until_ms, now],
            )
            .await?;
        row.map(|r| r.int("generation").map(unsigned)).transpose()
    }

    /// Holds registrations off longer; false when the sweep's hold was lost
    /// (it ran out, or another sweep began), and it must delete no more.
    pub async fn renew_object_deletion(&self, generation: u64, until_ms: i64) -> Result<bool, StoreError> {
        let now = now_ms();
        let renewed = self
            .pool
            .execute(
                "UPDATE object_sweeps SET deleting_until = $2, updated_at = $3 \
                 WHERE id = 1 AND generation = $1 AND deleting_until > $3",
                args![signed(generation), until_ms, now],
            )
            .await?;
        Ok(renewed == 1)
    }

    /// Ends a sweep's deletions: registrations go on. The generation grows
    /// again, so one that checked its objects while the sweep deleted
    /// checks them again.
    pub async fn end_object_deletion(&self, generation: u64) -> Result<(), StoreError> {
        self.pool
            .execute(
                "UPDATE object_sweeps SET deleting_until = NULL, generation = generation + 1, updated_at = $2 \
                 WHERE id = 1 AND generation = $1",
                args![signed(generation), now_ms()],
            )
            .await?;
        Ok(())
    }

    /// The ids of every capture session.
    pub async fn capture_session_ids(&self) -> Result<Vec<SessionId>, StoreError> {
        let rows = self.pool.fetch_all("SELECT id FROM capture_sessions ORDER BY id", args![]).await?;
        rows.iter().map(|r| r.id("id")).collect()
    }

    /// Forgets the session's captures its retention policy (or the
    /// install's) no longer keeps; answers their chain positions. With
    /// `apply` false it only answers them.
    pub async fn forget_captures(
        &self,
        session_id: &SessionId,
        install: Retention,
        now_ms: i64,
        apply: bool,
    ) -> Result<Vec<u64>, StoreError> {
        let lock = self.pool.kind().for_update();
        let mut tx = self.pool.begin().await?;
        let Some(session) = tx
            .fetch_optional(
                &format!(
                    "SELECT head_n, seal_capture_n, keep_last, keep_within_ms FROM capture_sessions WHERE id = $1{lock}"
                ),
                args![session_id],
            )
            .await?
        else {
            return Ok(Vec::new());
        };
        let policy = Retention {
            keep_last: session.opt_int("keep_last")?.map(unsigned),
            keep_within_ms: session.opt_int("keep_within_ms")?.map(unsigned),
        }
        .or(install);
        let rows = tx
            .fetch_all("SELECT n, registered_at FROM captures WHERE session_id = $1 ORDER BY n", args![session_id])
            .await?;
        let captures = rows
            .iter()
            .map(|r| Ok(Registered { n: unsigned(r.int("n")?), registered_at_ms: r.int("registered_at")? }))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let head_n = unsigned(session.int("head_n")?);
        let sealed = session.opt_int("seal_capture_n")?.map(unsigned);
        // A capture a workspace is waiting to restore stays until it is restored.
        let pinned = tx
            .fetch_all(
                "SELECT p.capture_n FROM capture_restore_points p JOIN workspaces w ON w.id = p.workspace_id \
                 WHERE p.session_id = $1 AND p.applied_at IS NULL",
                args![session_id],
            )
            .await?
            .iter()
            .map(|r| Ok(unsigned(r.int("capture_n")?)))
            .collect::<Result<std::collections::BTreeSet<u64>, StoreError>>()?;
        let mut gone = retention::forgotten(&captures, head_n, sealed, policy, now_ms);
        gone.retain(|n| !pinned.contains(n));
        if !apply {
            return Ok(gone);
        }
        for n in &gone {
            tx.execute("DELETE FROM captures WHERE session_id = $1 AND n = $2", args![session_id, signed(*n)]).await?;
        }
        tx.commit().await?;
        Ok(gone)
    }

    /// Every manifest document a kept capture, a session's head or a
    /// snapshot being taken or ready names: what a sweep must keep, with
    /// everything those name.
    pub async fn live_manifests(&self) -> Result<Vec<LiveManifest>, StoreError> {
        let mut live = Vec::new();
        let rows = self
            .pool
            .fetch_all(
                "SELECT session_id, n, small_manifest AS a, bulk_manifest AS b FROM captures \
                 UNION ALL SELECT id AS session_id, NULL AS n, small_manifest AS a, bulk_manifest AS b \
                 FROM capture_sessions",
                args![],
            )
            .await?;
        for row in &rows {
            let session: SessionId = row.id("session_id")?;
            let capture_n = row.opt_int("n")?.map(unsigned);
            for column in ["a", "b"] {
                if let Some(key) = row.opt_text(column)? {
                    live.push(LiveManifest { session_id: Some(session.clone()), capture_n, key });
                }
            }
        }
        let rows = self
            .pool
            .fetch_all(
                "SELECT small_manifest AS a, bulk_manifest AS b FROM broker_snapshots WHERE state IN ($1, $2)",
                args![SnapshotState::Taking.as_str(), SnapshotState::Ready.as_str()],
            )
            .await?;
        for row in &rows {
            for column in ["a", "b"] {
                if let Some(key) = row.opt_text(column)? {
                    live.push(LiveManifest { session_id: None, capture_n: None, key });
                }
            }
        }
        live.sort_by(|a, b| (&a.key, &a.session_id, a.capture_n).cmp(&(&b.key, &b.session_id, b.capture_n)));
        live.dedup();
        Ok(live)
    }

    /// Every session's stored bytes now (a sweep reads them first).
    pub async fn stored_counts(&self) -> Result<Vec<StoredCount>, StoreError> {
        let rows = self.pool.fetch_all("SELECT id, stored_bytes FROM capture_sessions ORDER BY id", args![]).await?;
        rows.iter()
            .map(|r| Ok(StoredCount { session_id: r.id("id")?, stored_bytes: unsigned(r.int("stored_bytes")?) }))
            .collect()
    }

    /// Sets a session's stored bytes to what its kept captures need, plus
    /// what it uploaded since `counted` was read.
    pub async fn recount_stored_bytes(&self, counted: &StoredCount, need_bytes: u64) -> Result<(), StoreError> {
        self.pool
            .execute(
                "UPDATE capture_sessions SET stored_bytes = $2 + (stored_bytes - $3) WHERE id = $1",
                args![&counted.session_id, signed(need_bytes), signed(counted.stored_bytes)],
            )
            .await?;
        Ok(())
    }

    /// Counts `bytes` about to be uploaded into the session's stored bytes;
    /// false (and nothing counted) when they would take it past its quota.
    pub async fn reserve_stored_bytes(&self, session_id: &SessionId, bytes: u64) -> Result<bool, StoreError> {
        let counted = self
            .pool
            .execute(
                "UPDATE capture_sessions SET stored_bytes = stored_bytes + $2 \
                 WHERE id = $1 AND (quota_bytes IS NULL OR stored_bytes + $2 <= quota_bytes)",
                args![session_id, signed(bytes)],
            )
            .await?;
        Ok(counted == 1)
    }
}
