//! Capture sessions, the registrar's durable state: a worktree's chain of
//! registered captures, the lease epoch that fences older executors, the
//! byte quota and the final seal. A session's token exists only as a keyed
//! hash; manifests live in the object store and are named here by key.
//!
//! Every change (claim, register, seal) is one transaction that checks the
//! epoch it was made under, so an executor fenced by a newer claim changes
//! nothing, whatever it sends.

use sluice_protocol::Origin;
use sluice_protocol::capture::CaptureClass;

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{DbRow, Tx, args};
use crate::error::StoreError;
use crate::event_log::append_sluice_event;
use crate::model::{ConflictCode, Refusal, SluiceEventType, WorkspaceStatus};
use crate::seal::{Secret, new_token};
use sluice_domain::event_data;
use sluice_domain::feed::NewSluiceEvent;
use sluice_domain::ids::{LaunchId, OwnerId, RunId, SessionId, WorkspaceId};
pub use sluice_domain::retention::Retention;

/// How many of the newest captures a session read lists.
pub const LISTED_CAPTURES: i64 = 100;

/// A session as its owner reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureSessionView {
    pub session: CaptureSession,
    /// The newest captures, in chain order.
    pub captures: Vec<CaptureRecord>,
}

/// A session's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSession {
    pub id: SessionId,
    pub owner_user_id: OwnerId,
    pub worktree_id: String,
    pub epoch: u64,
    /// 0 while nothing is registered.
    pub head_n: u64,
    pub quota_bytes: Option<u64>,
    /// The bytes of the files the head names.
    pub used_bytes: u64,
    /// The bytes the session's kept captures hold in the object store, as
    /// of the last sweep, and what it uploaded since.
    pub stored_bytes: u64,
    /// The session's own retention rules (none: the install's).
    pub retention: Retention,
    /// Each class's head manifest document and how many deltas deep it is.
    pub small: Option<ManifestHead>,
    pub bulk: Option<ManifestHead>,
    /// The executor that holds the current epoch.
    pub claimed_run_id: Option<RunId>,
    pub final_seal: Option<FinalSeal>,
    pub created_at: i64,
    /// The session and capture it was branched from (a fork), if it was.
    pub branched_from: Option<(SessionId, u64)>,
}

impl CaptureSession {
    pub fn head(&self, class: CaptureClass) -> Option<&ManifestHead> {
        match class {
            CaptureClass::Small => self.small.as_ref(),
            CaptureClass::Bulk => self.bulk.as_ref(),
        }
    }
}

/// A class's head manifest: the document's object key and its delta depth
/// (0: a full manifest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestHead {
    pub key: String,
    pub depth: u64,
}

/// One registered capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureRecord {
    pub n: u64,
    pub epoch: u64,
    pub launch: LaunchId,
    pub run_id: RunId,
    pub registered_at: i64,
    pub classes: Vec<CaptureClass>,
    /// The bytes of the files its classes hold.
    pub bytes: u64,
    pub origin: Option<Origin>,
    /// Absent for a capture registered before they were counted.
    pub counts: Option<CaptureCounts>,
    /// The earlier capture whose tree this one restored (a workspace
    /// created at `spec.source.captureN`).
    pub restored_from: Option<u64>,
}

/// What a capture holds and changed since the one before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureCounts {
    /// The files of its whole tree (both classes).
    pub files: u64,
    pub added: u64,
    pub changed: u64,
    pub removed: u64,
}

/// The capture a FINAL flush sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalSeal {
    pub capture_n: u64,
    pub epoch: u64,
    pub executor_id: RunId,
    pub launch_id: LaunchId,
    pub sealed_at: i64,
    pub origin: Origin,
}

/// A capture to record: what the registrar accepted of a register request.
#[derive(Debug, Clone)]
pub struct NewCapture {
    pub epoch: u64,
    pub n: u64,
    pub run_id: RunId,
    pub launch: LaunchId,
    /// The classes registered, each with its new head.
    pub classes: Vec<(CaptureClass, ManifestHead)>,
    /// The capture's bytes, and the session's bytes with it.
    pub bytes: u64,
    pub used_bytes: u64,
    pub origin: Origin,
    /// The object sweep generation read before its objects were checked.
    pub sweep_generation: u64,
    pub counts: CaptureCounts,
}

const SESSION_COLUMNS: &str = "id, owner_user_id, worktree_id, epoch, head_n, quota_bytes, used_bytes, \
    stored_bytes, keep_last, keep_within_ms, small_manifest, small_depth, bulk_manifest, bulk_depth, claimed_run_id, seal_capture_n, seal_epoch, \
    seal_executor_id, seal_launch_id, seal_at, seal_origin, created_at, branched_from_session, branched_from_n";

fn unsigned(row: &DbRow, column: &str) -> Result<u64, StoreError> {
    u64::try_from(row.int(column)?).map_err(|_| StoreError::Corrupt(format!("{column} is negative")))
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn head_from(row: &DbRow, key: &str, depth: &str) -> Result<Option<ManifestHead>, StoreError> {
    Ok(match row.opt_text(key)? {
        Some(key) => Some(ManifestHead { key, depth: unsigned(row, depth)? }),
        None => None,
    })
}

fn session_from_row(row: &DbRow) -> Result<CaptureSession, StoreError> {
    let final_seal = match row.opt_int("seal_capture_n")? {
        Some(n) => Some(FinalSeal {
            capture_n: n as u64,
            epoch: unsigned(row, "seal_epoch")?,
            executor_id: row.id("seal_executor_id")?,
            launch_id: row.id("seal_launch_id")?,
            sealed_at: row.int("seal_at")?,
            origin: serde_json::from_str(&row.text("seal_origin")?)
                .map_err(|_| StoreError::Corrupt("capture_sessions.seal_origin".into()))?,
        }),
        None => None,
    };
    Ok(CaptureSession {
        id: row.id("id")?,
        owner_user_id: row.id("owner_user_id")?,
        worktree_id: row.text("worktree_id")?,
        epoch: unsigned(row, "epoch")?,
        head_n: unsigned(row, "head_n")?,
        quota_bytes: row.opt_int("quota_bytes")?.map(|q| q as u64),
        used_bytes: unsigned(row, "used_bytes")?,
        stored_bytes: unsigned(row, "stored_bytes")?,
        retention: Retention {
            keep_last: row.opt_int("keep_last")?.map(|n| n.max(0) as u64),
            keep_within_ms: row.opt_int("keep_within_ms")?.map(|n| n.max(0) as u64),
        },
        small: head_from(row, "small_manifest", "small_depth")?,
        bulk: head_from(row, "bulk_manifest", "bulk_depth")?,
        claimed_run_id: row.opt_id("claimed_run_id")?,
        final_seal,
        created_at: row.int("created_at")?,
        branched_from: match row.opt_text("branched_from_session")? {
            Some(session) => Some((SessionId::from(session), unsigned(row, "branched_from_n")?)),
            None => None,
        },
    })
}

fn capture_from_row(row: &DbRow) -> Result<CaptureRecord, StoreError> {
    let classes: Vec<CaptureClass> =
        serde_json::from_str(&row.text("classes")?).map_err(|_| StoreError::Corrupt("captures.classes".into()))?;
    Ok(CaptureRecord {
        n: unsigned(row, "n")?,
        epoch: unsigned(row, "epoch")?,
        launch: row.id("launch")?,
        run_id: row.id("run_id")?,
        registered_at: row.int("registered_at")?,
        classes,
        bytes: unsigned(row, "bytes")?,
        origin: row.opt_text("origin")?.and_then(|o| serde_json::from_str(&o).ok()),
        counts: match row.opt_int("files")? {
            Some(files) => Some(CaptureCounts {
                files: files.max(0) as u64,
                added: unsigned(row, "added")?,
                changed: unsigned(row, "changed")?,
                removed: unsigned(row, "removed")?,
            }),
            None => None,
        },
        restored_from: row.opt_int("restored_from")?.map(|n| n.max(0) as u64),
    })
}

const CAPTURE_COLUMNS: &str =
    "n, epoch, launch, run_id, registered_at, classes, bytes, origin, files, added, changed, removed, restored_from";

/// What a claim restores in place of the head: the tree of an earlier
/// capture, registered as the session's next capture under the new epoch.
#[derive(Debug, Clone)]
pub struct Rewind {
    /// The capture restored.
    pub point: u64,
    /// The head the rest was worked out against: a claim that finds
    /// another is refused, to be worked out again.
    pub expected_head: u64,
    /// The point's manifests; `None` when the point is the head (nothing
    /// to register).
    pub tree: Option<RewoundTree>,
}

/// The restored point's tree as a capture.
#[derive(Debug, Clone)]
pub struct RewoundTree {
    pub small: Option<ManifestHead>,
    pub bulk: Option<ManifestHead>,
    pub bytes: u64,
    pub counts: CaptureCounts,
    pub origin: Origin,
}

/// Records the capture a new workspace's first executor restores, inside
/// the create's transaction.
pub(crate) async fn insert_restore_point(
    tx: &mut Tx,
    workspace_id: &WorkspaceId,
    session_id: &SessionId,
    point: u64,
    now: i64,
) -> Result<(), StoreError> {
    // Taking the session's row first orders this create with a collection
    // forgetting captures of it (which takes the row too): the point is
    // either seen pinned or found forgotten here.
    let lock = tx.kind().for_update();
    tx.fetch_optional(&format!("SELECT id FROM capture_sessions WHERE id = $1{lock}"), args![session_id]).await?;
    let inserted = tx
        .execute(
            "INSERT INTO capture_restore_points (workspace_id, session_id, capture_n, created_at) \
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM captures WHERE session_id = $2 AND n = $3)",
            args![workspace_id, session_id, signed(point), now],
        )
        .await?;
    if inserted == 0 {
        return Err(Refusal {
            message: format!("spec.source.captureN: the session keeps no capture {point}"),
            code: ConflictCode::CaptureNotKept,
        }
        .into());
    }
    Ok(())
}

fn fenced(epoch: u64, current: u64) -> StoreError {
    Refusal {
        message: format!("epoch {epoch} was fenced: the session was claimed again (epoch {current})"),
        code: ConflictCode::Fenced,
    }
    .into()
}

/// Applies a workspace's restore point as its first claim takes the
/// session: the point's tree registered as the next capture, at the epoch
/// the claim is about to take. A point already applied (a racing claim of
/// the same workspace) is left alone.
async fn apply_rewind(
    tx: &mut Tx,
    session_id: &SessionId,
    run_id: &RunId,
    launch: &LaunchId,
    rewind: &Rewind,
    now: i64,
) -> Result<(), StoreError> {
    let taken = tx
        .execute(
            "UPDATE capture_restore_points SET applied_at = $1 WHERE applied_at IS NULL AND session_id = $2 \
             AND workspace_id = (SELECT workspace_id FROM runs WHERE id = $3)",
            args![now, session_id, run_id],
        )
        .await?;
    if taken == 0 {
        return Ok(());
    }
    let row = tx
        .fetch_optional("SELECT epoch, head_n FROM capture_sessions WHERE id = $1", args![session_id])
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("capture session {session_id} does not exist")))?;
    let head_n = unsigned(&row, "head_n")?;
    if head_n != rewind.expected_head {
        return Err(Refusal {
            message: format!("the head moved to {head_n} while capture {} was being restored", rewind.point),
            code: ConflictCode::HeadMoved,
        }
        .into());
    }
    let Some(tree) = &rewind.tree else { return Ok(()) };
    let (n, epoch) = (head_n + 1, unsigned(&row, "epoch")? + 1);
    let classes: Vec<CaptureClass> = CaptureClass::ALL
        .into_iter()
        .filter(|c| match c {
            CaptureClass::Small => tree.small.is_some(),
            CaptureClass::Bulk => tree.bulk.is_some(),
        })
        .collect();
    let origin = serde_json::to_string(&tree.origin).map_err(|_| StoreError::Corrupt("origin".into()))?;
    let key = |h: &Option<ManifestHead>| h.as_ref().map(|h| h.key.clone());
    let depth = |h: &Option<ManifestHead>| h.as_ref().map_or(0, |h| signed(h.depth));
    tx.execute(
        "INSERT INTO captures (session_id, n, epoch, run_id, launch, classes, bytes, small_manifest, bulk_manifest, \
         origin, registered_at, files, added, changed, removed, restored_from) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        args![
            session_id,
            signed(n),
            signed(epoch),
            run_id,
            launch,
            serde_json::json!(classes).to_string(),
            signed(tree.bytes),
            key(&tree.small),
            key(&tree.bulk),
            origin,
            now,
            signed(tree.counts.files),
            signed(tree.counts.added),
            signed(tree.counts.changed),
            signed(tree.counts.removed),
            signed(rewind.point)
        ],
    )
    .await?;
    tx.execute(
        "UPDATE capture_sessions SET head_n = $2, used_bytes = $3, small_manifest = $4, small_depth = $5, \
         bulk_manifest = $6, bulk_depth = $7, updated_at = $8 WHERE id = $1",
        args![
            session_id,
            signed(n),
            signed(tree.bytes),
            key(&tree.small),
            depth(&tree.small),
            key(&tree.bulk),
            depth(&tree.bulk),
            now
        ],
    )
    .await?;
    Ok(())
}

/// The session's head, read inside `tx`, when `run_id` holds `epoch`, the
/// session's current one; otherwise the write is fenced.
async fn held_head(tx: &mut Tx, session_id: &SessionId, epoch: u64, run_id: &RunId) -> Result<u64, StoreError> {
    let row = tx
        .fetch_optional("SELECT epoch, head_n, claimed_run_id FROM capture_sessions WHERE id = $1", args![session_id])
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("capture session {session_id} does not exist")))?;
    let current = unsigned(&row, "epoch")?;
    if epoch != current || row.opt_text("claimed_run_id")?.as_deref() != Some(run_id) {
        return Err(fenced(epoch, current));
    }
    unsigned(&row, "head_n")
}

impl Store {
    /// Creates a session and its token, which is returned once and kept
    /// only as a keyed hash.
    pub async fn create_capture_session(
        &self,
        owner: &OwnerId,
        quota_bytes: Option<u64>,
        retention: Retention,
    ) -> Result<(CaptureSession, Secret<String>), StoreError> {
        let token = new_token();
        let token = Secret::new(format!("slcap_{}", token.expose()));
        let id = SessionId::from(new_id("cs"));
        let worktree_id = new_id("wt");
        let now = now_ms();
        self.pool
            .execute(
                "INSERT INTO capture_sessions (id, owner_user_id, worktree_id, token_hash, quota_bytes, \
                 keep_last, keep_within_ms, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
                args![
                    &id,
                    owner,
                    &worktree_id,
                    self.capture_token_hash(token.expose()),
                    quota_bytes.map(signed),
                    retention.keep_last.map(signed),
                    retention.keep_within_ms.map(signed),
                    now
                ],
            )
            .await?;
        let session = self.capture_session(&id).await?.ok_or_else(|| StoreError::Corrupt("session vanished".into()))?;
        Ok((session, token))
    }

    /// Branches `count` new sessions of the owner from capture `n` of
    /// `source` (its tree as `point` resolved it): each starts with one
    /// capture naming the same manifest documents, so nothing is copied,
    /// and keeps the source's quota and retention. All or none, in one
    /// transaction that orders with a collection forgetting the capture
    /// (both take the source's row): the capture is either still kept and
    /// named again, or found forgotten and refused. Answers each session
    /// with its token, shown once.
    pub async fn branch_capture_sessions(
        &self,
        owner: &OwnerId,
        source: &SessionId,
        n: u64,
        point: &RewoundTree,
        count: usize,
    ) -> Result<Vec<(CaptureSession, Secret<String>)>, StoreError> {
        let lock = self.pool.kind().for_update();
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let found = tx
            .fetch_optional(
                &format!("SELECT quota_bytes, keep_last, keep_within_ms FROM capture_sessions WHERE id = $1 AND owner_user_id = $2{lock}"),
                args![source, owner],
            )
            .await?;
        let kept = tx
            .fetch_optional(
                "SELECT run_id, launch FROM captures WHERE session_id = $1 AND n = $2",
                args![source, signed(n)],
            )
            .await?;
        let (Some(session), Some(capture)) = (found, kept) else {
            return Err(Refusal {
                message: format!("capture session {source} keeps no capture {n}"),
                code: ConflictCode::CaptureNotKept,
            }
            .into());
        };
        let origin = serde_json::to_string(&point.origin).map_err(|_| StoreError::Corrupt("origin".into()))?;
        let key = |h: &Option<ManifestHead>| h.as_ref().map(|h| h.key.clone());
        let depth = |h: &Option<ManifestHead>| h.as_ref().map_or(0, |h| signed(h.depth));
        let classes: Vec<CaptureClass> = CaptureClass::ALL
            .into_iter()
            .filter(|c| match c {
                CaptureClass::Small => point.small.is_some(),
                CaptureClass::Bulk => point.bulk.is_some(),
            })
            .collect();
        let classes = serde_json::json!(classes).to_string();
        let mut ids = Vec::with_capacity(count);
        for _ in 0..count {
            let token = Secret::new(format!("slcap_{}", new_token().expose()));
            let id = SessionId::from(new_id("cs"));
            tx.execute(
                "INSERT INTO capture_sessions (id, owner_user_id, worktree_id, token_hash, quota_bytes, keep_last, \
                 keep_within_ms, head_n, used_bytes, stored_bytes, small_manifest, small_depth, bulk_manifest, \
                 bulk_depth, branched_from_session, branched_from_n, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $8, $9, $10, $11, $12, $13, $14, $15, $15)",
                args![
                    &id,
                    owner,
                    new_id("wt"),
                    self.capture_token_hash(token.expose()),
                    session.opt_int("quota_bytes")?,
                    session.opt_int("keep_last")?,
                    session.opt_int("keep_within_ms")?,
                    signed(point.bytes),
                    key(&point.small),
                    depth(&point.small),
                    key(&point.bulk),
                    depth(&point.bulk),
                    source,
                    signed(n),
                    now
                ],
            )
            .await?;
            tx.execute(
                "INSERT INTO captures (session_id, n, epoch, run_id, launch, classes, bytes, small_manifest, \
                 bulk_manifest, origin, registered_at, files, added, changed, removed) \
                 VALUES ($1, 1, 0, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, 0)",
                args![
                    &id,
                    capture.text("run_id")?,
                    capture.text("launch")?,
                    classes.clone(),
                    signed(point.bytes),
                    key(&point.small),
                    key(&point.bulk),
                    origin.clone(),
                    now,
                    signed(point.counts.files),
                    signed(point.counts.files)
                ],
            )
            .await?;
            ids.push((id, token));
        }
        tx.commit().await?;
        let mut branched = Vec::with_capacity(count);
        for (id, token) in ids {
            let session =
                self.capture_session(&id).await?.ok_or_else(|| StoreError::Corrupt("session vanished".into()))?;
            branched.push((session, token));
        }
        Ok(branched)
    }

    /// Deletes the owner's session with its captures and claims: its
    /// objects are collected once no kept capture of any session names them
    /// (a fork's keep what they share). Refused while a workspace that is
    /// not deleted and has not ended names it, or its executor still runs.
    /// `false` when the owner has no such session.
    pub async fn delete_capture_session(&self, owner: &OwnerId, session_id: &SessionId) -> Result<bool, StoreError> {
        let lock = self.pool.kind().for_update();
        let mut tx = self.pool.begin().await?;
        let found = tx
            .fetch_optional(
                &format!("SELECT claimed_run_id FROM capture_sessions WHERE id = $1 AND owner_user_id = $2{lock}"),
                args![session_id, owner],
            )
            .await?;
        let Some(found) = found else { return Ok(false) };
        // A spec names its session as `"sessionId": "<id>"`; an id holds no quote.
        let named = format!("%\"{session_id}\"%");
        let user = tx
            .fetch_optional(
                "SELECT id FROM workspaces WHERE deleted_at IS NULL AND spec LIKE $1 \
                 AND status NOT IN ($2, $3, $4) LIMIT 1",
                args![
                    named,
                    WorkspaceStatus::Stopped.as_str(),
                    WorkspaceStatus::Failed.as_str(),
                    WorkspaceStatus::Cancelled.as_str()
                ],
            )
            .await?;
        let running = match found.opt_text("claimed_run_id")? {
            Some(run) => tx
                .fetch_optional(
                    "SELECT workspace_id FROM runs WHERE id = $1 AND runtime_adapter IS NOT NULL \
                     AND runtime_removed_at IS NULL",
                    args![run],
                )
                .await?
                .map(|r| r.text("workspace_id"))
                .transpose()?,
            None => None,
        };
        if let Some(workspace) = user.map(|r| r.text("id")).transpose()?.or(running) {
            return Err(Refusal {
                message: format!(
                    "capture session {session_id} is in use by workspace {workspace}: stop it (or let it end) first"
                ),
                code: ConflictCode::SessionInUse,
            }
            .into());
        }
        for table in ["captures", "capture_claims", "capture_restore_points"] {
            tx.execute(&format!("DELETE FROM {table} WHERE session_id = $1"), args![session_id]).await?;
        }
        tx.execute("DELETE FROM capture_sessions WHERE id = $1", args![session_id]).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The owner's workspace whose executor registered capture `n` of the
    /// session (a branch of it takes that workspace's image and spec).
    pub async fn capture_maker(
        &self,
        owner: &OwnerId,
        session_id: &SessionId,
        n: u64,
    ) -> Result<Option<crate::model::Workspace>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT r.workspace_id FROM captures c JOIN runs r ON r.id = c.run_id \
                 WHERE c.session_id = $1 AND c.n = $2",
                args![session_id, signed(n)],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let workspace_id: WorkspaceId = row.id("workspace_id")?;
        let row = self
            .pool
            .fetch_optional(
                &format!(
                    "SELECT {} FROM workspaces WHERE id = $1 AND owner_user_id = $2",
                    crate::rows::WORKSPACE_COLUMNS
                ),
                args![&workspace_id, owner],
            )
            .await?;
        row.as_ref().map(crate::rows::workspace_from_row).transpose()
    }

    fn capture_token_hash(&self, token: &str) -> String {
        self.sealer.keyed_digest(format!("capture-token/{token}").as_bytes())
    }

    /// A session by id, whoever owns it (for the registrar).
    pub async fn capture_session(&self, session_id: &SessionId) -> Result<Option<CaptureSession>, StoreError> {
        let row = self
            .pool
            .fetch_optional(&format!("SELECT {SESSION_COLUMNS} FROM capture_sessions WHERE id = $1"), args![session_id])
            .await?;
        row.map(|r| session_from_row(&r)).transpose()
    }

    /// The owner's session with its newest captures.
    pub async fn get_capture_session(
        &self,
        owner: &OwnerId,
        session_id: &SessionId,
    ) -> Result<Option<CaptureSessionView>, StoreError> {
        let Some(session) = self.capture_session(session_id).await?.filter(|s| s.owner_user_id == *owner) else {
            return Ok(None);
        };
        let rows = self
            .pool
            .fetch_all(
                &format!("SELECT {CAPTURE_COLUMNS} FROM captures WHERE session_id = $1 ORDER BY n DESC LIMIT $2"),
                args![session_id, LISTED_CAPTURES],
            )
            .await?;
        let mut captures = rows.iter().map(capture_from_row).collect::<Result<Vec<_>, _>>()?;
        captures.reverse();
        Ok(Some(CaptureSessionView { session, captures }))
    }

    /// A page of the owner's session's kept captures in chain order, from
    /// after `after`; `None` when the session is not the owner's.
    pub async fn list_captures(
        &self,
        owner: &OwnerId,
        session_id: &SessionId,
        after: u64,
        limit: u64,
    ) -> Result<Option<Vec<CaptureRecord>>, StoreError> {
        if self.capture_session(session_id).await?.is_none_or(|s| s.owner_user_id != *owner) {
            return Ok(None);
        }
        let rows = self
            .pool
            .fetch_all(
                &format!("SELECT {CAPTURE_COLUMNS} FROM captures WHERE session_id = $1 AND n > $2 ORDER BY n LIMIT $3"),
                args![session_id, signed(after), signed(limit)],
            )
            .await?;
        rows.iter().map(capture_from_row).collect::<Result<Vec<_>, _>>().map(Some)
    }

    /// The manifest documents (small, bulk) of the owner's session's kept
    /// capture `n`: `None` when the session is not the owner's, `Some(None)`
    /// when it keeps no capture `n`.
    #[allow(clippy::type_complexity)]
    pub async fn capture_manifests(
        &self,
        owner: &OwnerId,
        session_id: &SessionId,
        n: u64,
    ) -> Result<Option<Option<(Option<String>, Option<String>)>>, StoreError> {
        if self.capture_session(session_id).await?.is_none_or(|s| s.owner_user_id != *owner) {
            return Ok(None);
        }
        let row = self
            .pool
            .fetch_optional(
                "SELECT small_manifest, bulk_manifest FROM captures WHERE session_id = $1 AND n = $2",
                args![session_id, signed(n)],
            )
            .await?;
        row.map(|r| Ok((r.opt_text("small_manifest")?, r.opt_text("bulk_manifest")?))).transpose().map(Some)
    }

    /// Whether `token` is the session's token.
    pub async fn capture_token_matches(&self, session_id: &SessionId, token: &str) -> Result<bool, StoreError> {
        let row = self
            .pool
            .fetch_optional("SELECT token_hash FROM capture_sessions WHERE id = $1", args![session_id])
            .await?;
        let Some(row) = row else { return Ok(false) };
        let stored = row.text("token_hash")?;
        let presented = self.capture_token_hash(token);
        // Both are fixed-length digests of secrets; compare without an early exit.
        Ok(stored.len() == presented.len()
            && stored.bytes().zip(presented.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0)
    }

    /// The earlier capture `run_id`'s workspace was created to restore, while
    /// no executor of it has claimed the session yet.
    pub async fn pending_restore_point(&self, run_id: &RunId) -> Result<Option<u64>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT p.capture_n FROM capture_restore_points p JOIN runs r ON r.workspace_id = p.workspace_id \
                 WHERE r.id = $1 AND p.applied_at IS NULL",
                args![run_id],
            )
            .await?;
        row.map(|r| unsigned(&r, "capture_n")).transpose()
    }

    /// Claims the session for an executor: the epoch grows by one and every
    /// executor holding an older one is fenced from now on. With `rewind`
    /// (the workspace's pending restore point) the point is applied in the
    /// same transaction: its tree becomes the head, once per workspace.
    pub async fn claim_capture_session(
        &self,
        session_id: &SessionId,
        run_id: &RunId,
        launch: &LaunchId,
        rewind: Option<&Rewind>,
    ) -> Result<CaptureSession, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        refuse_unsaved_holder(&mut tx, session_id, run_id).await?;
        if let Some(rewind) = rewind {
            apply_rewind(&mut tx, session_id, run_id, launch, rewind, now).await?;
        }
        let row = tx
            .fetch_optional(
                "UPDATE capture_sessions SET epoch = epoch + 1, claimed_run_id = $2, claimed_launch = $3, \
                 updated_at = $4 WHERE id = $1 RETURNING epoch",
                args![session_id, run_id, launch, now],
            )
            .await?;
        let Some(row) = row else {
            return Err(StoreError::Corrupt(format!("capture session {session_id} does not exist")));
        };
        let epoch = row.int("epoch")?;
        tx.execute(
            "INSERT INTO capture_claims (session_id, epoch, run_id, launch, claimed_at) VALUES ($1, $2, $3, $4, $5)",
            args![session_id, epoch, run_id, launch, now],
        )
        .await?;
        let row = tx
            .fetch_one(&format!("SELECT {SESSION_COLUMNS} FROM capture_sessions WHERE id = $1"), args![session_id])
            .await?;
        tx.commit().await?;
        session_from_row(&row)
    }

    /// Records a capture at the head's next chain position, made under the
    /// session's current epoch by the executor that holds it.
    pub async fn register_capture(&self, session_id: &SessionId, capture: &NewCapture) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let head_n = held_head(&mut tx, session_id, capture.epoch, &capture.run_id).await?;
        crate::collection::check_fence(&mut tx, self.pool.kind(), capture.sweep_generation).await?;
        if capture.n != head_n + 1 {
            return Err(Refusal {
                message: format!("capture {} is not the head's next (the head is {head_n})", capture.n),
                code: ConflictCode::HeadMoved,
            }
            .into());
        }
        let head_of = |class| capture.classes.iter().find(|(c, _)| *c == class).map(|(_, h)| h);
        let (small, bulk) = (head_of(CaptureClass::Small), head_of(CaptureClass::Bulk));
        let classes: Vec<CaptureClass> = capture.classes.iter().map(|(c, _)| *c).collect();
        let origin = serde_json::to_string(&capture.origin).map_err(|_| StoreError::Corrupt("origin".into()))?;
        // Each capture names both classes' manifests (a class it did not
        // capture again is the head's), so forgetting one loses no other.
        tx.execute(
            "INSERT INTO captures (session_id, n, epoch, run_id, launch, classes, bytes, small_manifest, \
             bulk_manifest, origin, registered_at, files, added, changed, removed) SELECT $1, $2, $3, $4, $5, $6, $7, \
             COALESCE($8, small_manifest), COALESCE($9, bulk_manifest), $10, $11, $12, $13, $14, $15 \
             FROM capture_sessions WHERE id = $1",
            args![
                session_id,
                signed(capture.n),
                signed(capture.epoch),
                &capture.run_id,
                &capture.launch,
                serde_json::json!(classes).to_string(),
                signed(capture.bytes),
                small.map(|h| h.key.clone()),
                bulk.map(|h| h.key.clone()),
                origin,
                now,
                signed(capture.counts.files),
                signed(capture.counts.added),
                signed(capture.counts.changed),
                signed(capture.counts.removed)
            ],
        )
        .await?;
        tx.execute(
            "UPDATE capture_sessions SET head_n = $2, used_bytes = $3, \
             small_manifest = COALESCE($4, small_manifest), small_depth = COALESCE($5, small_depth), \
             bulk_manifest = COALESCE($6, bulk_manifest), bulk_depth = COALESCE($7, bulk_depth), \
             updated_at = $8 WHERE id = $1",
            args![
                session_id,
                signed(capture.n),
                signed(capture.used_bytes),
                small.map(|h| h.key.clone()),
                small.map(|h| signed(h.depth)),
                bulk.map(|h| h.key.clone()),
                bulk.map(|h| signed(h.depth)),
                now
            ],
        )
        .await?;
        let workspace_id = tx
            .fetch_optional("SELECT workspace_id FROM runs WHERE id = $1", args![&capture.run_id])
            .await?
            .map(|row| row.id("workspace_id"))
            .transpose()?;
        let registered = NewSluiceEvent {
            event_type: SluiceEventType::CaptureRegistered,
            workspace_id,
            attempt_id: Some(capture.run_id.clone()),
            message: format!("capture {} registered", capture.n),
            data: event_data::json(event_data::CaptureRegistered {
                session_id: session_id.as_str(),
                n: capture.n,
                bytes: capture.bytes,
                files: capture.counts.files,
                added: capture.counts.added,
                changed: capture.counts.changed,
                removed: capture.counts.removed,
            }),
        };
        append_sluice_event(&mut tx, &registered, now).await?;
        tx.commit().await
    }

    /// Records the final seal an executor made under the current epoch: its
    /// capture must be the head.
    pub async fn record_final_seal(
        &self,
        session_id: &SessionId,
        seal: &FinalSeal,
        run_id: &RunId,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        let head_n = held_head(&mut tx, session_id, seal.epoch, run_id).await?;
        if seal.capture_n != head_n {
            return Err(Refusal {
                message: format!("the seal names capture {} but the head is {head_n}", seal.capture_n),
                code: ConflictCode::HeadMoved,
            }
            .into());
        }
        let origin = serde_json::to_string(&seal.origin).map_err(|_| StoreError::Corrupt("origin".into()))?;
        tx.execute(
            "UPDATE capture_sessions SET seal_capture_n = $2, seal_epoch = $3, seal_executor_id = $4, \
             seal_launch_id = $5, seal_at = $6, seal_origin = $7, updated_at = $6 WHERE id = $1",
            args![
                session_id,
                signed(seal.capture_n),
                signed(seal.epoch),
                &seal.executor_id,
                &seal.launch_id,
                seal.sealed_at,
                origin
            ],
        )
        .await?;
        tx.commit().await
    }
}

/// A claim by another executor would fence the session's holder: refused
/// while that holder has work not confirmed saved (the domain's rule; a
/// create checked it already, but its holder may have been asked to stop
/// since). The claiming daemon tries again, and claims once the holder's
/// drain saved its work or its owner discarded it.
async fn refuse_unsaved_holder(tx: &mut Tx, session_id: &SessionId, run_id: &RunId) -> Result<(), StoreError> {
    let holder = tx
        .fetch_optional("SELECT claimed_run_id FROM capture_sessions WHERE id = $1", args![session_id])
        .await?
        .map(|row| row.opt_text("claimed_run_id"))
        .transpose()?
        .flatten()
        .filter(|holder| holder != run_id);
    let Some(holder) = holder else { return Ok(()) };
    let Some(run) = tx
        .fetch_optional(&format!("SELECT {} FROM runs WHERE id = $1", crate::rows::RUN_COLUMNS), args![holder.as_str()])
        .await?
    else {
        return Ok(());
    };
    let run = crate::rows::run_from_row(&run)?;
    let drain = tx
        .fetch_optional(
            &format!("SELECT {} FROM drains WHERE run_id = $1", crate::drains::DRAIN_COLUMNS),
            args![holder],
        )
        .await?
        .map(|row| crate::drains::drain_from_row(&row))
        .transpose()?;
    match sluice_domain::drain::unsaved_holder(Some((&run, drain.as_ref()))) {
        None => Ok(()),
        Some(unsaved) => Err(Refusal {
            message: format!(
                "the session's holder (run {} of workspace {}) is {} with work not confirmed saved",
                unsaved.run_id, unsaved.workspace_id, unsaved.state
            ),
            code: ConflictCode::SessionHasUnsavedWork,
        }
        .into()),
    }
}
