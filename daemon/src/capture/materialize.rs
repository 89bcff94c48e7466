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
    let relative = sluice_protocol::registrar::worktree_path(vpath)?;
    Some(worktree.join(std::ffi::OsStr::from_bytes(&relative)))
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
    /// Hard links to make once every file is written.
    pub(crate) links: Vec<Entry>,
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
    let mut work = Work { write: Vec::new(), links: Vec::new(), skipped_files: 0, skipped_bytes: 0, removed: 0 };
    // A hard link is made only to a file the head has that is not a link itself.
    let linkable: HashMap<&Name, &Entry> =
        head.iter().filter(|e| e.kind == EntryKind::File && e.hard_link.is_none()).map(|e| (&e.path, *e)).collect();
    // Deepest first, so a directory is emptied before it goes. A directory
    // the head holds paths under stays even where the head does not name it
    // (`.git` itself, in a capture made before it was captured).
    let holds_wanted = |dir: &Name| {
        let under = Name::from_bytes([dir.as_bytes(), b"/"].concat());
        wanted.range::<&Name, _>(&under..).next().is_some_and(|w| w.is_under(dir))
    };
    let kept = |e: &Entry| wanted.contains(&e.path) || (e.kind == EntryKind::Dir && holds_wanted(&e.path));
    let mut gone: Vec<&&Entry> = disk.values().filter(|e| !kept(e)).collect();
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
            EntryKind::Fifo => {
                if !same_kind {
                    make_fifo(&path, entry.mode)?;
                } else if present.is_some_and(|p| p.mode != entry.mode) {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(entry.mode))?;
                }
                if present.is_none_or(|p| !same_kind || p.mtime_ms != entry.mtime_ms) {
                    set_mtime(&path, entry.mtime_ms)?;
                }
            }
            EntryKind::File if entry.hard_link.as_ref().is_some_and(|t| linkable.contains_key(t)) => {
                work.links.push((*entry).clone());
            }
            EntryKind::File => {
                let same_content =
                    present.is_some_and(|p| same_kind && p.size == entry.size && p.objects == entry.objects);
                if same_content {
                    let p = present.expect("present");
                    if p.mode != entry.mode {
                        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(entry.mode))?;
                    }
                    if p.mtime_ms != entry.mtime_ms {
                        set_mtime(&path, entry.mtime_ms)?;
                    }
                    work.skipped_files += 1;
                    work.skipped_bytes += entry.size;
                } else {
                    work.write.push((*entry).clone());
                }
            }
        }
    }
    // A link already on disk stays only if its file is not rewritten
    // (a rewrite is a new inode the old link does not share).
    let rewritten: BTreeSet<&Name> = work.write.iter().map(|e| &e.path).collect();
    let mut links = std::mem::take(&mut work.links);
    links.retain(|entry| {
        let linked = disk.get(&entry.path).is_some_and(|p| {
            p.kind == EntryKind::File
                && p.hard_link == entry.hard_link
                && p.objects == entry.objects
                && p.mode == entry.mode
                && entry.hard_link.as_ref().is_some_and(|t| !rewritten.contains(t))
        });
        if linked {
            work.skipped_files += 1;
            work.skipped_bytes += entry.size;
        }
        !linked
    });
    work.links = links;
    Ok(work)
}

/// Sets the modification time of what `path` names (not following a
/// symlink; opening a fifo to set it would wait for a writer).
fn set_mtime(path: &Path, mtime_ms: i64) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let ms = mtime_ms.max(0);
    let times = [
        libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_OMIT },
        libc::timespec { tv_sec: (ms / 1000) as libc::time_t, tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long },
    ];
    // SAFETY: a NUL-terminated path and two timespecs this function owns.
    if unsafe { libc::utimensat(libc::AT_FDCWD, c_path.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Makes a named pipe at `path`.
fn make_fifo(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: a NUL-terminated path this function owns.
    if unsafe { libc::mkfifo(c_path.as_ptr(), (mode & 0o777) as libc::mode_t) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Makes `entry` a hard link of its file (already written), through a
/// temporary name renamed over whatever is there. Where the file system
/// refuses a link, a copy of the file (the same bytes) is written instead.
pub(crate) fn link_file(worktree: &Path, entry: &Entry) -> std::io::Result<()> {
    let not_worktree = || std::io::Error::other("not a worktree path");
    let path = disk_path(worktree, &entry.path).ok_or_else(not_worktree)?;
    let first = entry.hard_link.as_ref().and_then(|t| disk_path(worktree, t)).ok_or_else(not_worktree)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = beside(&path);
    let _ = std::fs::remove_file(&temporary);
    if std::fs::hard_link(&first, &temporary).is_err() {
        std::fs::copy(&first, &temporary)?;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(entry.mode))?;
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(entry.mtime_ms.max(0) as u64);
        std::fs::File::options().write(true).open(&temporary)?.set_modified(when)?;
    }
    std::fs::rename(&temporary, &path)
}

/// A temporary name beside `path`, for what is renamed over it.
fn beside(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".sluice-restore");
    path.with_file_name(name)
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
    let target = if fresh { path.clone() } else { beside(&path) };
    let _ = (!fresh).then(|| std::fs::remove_file(&target));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(entry.mode & 0o777)
        .open(&target)?;
    let written = write_content(&mut file, chunks.iter().map(|c| &c[..]), Some(entry.size))?;
    file.set_permissions(std::fs::Permissions::from_mode(entry.mode))?;
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(entry.mtime_ms.max(0) as u64);
    file.set_modified(when)?;
    drop(file);
    if !fresh {
        std::fs::rename(&target, &path)?;
    }
    Ok(written)
}

/// Writes a file's chunks in order from where the file is, leaving each
/// chunk of zeros a hole (so a sparse file is restored sparse), and makes
/// the file end where the last chunk does. With the whole `length` known,
/// the file is given it first: a write past the end would let the file
/// system allocate ahead of it, and those blocks would stay. Answers where
/// the file ends.
pub(crate) fn write_content<'a>(
    file: &mut std::fs::File,
    chunks: impl IntoIterator<Item = &'a [u8]>,
    length: Option<u64>,
) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut at = file.stream_position()?;
    if let Some(length) = length {
        file.set_len(length)?;
    }
    let mut skipped = false;
    for chunk in chunks {
        if is_zeros(chunk) {
            skipped = true;
        } else {
            if skipped {
                file.seek(SeekFrom::Start(at))?;
                skipped = false;
            }
            file.write_all(chunk)?;
        }
        at += chunk.len() as u64;
    }
    if length != Some(at) {
        file.set_len(at)?;
    }
    file.seek(SeekFrom::Start(at))?;
    Ok(at)
}

/// Whether `bytes` are all zeros (a block's worth at least: a short run
/// is cheaper written than tracked).
fn is_zeros(bytes: &[u8]) -> bool {
    bytes.len() >= 4096 && bytes.iter().all(|b| *b == 0)
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
    let links = prepared.links;
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
    // Links last: each names a file written above or kept as it was.
    written_files += links.len() as u64;
    let worktree = config.worktree.clone();
    fs.run(move || links.iter().try_for_each(|entry| link_file(&worktree, entry))).await??;
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
            if sluice_protocol::registrar::object_key(&bytes) != key {
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

/// Trees with everything a capture keeps, generated: names of any bytes,
/// modes, mtimes, symlinks, empty directories, hard links, fifos and
/// sparse files. Each is captured, restored elsewhere and captured again.
#[cfg(test)]
mod exact_trees {
    use super::*;
    use proptest::prelude::*;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;

    use crate::capture::snap::{ObjectRef, SeenFiles, Snapped};

    #[derive(Debug, Clone)]
    enum Content {
        Bytes(Vec<u8>),
        /// A file of `size` bytes holding only `data` at `at` (the rest holes).
        Sparse {
            size: u64,
            at: u64,
            data: Vec<u8>,
        },
    }

    #[derive(Debug, Clone)]
    enum Node {
        Dir {
            mode: u32,
        },
        File {
            content: Content,
            mode: u32,
            mtime_s: i64,
        },
        Symlink {
            target: Vec<u8>,
        },
        Fifo {
            mode: u32,
        },
        /// A hard link of the n-th file made before it (if any).
        Link {
            of: usize,
        },
    }

    /// A node, the directory it goes in (the n-th made before it, or the
    /// root), and its name.
    type Planned = (usize, Vec<u8>, Node);

    fn name() -> impl Strategy<Value = Vec<u8>> {
        // Any byte but '/' and NUL; a few of them often.
        let byte = prop_oneof![
            3 => prop::sample::select(vec![b'a', b'b', b'.', b'-', b' ', 0xff, 0xfe, 0x80, b'\n']),
            1 => (1u8..=255).prop_filter("not a slash", |b| *b != b'/'),
        ];
        prop::collection::vec(byte, 1..6).prop_filter("not . or ..", |n| n != b"." && n != b"..")
    }

    fn content() -> impl Strategy<Value = Content> {
        prop_oneof![
            6 => prop::collection::vec(any::<u8>(), 0..3000).prop_map(Content::Bytes),
            1 => (1u64..3, 0u64..4, prop::collection::vec(any::<u8>(), 1..70_000)).prop_map(|(mib, at, data)| {
                let size = (mib << 20) + (at << 12);
                Content::Sparse { size: size + data.len() as u64, at: (at << 18).min(size), data }
            }),
            1 => prop::collection::vec(any::<u8>(), 1_100_000..1_300_000).prop_map(Content::Bytes),
        ]
    }

    fn node() -> impl Strategy<Value = Node> {
        let mode = |base: u32| (0u32..0o100).prop_map(move |m| base | m);
        prop_oneof![
            2 => mode(0o700).prop_map(|mode| Node::Dir { mode }),
            5 => (content(), mode(0o600), 0i64..2_000_000_000)
                .prop_map(|(content, mode, mtime_s)| Node::File { content, mode, mtime_s }),
            1 => prop::collection::vec(1u8..=255, 1..12).prop_map(|target| Node::Symlink { target }),
            1 => mode(0o600).prop_map(|mode| Node::Fifo { mode }),
            2 => (0usize..8).prop_map(|of| Node::Link { of }),
        ]
    }

    fn tree() -> impl Strategy<Value = Vec<Planned>> {
        prop::collection::vec((0usize..16, name(), node()), 1..24)
    }

    /// Makes the tree under `root`; a name already taken is left out.
    fn build(root: &Path, planned: &[Planned]) {
        use std::os::unix::fs::PermissionsExt;
        let mut dirs: Vec<PathBuf> = vec![root.to_path_buf()];
        let mut files: Vec<PathBuf> = Vec::new();
        for (dir, name, node) in planned {
            let parent = &dirs[dir % dirs.len()];
            if parent == root && name == b".git" {
                continue;
            }
            let path = parent.join(std::ffi::OsStr::from_bytes(name));
            if std::fs::symlink_metadata(&path).is_ok() {
                continue;
            }
            match node {
                Node::Dir { mode } => {
                    std::fs::create_dir(&path).unwrap();
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
                    dirs.push(path);
                }
                Node::File { content, mode, mtime_s } => {
                    let file = std::fs::File::create(&path).unwrap();
                    match content {
                        Content::Bytes(bytes) => std::fs::write(&path, bytes).unwrap(),
                        Content::Sparse { size, at, data } => {
                            use std::os::unix::fs::FileExt;
                            file.set_len(*size).unwrap();
                            file.write_all_at(data, *at).unwrap();
                        }
                    }
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
                    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(*mtime_s as u64);
                    std::fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
                    files.push(path);
                }
                Node::Symlink { target } => {
                    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), &path).unwrap()
                }
                Node::Fifo { mode } => make_fifo(&path, *mode).unwrap(),
                Node::Link { of } => {
                    if !files.is_empty() {
                        std::fs::hard_link(&files[of % files.len()], &path).unwrap();
                    }
                }
            }
        }
    }

    fn config(dir: &Path) -> SnapConfig {
        SnapConfig { worktree: dir.to_path_buf(), bulk_threshold: 1 << 20, bulk_paths: Vec::new() }
    }

    fn capture(dir: &Path) -> Snapped {
        snap(&config(dir), SnapKind::Final, &BTreeMap::new(), &mut SeenFiles::default()).expect("nothing unreadable")
    }

    /// Every object's bytes, read where the snap found them.
    fn objects(snapped: &Snapped) -> HashMap<String, bytes::Bytes> {
        snapped
            .objects
            .iter()
            .map(|o: &ObjectRef| {
                let bytes = o.bytes.clone().unwrap_or_else(|| {
                    let frames = crate::capture::read_frames(std::slice::from_ref(o)).unwrap();
                    bytes::Bytes::copy_from_slice(&frames[72..])
                });
                (o.key.clone(), bytes)
            })
            .collect()
    }

    /// Restores `head` into `to` as materialize does, from `objects`.
    fn restore(to: &Path, head: &BTreeMap<CaptureClass, Manifest>, objects: &HashMap<String, bytes::Bytes>) {
        let entries = merged(&head[&CaptureClass::Small], &head[&CaptureClass::Bulk]);
        let refs: Vec<&Entry> = entries.iter().collect();
        let work = prepare(&config(to), &refs).unwrap();
        for entry in &work.write {
            let chunks: Vec<bytes::Bytes> = entry.objects.iter().map(|k| objects[k].clone()).collect();
            write_file(to, entry, &chunks).unwrap();
        }
        for entry in &work.links {
            link_file(to, entry).unwrap();
        }
    }

    /// A manifest as a restore must reproduce it: a directory's mtime is
    /// the restore's own (writing into it moves it).
    fn exact(manifests: &BTreeMap<CaptureClass, Manifest>) -> BTreeMap<CaptureClass, Vec<Entry>> {
        manifests
            .iter()
            .map(|(class, m)| {
                let entries = m
                    .entries
                    .iter()
                    .cloned()
                    .map(|mut e| {
                        if matches!(e.kind, EntryKind::Dir | EntryKind::Symlink) {
                            e.mtime_ms = 0;
                        }
                        e
                    })
                    .collect();
                (*class, entries)
            })
            .collect()
    }

    /// What the disk holds beyond the manifest: each file's allocation and
    /// which paths share an inode.
    fn disk_facts(root: &Path, snapped: &Snapped) -> Vec<(Name, u64, u64)> {
        let mut facts = Vec::new();
        for entry in snapped.manifests.values().flat_map(|m| &m.entries) {
            if entry.kind == EntryKind::File {
                let meta = std::fs::symlink_metadata(disk_path(root, &entry.path).unwrap()).unwrap();
                facts.push((entry.path.clone(), meta.nlink(), meta.blocks()));
            }
        }
        facts
    }

    fn check_round_trip(from: &Path, to: &Path) -> Result<(), TestCaseError> {
        let original = capture(from);
        prop_assert!(original.unreadable.is_empty());
        restore(to, &original.manifests, &objects(&original));
        let restored = capture(to);
        prop_assert_eq!(exact(&restored.manifests), exact(&original.manifests));
        let (before, after) = (disk_facts(from, &original), disk_facts(to, &restored));
        for ((path, links, blocks), (_, links_after, blocks_after)) in before.iter().zip(&after) {
            prop_assert_eq!(links, links_after, "{} keeps its links", path);
            prop_assert!(blocks_after <= &(blocks + 8), "{} allocates {} blocks, not {}", path, blocks_after, blocks);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn a_tree_is_restored_exactly(planned in tree()) {
            let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            build(from.path(), &planned);
            check_round_trip(from.path(), to.path())?;
        }

        /// A re-plan onto a worktree that holds another tree leaves exactly
        /// the planned one.
        #[test]
        fn a_tree_is_restored_exactly_over_another(planned in tree(), there in tree()) {
            let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            build(from.path(), &planned);
            build(to.path(), &there);
            check_round_trip(from.path(), to.path())?;
        }
    }

    /// A large file that is mostly holes is read only where it has data and
    /// restored allocating no more than that.
    #[test]
    fn a_sparse_file_is_read_and_restored_by_its_data() {
        use std::os::unix::fs::FileExt;
        let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let file = std::fs::File::create(from.path().join("disk.img")).unwrap();
        file.set_len(256 << 20).unwrap();
        file.write_all_at(&[7u8; 100_000], 64 << 20).unwrap();
        drop(file);
        let original = capture(from.path());
        assert!(original.read_bytes < 1 << 20, "read {} bytes of a file with 100,000 of data", original.read_bytes);
        restore(to.path(), &original.manifests, &objects(&original));
        let meta = std::fs::metadata(to.path().join("disk.img")).unwrap();
        assert_eq!(meta.len(), 256 << 20);
        assert!(meta.blocks() * 512 < 1 << 20, "{} bytes allocated", meta.blocks() * 512);
        let restored = std::fs::read(to.path().join("disk.img")).unwrap();
        assert_eq!(&restored[64 << 20..(64 << 20) + 100_000], &[7u8; 100_000][..]);
        assert!(restored[..64 << 20].iter().all(|b| *b == 0));
    }

    /// `.git` keeps its own mode through a restore; a capture made before
    /// `.git` itself was captured restores over it without losing what is in it.
    #[test]
    fn the_git_directory_keeps_its_mode_and_an_older_capture_keeps_its_contents() {
        use std::os::unix::fs::PermissionsExt;
        let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir_all(from.path().join(".git/refs")).unwrap();
        std::fs::write(from.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::set_permissions(from.path().join(".git"), std::fs::Permissions::from_mode(0o750)).unwrap();
        let original = capture(from.path());
        restore(to.path(), &original.manifests, &objects(&original));
        let mode = std::fs::metadata(to.path().join(".git")).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o750);

        let mut older = original.manifests.clone();
        older.get_mut(&CaptureClass::Small).unwrap().entries.retain(|e| e.path != ".git");
        restore(to.path(), &older, &objects(&original));
        assert_eq!(std::fs::read_to_string(to.path().join(".git/HEAD")).unwrap(), "ref: refs/heads/main\n");
        assert!(to.path().join(".git/refs").is_dir());
    }

    /// Sockets are named, not kept, and do not make a final incomplete.
    #[test]
    fn a_socket_is_reported_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("agent.sock")).unwrap();
        std::fs::write(dir.path().join("kept"), "x").unwrap();
        let snapped = capture(dir.path());
        assert_eq!(snapped.not_kept, ["tree/agent.sock"]);
        let paths: Vec<&Name> = snapped.manifests[&CaptureClass::Small].entries.iter().map(|e| &e.path).collect();
        assert_eq!(paths, [&Name::from("tree/kept")]);
    }
}
