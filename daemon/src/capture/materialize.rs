//! Materializing a plan's head into the worktree: byte for byte (contents,
//! modes, symlinks, empty directories), writing only what differs from
//! what is on disk and removing what the head lacks. File work runs on the
//! file worker (as the workload, so everything written is the workload's).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use futures::StreamExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sluice_protocol::capture::{CaptureClass, Replanned};
use sluice_protocol::names::Name;
use sluice_protocol::registrar::{Entry, EntryKind, MAX_FETCH_BATCH, Manifest, Plan};

use super::registrar::{RegistrarClient, RegistrarError};
use super::snap::{SnapConfig, SnapKind, snap};
use crate::workload::FsWorker;

#[derive(Debug, thiserror::Error)]
pub enum MaterializeError {
    #[error(transparent)]
    Registrar(#[from] RegistrarError),
    #[error("the worktree: {0}")]
    Io(#[from] std::io::Error),
    #[error("object {0} does not hash to its key")]
    Corrupt(String),
}

/// Where a virtual path lives under the worktree (its name's bytes as they
/// are: Linux names need not be UTF-8).
pub fn disk_path(worktree: &Path, vpath: &Name) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let rest =
        vpath.strip_prefix(b"tree/").map(|r| (r, false)).or_else(|| vpath.strip_prefix(b".git/").map(|r| (r, true)));
    let (rest, git) = rest?;
    if rest.split(|b| *b == b'/').any(|p| p.is_empty() || p == b"." || p == b"..") {
        return None;
    }
    let rest = std::ffi::OsStr::from_bytes(rest);
    Some(if git { worktree.join(".git").join(rest) } else { worktree.join(rest) })
}

/// A symlink's target as the file system takes it.
fn target_path(target: Option<&Name>) -> &std::ffi::OsStr {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(target.map_or(&[][..], Name::as_bytes))
}

/// Plan for the disk: what to write, what is already there, what to remove.
pub(crate) struct Work {
    /// Files to write, in path order.
    pub(crate) write: Vec<Entry>,
    skipped_files: u64,
    skipped_bytes: u64,
    removed: u64,
}

/// Compares the head with the disk (reading files whose content must be
/// checked), removes what the head lacks, and makes directories and
/// symlinks. Files to write are returned.
pub(crate) fn prepare(config: &SnapConfig, head: &[&Entry]) -> std::io::Result<Work> {
    let worktree = &config.worktree;
    let on_disk = match snap(config, SnapKind::Automatic, &BTreeMap::new(), &mut super::snap::SeenFiles::default()) {
        Ok(s) => s.manifests,
        Err(e) => return Err(std::io::Error::other(e.to_string())),
    };
    let disk: HashMap<&Name, &Entry> = on_disk.values().flat_map(|m| m.entries.iter()).map(|e| (&e.path, e)).collect();
    let wanted: BTreeSet<&Name> = head.iter().map(|e| &e.path).collect();
    let mut work = Work { write: Vec::new(), skipped_files: 0, skipped_bytes: 0, removed: 0 };
    // Deepest first, so a directory is emptied before it goes.
    let mut gone: Vec<&&Entry> = disk.values().filter(|e| !wanted.contains(&e.path)).collect();
    gone.sort_by(|a, b| b.path.cmp(&a.path));
    for entry in gone {
        let Some(path) = disk_path(worktree, &entry.path) else { continue };
        let removed = match entry.kind {
            EntryKind::Dir => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        match removed {
            Ok(()) => work.removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    for entry in head {
        let Some(path) = disk_path(worktree, &entry.path) else { continue };
        let present = disk.get(&entry.path);
        let same_kind = present.is_some_and(|p| p.kind == entry.kind);
        if present.is_some() && !same_kind {
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        }
        match entry.kind {
            EntryKind::Dir => {
                if !same_kind {
                    std::fs::create_dir_all(&path)?;
                }
                if present.is_none_or(|p| p.mode != entry.mode) {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(entry.mode))?;
                }
            }
            EntryKind::Symlink => {
                if !same_kind || present.and_then(|p| p.target.as_ref()) != entry.target.as_ref() {
                    let _ = std::fs::remove_file(&path);
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    std::os::unix::fs::symlink(target_path(entry.target.as_ref()), &path)?;
                }
            }
            EntryKind::File => {
                let same_content =
                    present.is_some_and(|p| same_kind && p.size == entry.size && p.objects == entry.objects);
                if same_content {
                    let p = present.expect("present");
                    if p.mode != entry.mode {
                        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(entry.mode))?;
                    }
                    work.skipped_files += 1;
                    work.skipped_bytes += entry.size;
                } else {
                    work.write.push((*entry).clone());
                }
            }
        }
    }
    Ok(work)
}

/// Writes one file: straight to its place when nothing is there (a
/// restore), otherwise to a temporary name beside it and renamed over the
/// old one, so the workload never sees a half-written file. Mode and mtime
/// are the entry's.
fn write_file(worktree: &Path, entry: &Entry, chunks: &[bytes::Bytes]) -> std::io::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = disk_path(worktree, &entry.path).ok_or_else(|| std::io::Error::other("not a worktree path"))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let fresh = std::fs::symlink_metadata(&path).is_err();
    let target = if fresh {
        path.clone()
    } else {
        let mut name = std::ffi::OsString::from(".");
        name.push(path.file_name().unwrap_or_default());
        name.push(".sluice-restore");
        path.with_file_name(name)
    };
    let _ = (!fresh).then(|| std::fs::remove_file(&target));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(entry.mode & 0o777)
        .open(&target)?;
    let mut written = 0u64;
    for chunk in chunks {
        file.write_all(chunk)?;
        written += chunk.len() as u64;
    }
    file.set_permissions(std::fs::Permissions::from_mode(entry.mode))?;
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(entry.mtime_ms.max(0) as u64);
    file.set_modified(when)?;
    drop(file);
    if !fresh {
        std::fs::rename(&target, &path)?;
    }
    Ok(written)
}

/// How many fetches run ahead of the writes.
const FETCHES_AHEAD: usize = 4;

/// Makes the worktree hold exactly the plan's head.
pub async fn materialize(
    client: &RegistrarClient,
    fs: &FsWorker,
    config: &SnapConfig,
    plan: &Plan,
) -> Result<Replanned, MaterializeError> {
    let head: Vec<Entry> = merged(&plan.small, &plan.bulk);
    let prepared = {
        let (config, head) = (config.clone(), head.clone());
        fs.run(move || {
            let refs: Vec<&Entry> = head.iter().collect();
            prepare(&config, &refs)
        })
        .await??
    };
    // Batches of whole files naming at most MAX_FETCH_BATCH objects (a file
    // with more is a batch of its own), fetched ahead of the writes.
    let mut batches: Vec<Vec<Entry>> = Vec::new();
    let mut keys_in_batch = 0usize;
    for entry in prepared.write {
        if batches.is_empty() || keys_in_batch + entry.objects.len() > MAX_FETCH_BATCH {
            batches.push(Vec::new());
            keys_in_batch = 0;
        }
        keys_in_batch += entry.objects.len();
        batches.last_mut().expect("a batch").push(entry);
    }
    let fetches = batches.into_iter().map(|files| {
        let client = client.clone();
        tokio::spawn(async move {
            let mut keys: Vec<String> = files.iter().flat_map(|f| f.objects.iter().cloned()).collect();
            keys.sort();
            keys.dedup();
            fetch_all(&client, keys).await.map(|fetched| (files, fetched))
        })
    });
    let mut fetched = futures::stream::iter(fetches).buffered(FETCHES_AHEAD);
    let mut written_files = 0u64;
    let mut written_bytes = 0u64;
    while let Some(batch) = fetched.next().await {
        let (files, objects) = batch.map_err(|e| MaterializeError::Io(std::io::Error::other(e.to_string())))??;
        let worktree = config.worktree.clone();
        let (files_done, bytes_done) = fs
            .run(move || -> Result<(u64, u64), MaterializeError> {
                let (mut n, mut b) = (0, 0);
                for entry in &files {
                    let chunks: Vec<bytes::Bytes> =
                        entry.objects.iter().map(|k| objects.get(k).cloned().unwrap_or_default()).collect();
                    b += write_file(&worktree, entry, &chunks)?;
                    n += 1;
                }
                Ok((n, b))
            })
            .await??;
        written_files += files_done;
        written_bytes += bytes_done;
    }
    Ok(Replanned {
        worktree_id: plan.worktree_id.clone(),
        epoch: plan.epoch,
        head_n: plan.head_n,
        head_capture_id: plan.head_capture_id.clone(),
        files_written: written_files,
        bytes_written: written_bytes,
        files_skipped: prepared.skipped_files,
        bytes_skipped: prepared.skipped_bytes,
        removed: prepared.removed,
        unchanged: false,
    })
}

/// Fetches `keys` (at most one batch, or more in turns), checking each
/// object against its key.
async fn fetch_all(
    client: &RegistrarClient,
    keys: Vec<String>,
) -> Result<HashMap<String, bytes::Bytes>, MaterializeError> {
    let mut out = HashMap::new();
    for batch in keys.chunks(MAX_FETCH_BATCH) {
        for (key, bytes) in client.fetch(batch.to_vec()).await? {
            if super::snap::key_of(&bytes) != key {
                return Err(MaterializeError::Corrupt(key));
            }
            out.insert(key, bytes);
        }
    }
    Ok(out)
}

/// Both classes' entries in one list sorted by path.
pub fn merged(small: &Manifest, bulk: &Manifest) -> Vec<Entry> {
    let mut all: Vec<Entry> = small.entries.iter().chain(bulk.entries.iter()).cloned().collect();
    all.sort_by(|a, b| a.path.cmp(&b.path));
    all
}

/// The manifests of a plan, by class.
pub fn plan_manifests(plan: &Plan) -> BTreeMap<CaptureClass, Manifest> {
    BTreeMap::from([(CaptureClass::Small, plan.small.clone()), (CaptureClass::Bulk, plan.bulk.clone())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    fn config(dir: &Path) -> SnapConfig {
        SnapConfig { worktree: dir.to_path_buf(), bulk_threshold: 4 << 20, bulk_paths: Vec::new() }
    }

    /// Names are bytes: a file, a directory and a symlink target that are
    /// not UTF-8 are captured (a final snap has nothing unreadable) and
    /// materialized into another worktree exactly.
    #[test]
    fn names_that_are_not_utf8_are_captured_and_put_back_exactly() {
        let from = tempfile::tempdir().unwrap();
        let name = |bytes: &[u8]| std::ffi::OsStr::from_bytes(bytes).to_owned();
        std::fs::create_dir(from.path().join(name(b"dir\xfe"))).unwrap();
        std::fs::write(from.path().join(name(b"dir\xfe")).join(name(b"bad\xffname")), "a").unwrap();
        std::fs::write(from.path().join("plain.txt"), "b").unwrap();
        std::os::unix::fs::symlink(name(b"to\xfdx"), from.path().join("link")).unwrap();
        let snapped = snap(
            &config(from.path()),
            SnapKind::Final,
            &BTreeMap::new(),
            &mut super::super::snap::SeenFiles::default(),
        )
        .expect("a final snap: nothing unreadable");
        let small = &snapped.manifests[&CaptureClass::Small];
        let paths: Vec<&[u8]> = small.entries.iter().map(|e| e.path.as_bytes()).collect();
        assert_eq!(paths, [&b"tree/dir\xfe"[..], b"tree/dir\xfe/bad\xffname", b"tree/link", b"tree/plain.txt"]);
        let link = small.entries.iter().find(|e| e.path == "tree/link").unwrap();
        assert_eq!(link.target.as_ref().unwrap().as_bytes(), b"to\xfdx");
        // Through the wire and back.
        let wire: Manifest = serde_json::from_str(&serde_json::to_string(small).unwrap()).unwrap();
        assert_eq!(&wire, small);

        let to = tempfile::tempdir().unwrap();
        let head: Vec<&Entry> = wire.entries.iter().collect();
        let work = prepare(&config(to.path()), &head).unwrap();
        let bytes: HashMap<&str, bytes::Bytes> =
            snapped.objects.iter().map(|o| (o.key.as_str(), o.bytes.clone().expect("kept"))).collect();
        for entry in &work.write {
            let chunks: Vec<bytes::Bytes> = entry.objects.iter().map(|k| bytes[k.as_str()].clone()).collect();
            write_file(to.path(), entry, &chunks).unwrap();
        }
        let again =
            snap(&config(to.path()), SnapKind::Final, &BTreeMap::new(), &mut super::super::snap::SeenFiles::default())
                .unwrap();
        let strip = |m: &Manifest| -> Vec<(Name, EntryKind, Option<Name>, Vec<String>)> {
            m.entries.iter().map(|e| (e.path.clone(), e.kind, e.target.clone(), e.objects.clone())).collect()
        };
        assert_eq!(strip(&again.manifests[&CaptureClass::Small]), strip(small));
        let content = std::fs::read(to.path().join(name(b"dir\xfe")).join(name(b"bad\xffname"))).unwrap();
        assert_eq!(content, b"a");
    }
}
