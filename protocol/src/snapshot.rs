//! Snapshots of one directory on the control connection, in the capture
//! format: a manifest per class and content-addressed objects.
//!
//! Taking one: the control plane asks the daemon to scan a directory, then
//! pulls the objects its store lacks in bounded batches (the daemon never
//! holds store credentials). Restoring one: the control plane has the
//! daemon prepare the directory, then pushes files in bounded batches.

use serde::{Deserialize, Serialize};

use crate::registrar::{Entry, Manifest};

/// `POST` a [`ScanRequest`]: a [`Scanned`].
pub const SNAPSHOT_SCAN: &str = "/snapshot/scan";
/// `POST` an [`ObjectsRequest`]: the objects as frames
/// ([`crate::registrar::frame_header`] then the bytes), in the order asked.
pub const SNAPSHOT_OBJECTS: &str = "/snapshot/objects";
/// `POST` a [`PrepareRequest`]: a [`Prepared`].
pub const SNAPSHOT_PREPARE: &str = "/snapshot/prepare";
/// `POST` a write batch: a big-endian `u32` length, a [`WriteBatch`] of that
/// many JSON bytes, then the frames of its parts' objects in order. 204.
pub const SNAPSHOT_WRITE: &str = "/snapshot/write";

/// The most object bytes one objects answer or write batch carries.
pub const BATCH_BYTES: usize = 8 << 20;
/// How many scans a daemon keeps for their objects to be pulled.
pub const KEPT_SCANS: usize = 4;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScanRequest {
    /// Absolute.
    pub dir: String,
}

/// An object a scan found: its key and length.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ScannedObject {
    pub key: String,
    pub len: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Scanned {
    /// Names the scan in [`ObjectsRequest`].
    pub scan: String,
    pub small: Manifest,
    pub bulk: Manifest,
    pub objects: Vec<ScannedObject>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectsRequest {
    pub scan: String,
    pub keys: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrepareRequest {
    pub dir: String,
    pub small: Manifest,
    pub bulk: Manifest,
}

/// The files whose contents must still be written (virtual paths).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    pub write: Vec<crate::names::Name>,
}

/// Objects `from..to` of one file; the part with `from == 0` starts the
/// file, the one with `to == objects.len()` puts it in place.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WritePart {
    pub entry: Entry,
    pub from: usize,
    pub to: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteBatch {
    pub dir: String,
    pub parts: Vec<WritePart>,
}
