//! Snapshots of one directory of an executor, in the capture format: each
//! class's manifest as a head document and the files' content-addressed
//! objects, in the same store as captures (so each object is stored once
//! for both). Taking one pulls from the daemon only the objects the store
//! lacks, checking each against its key; restoring one pushes the files the
//! directory lacks. Every daemon answer is bounded.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use sluice_protocol::capture::CaptureClass;
use sluice_protocol::registrar::{EntryKind, MAX_OBJECT_BYTES, Manifest, frame_header};
use sluice_protocol::snapshot::{BATCH_BYTES, ObjectsRequest, PrepareRequest, WriteBatch, WritePart};
use sluice_store::capture::ManifestHead;

use sluice_capture_store::objects::{Objects, ObjectsError};
use sluice_capture_store::registrar::{load_manifest, manifest_problem, store_owned_manifest};
use sluice_domain::ids::SnapshotId;
use sluice_executor::daemon::{DaemonClient, DaemonError};
use sluice_protocol::RefusalCode;

/// How long one call to the daemon may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// How many objects are read from the store ahead of a restore's writes.
const READ_AHEAD: usize = 4;
/// How many objects one read asks for.
const READ_BATCH: usize = 16;
/// The most file parts one write batch names.
const MAX_PARTS: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The daemon refused the directory (not absolute, not a directory,
    /// unreadable paths); the message is the daemon's, cut short.
    #[error("the directory cannot be snapshotted: {0}")]
    Directory(String),
    #[error(transparent)]
    Daemon(DaemonError),
    /// The daemon answered something a snapshot cannot hold.
    #[error("the daemon's answer is not usable: {0}")]
    Untrusted(String),
    #[error(transparent)]
    Objects(#[from] ObjectsError),
}

/// A snapshot in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub small_manifest: String,
    pub bulk_manifest: String,
    pub files: u64,
    pub bytes: u64,
}

/// What a restore wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    pub files_written: u64,
    pub bytes_written: u64,
}

fn daemon(e: DaemonError) -> SnapshotError {
    match e {
        DaemonError::Refused { code: RefusalCode::Invalid | RefusalCode::Unreadable, message } => {
            SnapshotError::Directory(message)
        }
        other => SnapshotError::Daemon(other),
    }
}

/// Scans `dir` and stores what the store lacks, with manifests of the
/// snapshot's own. A file that changes between the scan and the pull makes
/// it scan again.
pub async fn take(
    client: &DaemonClient,
    objects: &Objects,
    snapshot_id: &SnapshotId,
    dir: &str,
) -> Result<Taken, SnapshotError> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let scanned = client.snapshot_scan(dir, CALL_TIMEOUT).await.map_err(daemon)?;
        for (class, manifest) in [(CaptureClass::Small, &scanned.small), (CaptureClass::Bulk, &scanned.bulk)] {
            if let Some(problem) = manifest_problem(class, manifest) {
                return Err(SnapshotError::Untrusted(problem));
            }
        }
        let lens: HashMap<&str, u32> = scanned.objects.iter().map(|o| (o.key.as_str(), o.len)).collect();
        let keys: BTreeSet<&str> = scanned.small.object_keys().into_iter().chain(scanned.bulk.object_keys()).collect();
        if keys.iter().any(|k| lens.get(k).is_none_or(|len| *len as usize > MAX_OBJECT_BYTES)) {
            return Err(SnapshotError::Untrusted("a manifest names an object the scan did not list".into()));
        }
        let wanted: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
        let missing = objects.missing(&wanted).await?;
        match pull(client, objects, &scanned.scan, &missing, &lens).await {
            Ok(()) => {}
            Err(SnapshotError::Daemon(DaemonError::Refused { code: RefusalCode::ScanGone, .. })) if attempts < 3 => {
                continue;
            }
            Err(e) => return Err(e),
        }
        let small_manifest = store_owned_manifest(objects, &scanned.small, &format!("{snapshot_id}/small")).await?;
        let bulk_manifest = store_owned_manifest(objects, &scanned.bulk, &format!("{snapshot_id}/bulk")).await?;
        let files = [&scanned.small, &scanned.bulk]
            .iter()
            .map(|m| m.entries.iter().filter(|e| e.kind == EntryKind::File).count() as u64)
            .sum();
        let bytes = scanned.small.bytes() + scanned.bulk.bytes();
        return Ok(Taken { small_manifest, bulk_manifest, files, bytes });
    }
}

/// Pulls `keys` of a scan in batches of at most [`BATCH_BYTES`] and stores
/// each object after checking it hashes to its key.
async fn pull(
    client: &DaemonClient,
    objects: &Objects,
    scan: &str,
    keys: &[String],
    lens: &HashMap<&str, u32>,
) -> Result<(), SnapshotError> {
    let mut batches: Vec<(Vec<String>, usize)> = Vec::new();
    for key in keys {
        let len = lens[key.as_str()] as usize;
        match batches.last_mut() {
            Some((batch, bytes)) if *bytes + len <= BATCH_BYTES => {
                batch.push(key.clone());
                *bytes += len;
            }
            _ => batches.push((vec![key.clone()], len)),
        }
    }
    for (batch, bytes) in batches {
        let request = ObjectsRequest { scan: scan.to_owned(), keys: batch };
        let frames = client.snapshot_objects(&request, bytes, CALL_TIMEOUT).await.map_err(SnapshotError::Daemon)?;
        let mut rest = &frames[..];
        for key in &request.keys {
            let len = lens[key.as_str()] as usize;
            if rest.len() < 72 + len || rest[..64] != *key.as_bytes() || rest[64..72] != (len as u64).to_be_bytes() {
                return Err(SnapshotError::Untrusted("the objects answer is not the frames asked for".into()));
            }
            let bytes = frames.slice_ref(&rest[72..72 + len]);
            rest = &rest[72 + len..];
            objects.put_verified(key, bytes).await.map_err(|e| match e {
                ObjectsError::Mismatch { .. } => SnapshotError::Untrusted("an object does not hash to its key".into()),
                other => SnapshotError::Objects(other),
            })?;
        }
        if !rest.is_empty() {
            return Err(SnapshotError::Untrusted("the objects answer carries more than was asked".into()));
        }
    }
    Ok(())
}

/// Reads a snapshot's two manifests.
pub async fn manifests(objects: &Objects, small: &str, bulk: &str) -> Result<(Manifest, Manifest), ObjectsError> {
    let head = |key: &str| ManifestHead { key: key.to_owned(), depth: 0 };
    Ok((load_manifest(objects, Some(&head(small))).await?, load_manifest(objects, Some(&head(bulk))).await?))
}

/// Makes `dir` in the executor hold exactly the snapshot.
pub async fn restore(
    client: &DaemonClient,
    objects: &Objects,
    small_manifest: &str,
    bulk_manifest: &str,
    dir: &str,
) -> Result<Restored, SnapshotError> {
    let (small, bulk) = manifests(objects, small_manifest, bulk_manifest).await?;
    let prepare = PrepareRequest { dir: dir.to_owned(), small, bulk };
    let prepared = client.snapshot_prepare(&prepare, CALL_TIMEOUT).await.map_err(daemon)?;
    let write: HashSet<&sluice_protocol::names::Name> = prepared.write.iter().collect();
    let mut files: Vec<&sluice_protocol::registrar::Entry> = prepare
        .small
        .entries
        .iter()
        .chain(&prepare.bulk.entries)
        .filter(|e| e.kind == EntryKind::File && write.contains(&e.path))
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    // Every object in write order, read from the store a few ahead.
    let wanted: Vec<String> = files.iter().flat_map(|e| e.objects.iter().cloned()).collect();
    // Read in batches, so a pack's members come in one request.
    let batches: Vec<Vec<String>> = wanted.chunks(READ_BATCH).map(<[String]>::to_vec).collect();
    let mut reads = futures::stream::iter(batches)
        .map(|keys| async move {
            let read = objects.get_many(&keys).await?;
            Ok::<_, ObjectsError>(futures::stream::iter(keys.into_iter().zip(read).map(Ok::<_, ObjectsError>)))
        })
        .buffered(READ_AHEAD)
        .try_flatten();
    let mut restored = Restored { files_written: 0, bytes_written: 0 };
    let mut parts: Vec<WritePart> = Vec::new();
    let mut frames: Vec<u8> = Vec::new();
    let send = |parts: Vec<WritePart>, frames: Vec<u8>| async move {
        let batch = WriteBatch { dir: dir.to_owned(), parts };
        client.snapshot_write(&batch, &frames, CALL_TIMEOUT).await.map_err(daemon)
    };
    for entry in files.iter().copied() {
        let mut from = 0;
        for i in 0..entry.objects.len() {
            let (key, bytes) = reads.next().await.expect("one read per object")?;
            if !frames.is_empty() && (frames.len() + 72 + bytes.len() > BATCH_BYTES || parts.len() >= MAX_PARTS) {
                if i > from {
                    parts.push(WritePart { entry: entry.clone(), from, to: i });
                    from = i;
                }
                send(std::mem::take(&mut parts), std::mem::take(&mut frames)).await?;
            }
            frames.extend_from_slice(&frame_header(&key, bytes.len() as u64));
            frames.extend_from_slice(&bytes);
        }
        parts.push(WritePart { entry: entry.clone(), from, to: entry.objects.len() });
        restored.files_written += 1;
        restored.bytes_written += entry.size;
    }
    if !parts.is_empty() {
        send(parts, frames).await?;
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use sluice_protocol::registrar::{Entry, frame_header};
    use sluice_protocol::snapshot::{Scanned, ScannedObject};

    fn file(path: &str, objects: Vec<String>) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::File,
            mode: 0o644,
            size: 4,
            mtime_ms: 0,
            objects,
            target: None,
            hard_link: None,
        }
    }

    /// A daemon that answers `scanned` to a scan and `frames` to a pull.
    async fn hostile_daemon(dir: &std::path::Path, scanned: Scanned, frames: Vec<u8>) -> DaemonClient {
        let socket = dir.join("control.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let router = axum::Router::new()
            .route(sluice_protocol::snapshot::SNAPSHOT_SCAN, post(move || async move { axum::Json(scanned) }))
            .route(sluice_protocol::snapshot::SNAPSHOT_OBJECTS, post(move || async move { frames }));
        tokio::spawn(async move { axum::serve(listener, router).await });
        let token = sluice_store::Secret::new("t".repeat(32));
        DaemonClient::new(&format!("unix://{}", socket.display()), token).unwrap()
    }

    /// What a daemon answers is checked before anything is stored: forged
    /// object bytes, objects it did not list, paths outside the directory.
    #[tokio::test]
    async fn a_hostile_daemon_gets_nothing_stored() {
        let key = sluice_capture_store::objects::object_key(b"good");
        let forged = {
            let mut frames = frame_header(&key, 4).to_vec();
            frames.extend_from_slice(b"evil");
            frames
        };
        let listed = vec![ScannedObject { key: key.clone(), len: 4 }];
        let scan = |entries: Vec<Entry>, objects: Vec<ScannedObject>| Scanned {
            scan: "s".into(),
            small: Manifest { entries },
            bulk: Manifest::default(),
            objects,
        };
        let cases = [
            ("forged bytes", scan(vec![file("tree/a", vec![key.clone()])], listed.clone()), forged.clone()),
            ("unlisted object", scan(vec![file("tree/a", vec![key.clone()])], Vec::new()), forged.clone()),
            ("escaping path", scan(vec![file("tree/../../etc/passwd", vec![key.clone()])], listed.clone()), forged),
            ("extra frames", scan(vec![file("tree/a", vec![key.clone()])], listed.clone()), {
                let mut frames = frame_header(&key, 4).to_vec();
                frames.extend_from_slice(b"good");
                frames.extend_from_slice(&frame_header(&key, 4));
                frames.extend_from_slice(b"good");
                frames
            }),
        ];
        for (case, scanned, frames) in cases {
            let dir = tempfile::tempdir().unwrap();
            let db = sluice_store::testing::sqlite();
            let index = sluice_store::testing::open(&db).await;
            let objects =
                Objects::open(&sluice_capture_store::objects::ObjectStoreUrl::Local(dir.path().join("objects")), index)
                    .unwrap();
            let client = hostile_daemon(dir.path(), scanned, frames).await;
            let refused = take(&client, &objects, &SnapshotId::from("snap_x"), "/work").await.unwrap_err();
            // More than was asked for is past the answer's bound.
            let bounded = matches!(refused, SnapshotError::Daemon(DaemonError::AnswerTooLarge(_)));
            assert!(matches!(refused, SnapshotError::Untrusted(_)) || bounded, "{case}: {refused}");
            let keys = [key.clone()];
            assert_eq!(objects.missing(&keys).await.unwrap(), keys.to_vec(), "{case}: nothing stored");
        }
    }
}
