//! The registrar channel: what a daemon says to the control plane's
//! registrar (on the socket its runtime mounts for it) to claim a capture
//! session, learn its plan, ship objects and register captures. Every call
//! carries the session token as a bearer token.
//!
//! Also the capture format both sides read: manifests of entries naming
//! content-addressed objects (lowercase hex SHA-256 of the bytes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::capture::CaptureClass;
use crate::names::Name;
use crate::stamp::Origin;

/// `POST`: claim the session (the epoch grows; older executors are fenced
/// from then on). Answers the [`Plan`].
pub const CLAIM: &str = "/claim";
/// `GET`: the [`Plan`] in force, claiming nothing.
pub const PLAN: &str = "/plan";
/// `GET`: the session's [`Lease`]: who holds it now (one row read, so a
/// daemon may ask on every status).
pub const LEASE: &str = "/lease";
/// `POST` a [`MissingRequest`]: a [`MissingAnswer`].
pub const MISSING: &str = "/objects/missing";
/// `POST` a stream of object frames (see [`frame_header`]).
pub const OBJECTS: &str = "/objects";
/// `POST` a [`FetchRequest`]: the objects as frames, in the order asked.
/// Only objects of the plan last answered to this executor are served.
pub const FETCH: &str = "/objects/fetch";
/// The most keys one [`FetchRequest`] may name.
pub const MAX_FETCH_BATCH: usize = 64;
/// `POST` a [`RegisterRequest`]: a [`Registered`].
pub const REGISTER: &str = "/captures";
/// `POST` a [`SealRequest`]: a [`Sealed`].
pub const SEAL: &str = "/seal";
/// The header naming the epoch an object upload is made under.
pub const EPOCH_HEADER: &str = "x-sluice-epoch";

/// The most bytes one object may hold: files up to this size are one
/// object, larger ones are cut into chunks no larger than this.
pub const MAX_OBJECT_BYTES: usize = 1 << 20;
/// The most keys one [`MissingRequest`] may ask about.
pub const MAX_MISSING_BATCH: usize = 4096;
/// How many missing keys a refusal names.
pub const MISSING_NAMED: usize = 20;

/// The key of an object holding `bytes`: the lowercase hex SHA-256 of them.
pub fn object_key(bytes: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    let mut key = String::with_capacity(64);
    for b in digest {
        key.push(char::from_digit(u32::from(b >> 4), 16).expect("a hex digit"));
        key.push(char::from_digit(u32::from(b & 15), 16).expect("a hex digit"));
    }
    key
}

/// Whether `key` is an object key: 64 lowercase hex digits.
pub fn is_object_key(key: &str) -> bool {
    key.len() == 64 && key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The header of one frame of an object upload: the key (64 ASCII bytes)
/// and the length (8 bytes, big-endian); the object's bytes follow.
pub fn frame_header(key: &str, len: u64) -> [u8; 72] {
    let mut header = [0u8; 72];
    header[..64].copy_from_slice(key.as_bytes());
    header[64..].copy_from_slice(&len.to_be_bytes());
    header
}

/// What an entry is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    /// A named pipe: recreated empty (what passes through one is not kept).
    Fifo,
}

/// One path of a capture.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Virtual: `tree/…`, `.git/…` or `harness/…`, as bytes.
    pub path: Name,
    pub kind: EntryKind,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
    pub size: u64,
    pub mtime_ms: i64,
    /// A file's objects in order: one for a small file, its chunks for a
    /// large one, none for an empty one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
    /// A symlink's target, as bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Name>,
    /// A file that is a hard link of another path of the capture: the path
    /// the walk met first. The entry still names its objects, so a restore
    /// that cannot link writes a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_link: Option<Name>,
}

impl Entry {
    /// An entry with no content of its own: a directory, a fifo, or a
    /// symlink (whose target is set after).
    pub fn contentless(path: Name, kind: EntryKind, mode: u32, mtime_ms: i64) -> Entry {
        Entry { path, kind, mode, size: 0, mtime_ms, objects: Vec::new(), target: None, hard_link: None }
    }
}

/// Where a virtual path lives in the worktree, relative to its root:
/// `tree/x` is `x`, `.git/x` is `.git/x` and `.git` is `.git`; other paths
/// (and any with an empty, `.` or `..` part) have no place there.
pub fn worktree_path(path: &Name) -> Option<Vec<u8>> {
    if path.as_bytes() == GIT_DIR {
        return Some(GIT_DIR.to_vec());
    }
    let (rest, git) = match path.strip_prefix(b"tree/") {
        Some(rest) => (rest, false),
        None => (path.strip_prefix(b".git/")?, true),
    };
    if rest.split(|b| *b == b'/').any(|p| p.is_empty() || p == b"." || p == b"..") {
        return None;
    }
    Some(if git { [&b".git/"[..], rest].concat() } else { rest.to_vec() })
}

/// The virtual path of the worktree's `.git` directory itself (what is in
/// it is `.git/…`).
pub const GIT_DIR: &[u8] = b".git";

/// One class's capture: its entries, sorted by path, each path once.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    pub entries: Vec<Entry>,
}

/// What turns one manifest into another.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ManifestDelta {
    /// New and changed entries, sorted by path.
    pub upserts: Vec<Entry>,
    /// Paths that are gone, sorted.
    pub removed: Vec<Name>,
}

impl ManifestDelta {
    pub fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.removed.is_empty()
    }
}

impl Manifest {
    /// The bytes of the files it names.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().filter(|e| e.kind == EntryKind::File).map(|e| e.size).sum()
    }

    /// Whether the entries are sorted by path with no path twice.
    pub fn is_canonical(&self) -> bool {
        self.entries.windows(2).all(|w| w[0].path < w[1].path)
    }

    /// Sorts the entries by path, each path once (checked first: a walk's
    /// entries are nearly always in order already).
    pub fn canonicalize(&mut self) {
        if self.is_canonical() {
            return;
        }
        self.entries.sort_by(|a, b| a.path.cmp(&b.path));
        self.entries.dedup_by(|a, b| a.path == b.path);
    }

    /// What changed from `self` to `newer` (both canonical).
    pub fn diff(&self, newer: &Manifest) -> ManifestDelta {
        let mut delta = ManifestDelta::default();
        let (mut old, mut new) = (self.entries.iter().peekable(), newer.entries.iter().peekable());
        loop {
            match (old.peek(), new.peek()) {
                (None, None) => break,
                (Some(o), None) => {
                    delta.removed.push(o.path.clone());
                    old.next();
                }
                (None, Some(n)) => {
                    delta.upserts.push((*n).clone());
                    new.next();
                }
                (Some(o), Some(n)) => match o.path.cmp(&n.path) {
                    std::cmp::Ordering::Less => {
                        delta.removed.push(o.path.clone());
                        old.next();
                    }
                    std::cmp::Ordering::Greater => {
                        delta.upserts.push((*n).clone());
                        new.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if o != n {
                            delta.upserts.push((*n).clone());
                        }
                        old.next();
                        new.next();
                    }
                },
            }
        }
        delta
    }

    /// `self` with `delta` applied.
    pub fn apply(&self, delta: &ManifestDelta) -> Manifest {
        let mut by_path: BTreeMap<&Name, &Entry> = self.entries.iter().map(|e| (&e.path, e)).collect();
        for path in &delta.removed {
            by_path.remove(path);
        }
        for entry in &delta.upserts {
            by_path.insert(&entry.path, entry);
        }
        Manifest { entries: by_path.into_values().cloned().collect() }
    }

    /// The object keys it names, each once.
    pub fn object_keys(&self) -> std::collections::BTreeSet<&str> {
        self.entries.iter().flat_map(|e| e.objects.iter().map(String::as_str)).collect()
    }
}

/// Who holds the session's lease: its epoch, and whether the asking
/// executor is the one that claimed it (else the asker is fenced).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub epoch: u64,
    pub held: bool,
}

/// The session's plan: the head capture the executor works from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub worktree_id: String,
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_n: Option<u64>,
    /// Names the head capture (`<session>/<n>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_capture_id: Option<String>,
    pub small: Manifest,
    pub bulk: Manifest,
    /// The session's byte quota, if it has one, and the bytes its head holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_bytes: Option<u64>,
    pub used_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MissingRequest {
    pub epoch: u64,
    pub keys: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MissingAnswer {
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FetchRequest {
    pub keys: Vec<String>,
}

/// A capture to register: the next chain position and the full manifest of
/// each class it captured (a class left out keeps its head). A daemon sends
/// it with borrowed manifests (`RegisterRequest<&Manifest>`, the same JSON),
/// so a large tree is not copied to be sent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterRequest<M = Manifest> {
    pub epoch: u64,
    /// The chain position this capture takes: the head's plus one.
    pub n: u64,
    pub classes: BTreeMap<CaptureClass, M>,
    pub origin: Origin,
}

/// What the registrar registered.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    /// The capture's chain position; absent when every class was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
    /// Classes refused for the session's byte quota.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<CaptureClass>,
    pub used_bytes: u64,
}

/// Why the registrar refused a call.
pub mod refusal {
    /// A newer executor claimed the session.
    pub const FENCED: &str = "fenced";
    /// The capture names objects the store lacks (`missing` names some).
    pub const MISSING_OBJECTS: &str = "missing-objects";
    /// The capture's chain position is not the head's next.
    pub const CONFLICT: &str = "conflict";
    /// The request is malformed.
    pub const INVALID: &str = "invalid";
    /// The object store or the database is not reachable now: try again.
    pub const UNAVAILABLE: &str = "unavailable";
    /// The token is not this session's.
    pub const UNAUTHENTICATED: &str = "unauthenticated";
    /// The upload would take what the session holds in the store past its
    /// byte quota: nothing of it was stored.
    pub const QUOTA: &str = "quota";
}

/// A refusal from the registrar.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RegistrarRefusal {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// A final seal: the capture that holds everything the executor made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SealRequest {
    pub epoch: u64,
    pub capture_n: u64,
    pub origin: Origin,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Sealed {
    pub capture_n: u64,
    pub epoch: u64,
    pub sealed_at_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn file(path: &str, key: &str) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::File,
            mode: 0o644,
            size: 1,
            mtime_ms: 0,
            objects: vec![key.into()],
            target: None,
            hard_link: None,
        }
    }

    #[test]
    fn a_diff_names_changes_additions_and_removals_only() {
        let old = Manifest { entries: vec![file("tree/a", "1"), file("tree/b", "2"), file("tree/c", "3")] };
        let new = Manifest { entries: vec![file("tree/a", "1"), file("tree/b", "9"), file("tree/d", "4")] };
        let delta = old.diff(&new);
        assert_eq!(delta.upserts, vec![file("tree/b", "9"), file("tree/d", "4")]);
        assert_eq!(delta.removed, vec![Name::from("tree/c")]);
        assert_eq!(old.apply(&delta), new);
        assert!(new.diff(&new).is_empty());
        let mut mode_only = new.clone();
        mode_only.entries[0].mode = 0o755;
        assert_eq!(new.diff(&mode_only).upserts.len(), 1, "a mode change is a change");
    }

    #[test]
    fn object_keys_are_lowercase_sha256_hex() {
        assert!(is_object_key(&"ab".repeat(32)));
        assert!(!is_object_key(&"AB".repeat(32)));
        assert!(!is_object_key(&"ab".repeat(31)));
        assert!(!is_object_key(&format!("../{}", "a".repeat(61))));
        let header = frame_header(&"0f".repeat(32), 258);
        assert_eq!(&header[64..], &[0, 0, 0, 0, 0, 0, 1, 2]);
    }

    fn any_manifest() -> impl Strategy<Value = Manifest> {
        prop::collection::btree_map("[a-e]{1,2}", 0u8..3, 0..12).prop_map(|files| Manifest {
            entries: files.into_iter().map(|(p, k)| file(&format!("tree/{p}"), &k.to_string())).collect(),
        })
    }

    proptest! {
        #[test]
        fn applying_a_diff_gives_the_newer_manifest(old in any_manifest(), new in any_manifest()) {
            let delta = old.diff(&new);
            prop_assert_eq!(old.apply(&delta), new.clone());
            prop_assert!(delta.upserts.iter().all(|e| !old.entries.contains(e)), "unchanged entries are not repeated");
        }
    }
}
