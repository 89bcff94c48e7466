//! Snapshots of one directory for the control plane, in the capture
//! format. A scan walks the directory as the workload and keeps where each
//! object's bytes are, so the control plane can pull the ones its store
//! lacks; a restore makes the directory hold exactly a snapshot, from
//! files the control plane pushes. Everything runs on the file worker.

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sluice_protocol::capture::CaptureClass;
use sluice_protocol::registrar::{EntryKind, Manifest};
use sluice_protocol::snapshot::{KEPT_SCANS, Prepared, Scanned, ScannedObject, WriteBatch};

use crate::capture::materialize::disk_path;
use crate::capture::snap::{self, ObjectRef, SeenFiles, SnapConfig, SnapError, SnapKind};

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The request itself is wrong (a relative directory, a bad batch).
    #[error("{0}")]
    Invalid(&'static str),
    #[error("the directory cannot be read")]
    Unreadable,
    #[error("{0} paths in the directory could not be read")]
    UnreadablePaths(usize),
    #[error("the scan is no longer kept; scan again")]
    UnknownScan,
    #[error("an object does not match its key")]
    Corrupt,
    #[error("the directory could not be written")]
    Io(#[from] std::io::Error),
}

type Objects = Arc<HashMap<String, ObjectRef>>;

/// The scans whose objects may still be pulled, newest last.
#[derive(Default)]
pub struct Scans {
    kept: Mutex<VecDeque<(String, Objects)>>,
}

fn absolute(dir: &str) -> Result<PathBuf, SnapshotError> {
    let path = Path::new(dir);
    if !path.is_absolute() || dir.contains('\0') {
        return Err(SnapshotError::Invalid("dir must be an absolute path"));
    }
    Ok(path.to_path_buf())
}

fn config(dir: PathBuf, bulk_threshold: u64) -> SnapConfig {
    SnapConfig { worktree: dir, bulk_threshold, bulk_paths: Vec::new() }
}

impl Scans {
    fn keep(&self, objects: Objects) -> String {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system random source failed");
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut kept = self.kept.lock().unwrap();
        kept.push_back((id.clone(), objects));
        while kept.len() > KEPT_SCANS {
            kept.pop_front();
        }
        id
    }

    fn find(&self, scan: &str) -> Option<Objects> {
        self.kept.lock().unwrap().iter().find(|(id, _)| id == scan).map(|(_, o)| o.clone())
    }
}

/// Walks `dir` (on the file worker): every path must be readable.
pub fn scan(dir: &str, bulk_threshold: u64) -> Result<snap::Snapped, SnapshotError> {
    let dir = absolute(dir)?;
    if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return Err(SnapshotError::Invalid("dir is not a directory"));
    }
    let empty = std::collections::BTreeMap::new();
    snap::snap(&config(dir, bulk_threshold), SnapKind::Final, &empty, &mut SeenFiles::default()).map_err(|e| match e {
        SnapError::Root(_) => SnapshotError::Unreadable,
        SnapError::Unreadable(n, _) => SnapshotError::UnreadablePaths(n),
    })
}

/// Keeps a scan's objects and answers what it found.
pub fn scanned(scans: &Scans, mut snapped: snap::Snapped) -> Scanned {
    let mut take = |class| snapped.manifests.remove(&class).unwrap_or_default();
    let (small, bulk): (Manifest, Manifest) = (take(CaptureClass::Small), take(CaptureClass::Bulk));
    let objects: Vec<ScannedObject> =
        snapped.objects.iter().map(|o| ScannedObject { key: o.key.clone(), len: o.len }).collect();
    let by_key = snapped.objects.into_iter().map(|o| (o.key.clone(), o)).collect();
    Scanned { scan: scans.keep(Arc::new(by_key)), small, bulk, objects }
}

/// The refs of `keys` in a kept scan, in the order asked.
pub fn refs(scans: &Scans, scan: &str, keys: &[String]) -> Result<Vec<ObjectRef>, SnapshotError> {
    let objects = scans.find(scan).ok_or(SnapshotError::UnknownScan)?;
    keys.iter().map(|k| objects.get(k).cloned().ok_or(SnapshotError::Invalid("a key the scan did not find"))).collect()
}

/// Makes `dir` exist and match the manifests in everything but file
/// contents; answers the files still to write.
pub fn prepare(dir: &str, small: &Manifest, bulk: &Manifest, bulk_threshold: u64) -> Result<Prepared, SnapshotError> {
    let dir = absolute(dir)?;
    std::fs::create_dir_all(&dir)?;
    let head = crate::capture::materialize::merged(small, bulk);
    if head.iter().any(|e| disk_path(&dir, &e.path).is_none()) {
        return Err(SnapshotError::Invalid("a manifest path is not a virtual path"));
    }
    let refs: Vec<_> = head.iter().collect();
    let work = crate::capture::materialize::prepare(&config(dir, bulk_threshold), &refs)?;
    // A snapshot's hard links are restored as copies.
    let mut write: Vec<_> = work.write.into_iter().chain(work.links).map(|e| e.path).collect();
    write.sort();
    Ok(Prepared { write })
}

/// Splits the next frame off `frames`: its key and bytes.
fn next_frame<'a>(frames: &mut &'a [u8]) -> Result<(&'a [u8], &'a [u8]), SnapshotError> {
    let truncated = SnapshotError::Invalid("the batch ends inside a frame");
    if frames.len() < 72 {
        return Err(truncated);
    }
    let len = u64::from_be_bytes(frames[64..72].try_into().expect("eight bytes")) as usize;
    if frames.len() - 72 < len {
        return Err(truncated);
    }
    let (key, bytes) = (&frames[..64], &frames[72..72 + len]);
    *frames = &frames[72 + len..];
    Ok((key, bytes))
}

/// Writes a batch of file parts: each file goes to a name beside its own
/// and is renamed into place when its last part is written, so no
/// half-written file is ever under its real name.
pub fn write(batch: &WriteBatch, mut frames: &[u8]) -> Result<(), SnapshotError> {
    let dir = absolute(&batch.dir)?;
    for part in &batch.parts {
        let entry = &part.entry;
        if entry.kind != EntryKind::File || part.from > part.to || part.to > entry.objects.len() {
            return Err(SnapshotError::Invalid("a part is not a range of a file's objects"));
        }
        let path = disk_path(&dir, &entry.path).ok_or(SnapshotError::Invalid("not a virtual path"))?;
        let name = path.file_name().ok_or(SnapshotError::Invalid("not a virtual path"))?;
        let tmp = path.with_file_name(format!(".{}.sluice-restore", name.to_string_lossy()));
        let mut file = if part.from == 0 {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let _ = std::fs::remove_file(&tmp);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .mode(0o600)
                .open(&tmp)?
        } else {
            let mut file = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW).open(&tmp)?;
            // Its length is where the part before it ended (a hole included).
            std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0))?;
            file
        };
        let mut chunks = Vec::with_capacity(part.to - part.from);
        for key in &entry.objects[part.from..part.to] {
            let (named, bytes) = next_frame(&mut frames)?;
            if named != key.as_bytes() || sluice_protocol::registrar::object_key(bytes) != *key {
                return Err(SnapshotError::Corrupt);
            }
            chunks.push(bytes);
        }
        crate::capture::materialize::write_content(&mut file, chunks, None)?;
        if part.to == entry.objects.len() {
            file.set_permissions(std::fs::Permissions::from_mode(entry.mode))?;
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(entry.mtime_ms.max(0) as u64);
            file.set_modified(when)?;
            drop(file);
            std::fs::rename(&tmp, &path)?;
        }
    }
    if !frames.is_empty() {
        return Err(SnapshotError::Invalid("the batch carries frames no part names"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::registrar::frame_header;
    use sluice_protocol::snapshot::WritePart;

    #[test]
    fn a_scanned_directory_is_restored_elsewhere_byte_for_byte_in_parts() {
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(from.path().join("src/empty")).unwrap();
        std::fs::write(from.path().join("src/a.txt"), "alpha").unwrap();
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        std::fs::write(from.path().join("big.bin"), &big).unwrap();
        std::os::unix::fs::symlink("src/a.txt", from.path().join("link")).unwrap();
        let scans = Scans::default();
        let snapped = scan(&from.path().display().to_string(), 64 << 10).unwrap();
        let answer = scanned(&scans, snapped);
        let big_entry = answer.bulk.entries.iter().find(|e| e.path == "tree/big.bin").expect("bulk");
        assert!(big_entry.objects.len() > 2, "chunked");

        let to = tempfile::tempdir().unwrap();
        let target = to.path().join("restored");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("stale.txt"), "gone after").unwrap();
        let dir = target.display().to_string();
        let prepared = prepare(&dir, &answer.small, &answer.bulk, 64 << 10).unwrap();
        assert_eq!(
            prepared.write,
            vec![
                sluice_protocol::names::Name::from("tree/big.bin"),
                sluice_protocol::names::Name::from("tree/src/a.txt")
            ]
        );
        assert!(!target.join("stale.txt").exists(), "what the snapshot lacks is removed");

        // The big file in two parts, the small one with the second.
        let mut parts = Vec::new();
        for (entry, from, to) in [(big_entry, 0, 2), (big_entry, 2, big_entry.objects.len())] {
            parts.push(WritePart { entry: entry.clone(), from, to });
        }
        let small_entry = answer.small.entries.iter().find(|e| e.path == "tree/src/a.txt").unwrap();
        parts.push(WritePart { entry: small_entry.clone(), from: 0, to: 1 });
        for (i, batch) in [&parts[..1], &parts[1..]].into_iter().enumerate() {
            let keys: Vec<String> = batch.iter().flat_map(|p| p.entry.objects[p.from..p.to].iter().cloned()).collect();
            let mut frames = Vec::new();
            for object in refs(&scans, &answer.scan, &keys).unwrap() {
                let bytes = crate::capture::read_frames(&[object]).unwrap();
                frames.extend_from_slice(&bytes);
            }
            write(&WriteBatch { dir: dir.clone(), parts: batch.to_vec() }, &frames).unwrap();
            assert_eq!(target.join("big.bin").exists(), i == 1, "in place only once whole");
        }
        assert_eq!(std::fs::read(target.join("big.bin")).unwrap(), big);
        assert_eq!(std::fs::read_to_string(target.join("src/a.txt")).unwrap(), "alpha");
        assert_eq!(std::fs::read_link(target.join("link")).unwrap(), Path::new("src/a.txt"));
        assert!(target.join("src/empty").is_dir());

        // A frame that is not the named object is refused.
        let mut forged = frame_header(&small_entry.objects[0], 5).to_vec();
        forged.extend_from_slice(b"bravo");
        let part = WritePart { entry: small_entry.clone(), from: 0, to: 1 };
        let refused = write(&WriteBatch { dir: dir.clone(), parts: vec![part] }, &forged).unwrap_err();
        assert!(matches!(refused, SnapshotError::Corrupt), "{refused}");
        assert_eq!(std::fs::read_to_string(target.join("src/a.txt")).unwrap(), "alpha", "left as it was");
        assert!(matches!(refs(&scans, "nope", &keys_of(small_entry)), Err(SnapshotError::UnknownScan)));
        assert!(matches!(scan("relative", 1), Err(SnapshotError::Invalid(_))));
    }

    fn keys_of(entry: &sluice_protocol::registrar::Entry) -> Vec<String> {
        entry.objects.clone()
    }
}
