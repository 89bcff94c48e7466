//! File operations on an executor's worktree, over a session
//! ([`crate::session::Open::Files`]). Paths are relative to the worktree
//! and stay in it: an absolute path, a `..`, a NUL, or a symlink that
//! leads out is refused, and the daemon resolves every path beneath the
//! worktree as the workload (its permissions, its files).
//!
//! A `read` answers [`FileHead`] as the `Started` frame's payload, then the
//! bytes as `Stdout` frames, then a `Result` frame; a `write` takes the
//! bytes as `Stdin` frames up to `StdinEof` and answers a `Result` frame
//! with the file's [`WorktreeEntry`]; the others answer one `Result`
//! frame. A refusal is a `Refused` frame with one of [`REFUSALS`]' codes.

use serde::{Deserialize, Serialize};

/// Where a file operation's paths start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilesRoot {
    /// Paths are relative to the worktree and stay beneath it.
    #[default]
    Worktree,
    /// Paths are absolute in the workload's filesystem (as the broker
    /// protocol names files), resolved as the workload would, with no
    /// `..` in them.
    Filesystem,
}

impl FilesRoot {
    pub fn is_worktree(&self) -> bool {
        *self == FilesRoot::Worktree
    }

    /// A path's components from this root (see [`path_parts`]).
    pub fn parts(self, path: &str) -> Result<Vec<&str>, (&'static str, &'static str)> {
        match self {
            FilesRoot::Worktree => path_parts(path),
            FilesRoot::Filesystem => match path.strip_prefix('/') {
                Some(rest) => path_parts(rest),
                None => Err(("invalid", "paths are absolute in the workload's filesystem")),
            },
        }
    }
}

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum FileOp {
    /// A file's bytes from `offset`, `length` of them (to its end when absent).
    Read {
        path: String,
        offset: u64,
        length: Option<u64>,
    },
    /// A file written whole: beside its place, then renamed over it.
    Write {
        path: String,
        mode: Option<u32>,
        parents: bool,
    },
    /// A directory's entries, `depth` levels down (1: its own).
    List {
        path: String,
        depth: u32,
    },
    Mkdir {
        path: String,
        parents: bool,
    },
    Move {
        from: String,
        to: String,
        overwrite: bool,
    },
    Remove {
        path: String,
        recursive: bool,
    },
    /// The directory packed as a tar archive (pax; symlinks as symlinks),
    /// its bytes as `Stdout` frames.
    Pack {
        path: String,
    },
    /// A tar archive from `Stdin` frames unpacked into the directory (made
    /// when missing): kept aside whole first, every member checked (a path
    /// out of the directory, or under a symlink of the archive, refuses it
    /// all, before anything is written), then each file put in place whole.
    Unpack {
        path: String,
    },
    /// Changes under the directory as the kernel reports them, each a JSON
    /// [`WatchEvent`] in a `Stdout` frame of its own, until the client goes.
    Watch {
        path: String,
        recursive: bool,
    },
}

/// What changed under a watched directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchKind {
    Created,
    /// A file written and closed, or its metadata changed.
    Modified,
    Removed,
    /// Moved within the watch (`from` names where it was).
    Renamed,
    /// Changes were lost (the kernel's queue, or the client's, ran over):
    /// what is there now must be read again.
    Overflow,
}

/// One change under a watched directory; paths are relative to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchEvent {
    pub kind: WatchKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default)]
    pub directory: bool,
}

/// What an unpack put in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = UnpackedArchive))]
#[serde(rename_all = "camelCase")]
pub struct Unpacked {
    pub files: u64,
    pub directories: u64,
    pub symlinks: u64,
    /// Members neither files, directories nor symlinks (devices, fifos,
    /// hard links), left out.
    pub skipped: u64,
}

/// What a read's file is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileHead {
    /// The whole file's size.
    pub size: u64,
    pub mode: u32,
    pub modified_ms: i64,
}

/// What kind of entry a path of the worktree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = WorktreeEntryKind))]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    Other,
}

/// One entry of the worktree: its path (from the listed directory, or the
/// worktree for a written file), or `nameHex` (hex of its bytes) where
/// that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WorktreeEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_hex: Option<String>,
    pub kind: EntryKind,
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Modified, in milliseconds since the epoch.
    pub modified_ms: i64,
}

/// A directory's entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = FileListing))]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    pub entries: Vec<WorktreeEntry>,
    /// More entries were there than one listing holds (10,000).
    pub truncated: bool,
}

/// The entries one listing holds at most.
pub const MAX_LISTED: usize = 10_000;

/// The deepest a listing goes.
pub const MAX_DEPTH: u32 = 16;

/// A path's components within the worktree, or why it cannot be one (the
/// refusal's code and words): no NUL, not absolute, no `..`; `.` and empty
/// components are dropped (none at all is the worktree itself).
pub fn path_parts(path: &str) -> Result<Vec<&str>, (&'static str, &'static str)> {
    if path.contains('\0') {
        return Err(("invalid", "a path holds no NUL"));
    }
    if path.starts_with('/') {
        return Err(("outside-worktree", "paths are relative to the worktree, not absolute"));
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(("outside-worktree", "a path may not climb out with `..`")),
            name => parts.push(name),
        }
    }
    Ok(parts)
}

/// The codes a file operation is refused with.
pub const REFUSALS: &[&str] = &[
    "outside-worktree",
    "not-found",
    "not-a-file",
    "not-a-directory",
    "is-a-directory",
    "exists",
    "not-empty",
    "permission-denied",
    "invalid",
    "finalized",
    "failed",
];
