//! Capture on the control connection: the status a daemon reports, the
//! flush, re-plan and bind requests, and their answers. Field names and
//! meanings are the contract's (`workspaceCaptureStatusSchema` and friends).

use serde::{Deserialize, Serialize};

use crate::stamp::Origin;

/// `GET`: the daemon's [`CaptureStatus`].
pub const CAPTURE_STATUS: &str = "/capture/status";
/// `POST` a [`FlushRequest`]: a [`CaptureStatus`].
pub const CAPTURE_FLUSH: &str = "/capture/flush";
/// `POST`: a [`Replanned`].
pub const CAPTURE_REPLAN: &str = "/capture/replan";
/// `POST` a [`BindRequest`]: the live [`Binds`].
pub const BIND: &str = "/bind";

/// The two capture classes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum CaptureClass {
    /// The worktree and `.git` metadata: everything that is not bulk.
    Small,
    /// Large files and configured bulk paths.
    Bulk,
}

impl CaptureClass {
    pub const ALL: [CaptureClass; 2] = [CaptureClass::Small, CaptureClass::Bulk];

    pub fn as_str(self) -> &'static str {
        match self {
            CaptureClass::Small => "small",
            CaptureClass::Bulk => "bulk",
        }
    }
}

/// One class's snaps since the daemon started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CaptureClassSnaps))]
#[serde(rename_all = "camelCase")]
pub struct ClassSnaps {
    pub class: CaptureClass,
    pub snaps_failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_snap_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snap_failing_since_unix_ms: Option<u64>,
}

/// A capture step running past its bound.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CaptureOverdue))]
#[serde(rename_all = "camelCase")]
pub struct Overdue {
    /// Outermost first, `›`-separated.
    pub step: String,
    pub started_unix_ms: u64,
    pub running_ms: u64,
    pub bound_ms: u64,
}

/// Why a final flush is not complete (the contract's list), sent as its
/// kebab-case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IncompleteReason {
    NotFinal,
    InProgress,
    ProcessesRemain,
    SnapshotFailed,
    Unreadable,
    Fenced,
    Conflict,
    Deadline,
    ShipFailed,
    Pending,
    Internal,
    /// A name this side does not know (a newer daemon's, or a hostile
    /// one's): read as not complete, and nothing more.
    #[serde(other)]
    Unknown,
}

impl IncompleteReason {
    pub fn as_str(self) -> &'static str {
        match self {
            IncompleteReason::NotFinal => "not-final",
            IncompleteReason::InProgress => "in-progress",
            IncompleteReason::ProcessesRemain => "processes-remain",
            IncompleteReason::SnapshotFailed => "snapshot-failed",
            IncompleteReason::Unreadable => "unreadable",
            IncompleteReason::Fenced => "fenced",
            IncompleteReason::Conflict => "conflict",
            IncompleteReason::Deadline => "deadline",
            IncompleteReason::ShipFailed => "ship-failed",
            IncompleteReason::Pending => "pending",
            IncompleteReason::Internal => "internal",
            IncompleteReason::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for IncompleteReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a daemon learns of worktree changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangesFrom {
    /// Its directories are watched: a timed snap walks the worktree only
    /// after a change, or on the slow sweep.
    Kernel,
    /// Every timed snap walks the worktree.
    Walk,
    /// A name this side does not know.
    #[serde(other)]
    Unknown,
}

/// The daemon's capture status: what is saved, what waits, what fails.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = WorkspaceCaptureStatus))]
#[serde(rename_all = "camelCase")]
pub struct CaptureStatus {
    pub epoch: u64,
    pub worktree_id: String,
    /// The newest capture the registrar has registered for this worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_n: Option<u64>,
    /// Captures staged on the executor and not yet registered.
    pub pending: u64,
    pub staged_bytes: u64,
    pub uploaded_objects: u64,
    pub uploaded_bytes: u64,
    pub registered: u64,
    pub fenced: bool,
    pub paused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_snap_unix_ms: Option<u64>,
    /// How the daemon learns of worktree changes: `kernel` (its directories
    /// are watched; a timed snap walks the worktree only after a change,
    /// or on the slow sweep) or `walk` (every timed snap walks it;
    /// `walkReason` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub changes_from: Option<ChangesFrom>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_reason: Option<String>,
    /// Classes the registrar refused for the session's byte quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Vec<CaptureClass>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_bulk: Option<u64>,
    /// True only when the last FINAL flush quiesced every managed process,
    /// snapped both classes and registered everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub incomplete_reason: Option<IncompleteReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable_paths: Option<Vec<String>>,
    /// Sockets and device nodes the last snap met: not work, so not kept
    /// (and no reason for a final to be incomplete), but named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_kept_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_refused: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_refused_n: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_missing: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_refusals: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repairing: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_building: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snaps: Option<Vec<ClassSnaps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_snap_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snap_failing_since_unix_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snaps_failed: Option<u64>,
    /// Why the last attempt to ship a capture failed, while shipping
    /// fails (`no space left in the object store`, `the object store is
    /// not available`, …): the daemon tries again until it ships.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_failing_since_unix_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overdue: Option<Overdue>,
}

/// `final` (the executor is ending) or `suspend` (a checkpoint).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FlushKind {
    Final,
    #[default]
    Suspend,
}

/// A flush on the control connection.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlushRequest {
    #[serde(default)]
    pub kind: FlushKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_ms: Option<u64>,
}

/// What a re-plan did to the worktree.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = WorkspaceCaptureReplanned))]
#[serde(rename_all = "camelCase")]
pub struct Replanned {
    pub worktree_id: String,
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_n: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_capture_id: Option<String>,
    pub files_written: u64,
    pub bytes_written: u64,
    pub files_skipped: u64,
    pub bytes_skipped: u64,
    pub removed: u64,
    pub unchanged: bool,
}

/// Bind the working directory (or a bindable mount) to a subdirectory of
/// the executor's root; an empty `subpath` unbinds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BindRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_path: Option<String>,
    pub subpath: String,
}

/// One live binding.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Bind {
    pub mount_path: String,
    pub subpath: String,
}

/// The full set of live bindings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Binds {
    pub binds: Vec<Bind>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_reasons_read_and_write_the_contracts_names() {
        let names = [
            "not-final",
            "in-progress",
            "processes-remain",
            "snapshot-failed",
            "unreadable",
            "fenced",
            "conflict",
            "deadline",
            "ship-failed",
            "pending",
            "internal",
        ];
        for name in names {
            let reason: IncompleteReason = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_ne!(reason, IncompleteReason::Unknown, "{name}");
            assert_eq!((reason.as_str(), serde_json::to_value(reason).unwrap()), (name, serde_json::json!(name)));
        }
        let strange: CaptureStatus = serde_json::from_value(serde_json::json!({
            "epoch": 1, "worktreeId": "w", "pending": 0, "stagedBytes": 0, "uploadedObjects": 0, "uploadedBytes": 0,
            "registered": 0, "fenced": false, "paused": false, "complete": false,
            "incompleteReason": "a reason this side never heard of, however long",
        }))
        .unwrap();
        assert_eq!(strange.incomplete_reason, Some(IncompleteReason::Unknown), "read, and read as nothing more");
        for (name, from) in
            [("kernel", ChangesFrom::Kernel), ("walk", ChangesFrom::Walk), ("inotify?", ChangesFrom::Unknown)]
        {
            assert_eq!(serde_json::from_value::<ChangesFrom>(serde_json::json!(name)).unwrap(), from);
        }
        assert_eq!(serde_json::to_value(ChangesFrom::Kernel).unwrap(), "kernel");
    }
}
