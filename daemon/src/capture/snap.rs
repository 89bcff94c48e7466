//! A snap: one walk of the worktree into a manifest per class. Runs on the
//! file worker thread (as the workload), never on the async runtime.
//!
//! A file whose size, mtime, ctime and inode are those of the last snap is
//! not read again. A path that cannot be listed, stat'ed or opened is never
//! taken as deleted: an automatic snap carries its last captured entry
//! forward, a final snap fails.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sluice_protocol::capture::CaptureClass;
use sluice_protocol::names::Name;
use sluice_protocol::registrar::{Entry, EntryKind, MAX_OBJECT_BYTES, Manifest, object_key};

/// Content-defined chunk sizes for files larger than one object.
pub const CHUNK_MIN: u32 = 8 << 10;
pub const CHUNK_AVG: u32 = 32 << 10;
pub const CHUNK_MAX: u32 = 128 << 10;

/// What a snap takes.
#[derive(Debug, Clone)]
pub struct SnapConfig {
    pub worktree: PathBuf,
    /// Files larger than this are bulk.
    pub bulk_threshold: u64,
    /// Virtual path prefixes (`tree/node_modules`) whose files are bulk.
    pub bulk_paths: Vec<String>,
}

impl SnapConfig {
    fn class_of(&self, path: &Name, size: u64) -> CaptureClass {
        let bulk_path = self
            .bulk_paths
            .iter()
            .any(|p| path == p.as_str() || path.strip_prefix(p.as_bytes()).is_some_and(|r| r.first() == Some(&b'/')));
        if size > self.bulk_threshold || bulk_path { CaptureClass::Bulk } else { CaptureClass::Small }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapKind {
    Automatic,
    Final,
}

/// What snaps saw of a file, so an unchanged one is not read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    dev: u64,
    objects: Vec<String>,
    /// The walk that last saw it: a path no walk sees again is dropped.
    walk: u64,
}

/// What snaps remember between walks, kept and updated in place (a walk of
/// an unchanged tree allocates nothing for it).
#[derive(Debug, Default)]
pub struct SeenFiles {
    // Looked up once a file a walk: a fast hash (the names are the
    // workload's, but a flood of colliding names only slows its own snaps).
    files: rustc_hash::FxHashMap<Name, Seen>,
    walks: u64,
}

/// Where an object's bytes are on disk (and, when the snap kept them, the
/// bytes themselves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    pub key: String,
    pub path: PathBuf,
    pub offset: u64,
    pub len: u32,
    pub bytes: Option<bytes::Bytes>,
}

/// A snap's result.
#[derive(Debug, Default)]
pub struct Snapped {
    pub manifests: BTreeMap<CaptureClass, Manifest>,
    /// The objects of files read by this snap (each key once).
    pub objects: Vec<ObjectRef>,
    /// Paths that could not be read, by class, small first (as shown:
    /// a byte that is not UTF-8 reads `\xNN`).
    pub unreadable: Vec<(CaptureClass, String)>,
    /// Of those, how many had a captured entry that was carried forward.
    pub carried: u64,
    /// Bytes this snap read from disk.
    pub read_bytes: u64,
    /// Sockets and device nodes met and not kept (as shown), sorted.
    pub not_kept: Vec<String>,
}

/// Why a snap failed: it stages nothing.
#[derive(Debug, thiserror::Error)]
pub enum SnapError {
    #[error("the worktree cannot be read: {0}")]
    Root(std::io::Error),
    /// A final snap met paths it could not read.
    #[error("{0} paths could not be read")]
    Unreadable(usize, Box<Snapped>),
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000
}

fn nanos(seconds: i64, nanos: i64) -> i128 {
    i128::from(seconds) * 1_000_000_000 + i128::from(nanos)
}

/// Opens a file without following a symlink in its last component.
pub fn open_nofollow(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NOATIME).open(path).or_else(|e| {
        // O_NOATIME is refused for files the caller does not own.
        if e.raw_os_error() == Some(libc::EPERM) {
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)
        } else {
            Err(e)
        }
    })
}

/// A run of zeros as long as the longest object, so a hole is shipped
/// without being read (bytes the binary does not carry: they are zeroed).
static ZEROS: [u8; MAX_OBJECT_BYTES] = [0; MAX_OBJECT_BYTES];

/// The key of `len` zeros (that of a whole object's worth computed once).
fn zeros_key(len: usize) -> String {
    static WHOLE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if len == MAX_OBJECT_BYTES { WHOLE.get_or_init(|| object_key(&ZEROS)).clone() } else { object_key(&ZEROS[..len]) }
}

/// The file's data extents as `(offset, length)`, found with `SEEK_DATA`
/// and `SEEK_HOLE`; the rest up to `size` is holes. A file system that
/// cannot tell answers one extent: the whole file.
fn data_extents(file: &std::fs::File, size: u64) -> std::io::Result<Vec<(u64, u64)>> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let mut extents = Vec::new();
    let mut at = 0u64;
    while at < size {
        // SAFETY: lseek on a descriptor this function borrows; it moves
        // only the file offset, which every later read sets again.
        let data = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                // No data past `at`: the rest is a hole.
                Some(libc::ENXIO) => Ok(extents),
                Some(libc::EINVAL) if extents.is_empty() => Ok(vec![(0, size)]),
                _ => Err(e),
            };
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let (start, end) = (data as u64, (hole as u64).min(size));
        if end > start {
            extents.push((start, end - start));
        }
        at = end.max(start + 1);
    }
    Ok(extents)
}

/// What [`objects_of`] tells of each object: its key, offset, bytes, and
/// whether it is a hole's zeros.
type Found<'a> = dyn FnMut(String, u64, &[u8], bool) + 'a;

/// Reads a file into objects: one for a file of at most one object's size,
/// content-defined chunks for a larger one. Calls `found` for each, with
/// its offset. A large file with holes is read only where it has data:
/// each hole is objects of zeros, which a restore leaves as holes.
pub fn objects_of(
    mut file: std::fs::File,
    size: u64,
    sparse: bool,
    mut found: impl FnMut(String, u64, &[u8], bool),
) -> std::io::Result<(Vec<String>, u64)> {
    use std::io::Seek;
    let mut keys = Vec::new();
    if size == 0 {
        return Ok((keys, 0));
    }
    if size <= MAX_OBJECT_BYTES as u64 {
        let mut bytes = Vec::with_capacity(size as usize);
        (&mut file).take(MAX_OBJECT_BYTES as u64 + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 != size {
            return Err(std::io::Error::other("the file changed while it was read"));
        }
        let key = object_key(&bytes);
        found(key.clone(), 0, &bytes, false);
        keys.push(key);
        return Ok((keys, size));
    }
    let extents = if sparse { data_extents(&file, size)? } else { vec![(0, size)] };
    let mut at = 0u64;
    let mut read = 0u64;
    // A hole: zeros of at most one object each, not read.
    let zeros = |found: &mut Found<'_>, keys: &mut Vec<String>, from: u64, to: u64| {
        let mut offset = from;
        while offset < to {
            let len = (to - offset).min(MAX_OBJECT_BYTES as u64) as usize;
            let key = zeros_key(len);
            found(key.clone(), offset, &ZEROS[..len], true);
            keys.push(key);
            offset += len as u64;
        }
    };
    for (start, len) in extents {
        zeros(&mut found, &mut keys, at, start);
        file.seek(std::io::SeekFrom::Start(start))?;
        let chunker = fastcdc::v2020::StreamCDC::new(
            std::io::BufReader::with_capacity(1 << 20, (&file).take(len)),
            CHUNK_MIN,
            CHUNK_AVG,
            CHUNK_MAX,
        );
        let mut extent_read = 0u64;
        for chunk in chunker {
            let chunk = chunk.map_err(|e| match e {
                fastcdc::v2020::Error::IoError(e) => e,
                other => std::io::Error::other(other.to_string()),
            })?;
            let key = object_key(&chunk.data);
            found(key.clone(), start + chunk.offset, &chunk.data, false);
            extent_read += chunk.length as u64;
            keys.push(key);
        }
        if extent_read != len {
            return Err(std::io::Error::other("the file changed while it was read"));
        }
        read += extent_read;
        at = start + len;
    }
    zeros(&mut found, &mut keys, at, size);
    if file.metadata()?.len() != size {
        return Err(std::io::Error::other("the file changed while it was read"));
    }
    Ok((keys, read))
}

struct Walk<'a> {
    config: &'a SnapConfig,
    /// The entries last captured, by class, each sorted by path.
    previous: &'a BTreeMap<CaptureClass, Manifest>,
    seen: &'a mut SeenFiles,
    out: Snapped,
    keys: HashSet<String>,
    /// The first path of each inode with several names, by device and inode.
    links: HashMap<(u64, u64), Name>,
    /// Bytes of new objects kept in memory for shipping, so it need not
    /// read them again.
    kept_bytes: usize,
}

/// How many bytes of new objects a snap keeps in memory for shipping.
const KEEP_BYTES: usize = 32 << 20;

impl Walk<'_> {
    fn push(&mut self, class: CaptureClass, entry: Entry) {
        self.out.manifests.entry(class).or_default().entries.push(entry);
    }

    /// A path that could not be read: its last entry (and, for a
    /// directory, everything under it) is carried forward.
    fn unreadable(&mut self, vpath: &Name, dir: bool) {
        let mut carried: Vec<(CaptureClass, Entry)> = Vec::new();
        for (class, manifest) in self.previous {
            // Sorted by path: the path itself, then (for a directory) what is under it.
            let start = manifest.entries.partition_point(|e| &e.path < vpath);
            for entry in &manifest.entries[start..] {
                let under = dir && entry.path.is_under(vpath);
                if &entry.path == vpath || under {
                    carried.push((*class, entry.clone()));
                } else if entry.path.strip_prefix(vpath.as_bytes()).is_none() {
                    break;
                }
            }
        }
        let class = carried.first().map_or(CaptureClass::Small, |(c, _)| *c);
        if !carried.is_empty() {
            self.out.carried += 1;
        }
        for (class, entry) in carried {
            self.push(class, entry);
        }
        self.out.unreadable.push((class, vpath.to_string()));
    }

    fn file(&mut self, dir: &Path, name: &std::ffi::OsStr, vpath: Name, meta: &std::fs::Metadata) {
        let class = self.config.class_of(&vpath, meta.size());
        let stats = (
            meta.size(),
            nanos(meta.mtime(), meta.mtime_nsec()),
            nanos(meta.ctime(), meta.ctime_nsec()),
            meta.ino(),
            meta.dev(),
        );
        let walk = self.seen.walks;
        let unchanged = match self.seen.files.get_mut(&vpath) {
            Some(s) if (s.size, s.mtime_ns, s.ctime_ns, s.ino, s.dev) == stats => {
                s.walk = walk;
                Some(s.objects.clone())
            }
            _ => None,
        };
        let was_unchanged = unchanged.is_some();
        let objects = match unchanged {
            Some(objects) => objects,
            None => {
                let path = &dir.join(name);
                let read = open_nofollow(path).and_then(|file| {
                    let opened = file.metadata()?;
                    if !opened.is_file() || opened.ino() != meta.ino() {
                        return Err(std::io::Error::other("the path changed while it was read"));
                    }
                    let mut refs = Vec::new();
                    let kept = &mut self.kept_bytes;
                    // Fewer blocks than bytes: the file has holes to skip.
                    let sparse = meta.blocks().saturating_mul(512) < meta.size();
                    let (keys, read) = objects_of(file, meta.size(), sparse, |key, offset, data, zeros| {
                        let bytes = if zeros {
                            Some(bytes::Bytes::from_static(&ZEROS[..data.len()]))
                        } else if *kept + data.len() <= KEEP_BYTES {
                            *kept += data.len();
                            Some(bytes::Bytes::copy_from_slice(data))
                        } else {
                            None
                        };
                        refs.push(ObjectRef { key, path: path.to_path_buf(), offset, len: data.len() as u32, bytes })
                    })?;
                    Ok((keys, read, refs))
                });
                match read {
                    Ok((keys, read, refs)) => {
                        self.out.read_bytes += read;
                        for r in refs {
                            if self.keys.insert(r.key.clone()) {
                                self.out.objects.push(r);
                            }
                        }
                        keys
                    }
                    Err(_) => return self.unreadable(&vpath, false),
                }
            }
        };
        if !was_unchanged {
            let (size, mtime_ns, ctime_ns, ino, dev) = stats;
            let seen = Seen { size, mtime_ns, ctime_ns, ino, dev, objects: objects.clone(), walk };
            self.seen.files.insert(vpath.clone(), seen);
        }
        // The first path of an inode with more than one name is the one
        // the others link to.
        let hard_link = if meta.nlink() > 1 {
            match self.links.entry((meta.dev(), meta.ino())) {
                std::collections::hash_map::Entry::Occupied(first) => Some(first.get().clone()),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(vpath.clone());
                    None
                }
            }
        } else {
            None
        };
        let entry = Entry {
            path: vpath,
            kind: EntryKind::File,
            mode: meta.mode() & 0o7777,
            size: meta.size(),
            mtime_ms: mtime_ms(meta),
            objects,
            target: None,
            hard_link,
        };
        self.push(class, entry);
    }

    fn dir(&mut self, dir: &Path, vdir: Option<&Name>) -> std::io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let mut entries: Vec<(std::ffi::OsString, std::fs::DirEntry)> =
            std::fs::read_dir(dir)?.map(|e| e.map(|e| (e.file_name(), e))).collect::<Result<_, _>>()?;
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, dir_entry) in entries {
            // A name is its bytes: Linux names need not be UTF-8.
            let name = name.as_os_str();
            let vpath = match vdir {
                None if name == ".git" => Name::from(".git"),
                None => Name::from("tree").child(name.as_bytes()),
                Some(parent) => parent.child(name.as_bytes()),
            };
            // Stat'ed relative to the open directory, without following a symlink.
            let meta = match dir_entry.metadata() {
                Ok(meta) => meta,
                Err(_) => {
                    self.unreadable(&vpath, true);
                    continue;
                }
            };
            let kind = meta.file_type();
            if kind.is_dir() {
                // `.git` itself too: its mode and time are the worktree's.
                let entry = Entry::contentless(vpath.clone(), EntryKind::Dir, meta.mode() & 0o7777, mtime_ms(&meta));
                self.push(CaptureClass::Small, entry);
                if self.dir(&dir.join(name), Some(&vpath)).is_err() {
                    self.unreadable(&vpath, true);
                }
            } else if kind.is_symlink() {
                match std::fs::read_link(dir.join(name)) {
                    Ok(target) => {
                        let target =
                            Name::from_bytes(std::os::unix::ffi::OsStringExt::into_vec(target.into_os_string()));
                        let mut entry = Entry::contentless(vpath, EntryKind::Symlink, 0o777, mtime_ms(&meta));
                        entry.target = Some(target);
                        self.push(CaptureClass::Small, entry);
                    }
                    Err(_) => self.unreadable(&vpath, false),
                }
            } else if kind.is_file() {
                self.file(dir, name, vpath, &meta);
            } else if kind.is_fifo() {
                let entry = Entry::contentless(vpath, EntryKind::Fifo, meta.mode() & 0o7777, mtime_ms(&meta));
                self.push(CaptureClass::Small, entry);
            } else {
                // A socket belongs to a process and a device node to the
                // host: neither is work to keep, but both are named.
                self.out.not_kept.push(vpath.to_string());
            }
        }
        Ok(())
    }
}

/// Walks the worktree. `previous` holds the entries last captured (what an
/// unreadable path carries forward); `seen` what earlier snaps read, which
/// this walk updates.
pub fn snap(
    config: &SnapConfig,
    kind: SnapKind,
    previous: &BTreeMap<CaptureClass, Manifest>,
    seen: &mut SeenFiles,
) -> Result<Snapped, SnapError> {
    seen.walks += 1;
    let mut out = Snapped::default();
    for (class, manifest) in previous {
        out.manifests.insert(*class, Manifest { entries: Vec::with_capacity(manifest.entries.len()) });
    }
    let mut walk = Walk { config, previous, seen, out, keys: HashSet::new(), links: HashMap::new(), kept_bytes: 0 };
    walk.dir(&config.worktree, None).map_err(SnapError::Root)?;
    let mut out = walk.out;
    let this_walk = seen.walks;
    seen.files.retain(|_, s| s.walk == this_walk);
    for class in CaptureClass::ALL {
        out.manifests.entry(class).or_default().canonicalize();
    }
    out.unreadable.sort();
    out.not_kept.sort();
    if kind == SnapKind::Final && !out.unreadable.is_empty() {
        return Err(SnapError::Unreadable(out.unreadable.len(), Box::new(out)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> SnapConfig {
        SnapConfig { worktree: dir.to_path_buf(), bulk_threshold: 4 << 20, bulk_paths: vec!["tree/vendor".into()] }
    }

    #[test]
    fn a_snap_keeps_modes_links_empty_directories_and_classes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/empty")).unwrap();
        std::fs::create_dir_all(root.join(".git/refs")).unwrap();
        std::fs::create_dir_all(root.join("vendor")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(root.join("run.sh"), "#!/bin/sh").unwrap();
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main").unwrap();
        std::fs::write(root.join("vendor/lib.a"), "x").unwrap();
        std::os::unix::fs::symlink("src/main.rs", root.join("link")).unwrap();
        let out = snap(&config(root), SnapKind::Final, &BTreeMap::new(), &mut SeenFiles::default()).unwrap();
        let small: Vec<(&str, EntryKind)> =
            out.manifests[&CaptureClass::Small].entries.iter().map(|e| (e.path.to_str().unwrap(), e.kind)).collect();
        assert_eq!(
            small,
            [
                (".git", EntryKind::Dir),
                (".git/HEAD", EntryKind::File),
                (".git/refs", EntryKind::Dir),
                ("tree/link", EntryKind::Symlink),
                ("tree/run.sh", EntryKind::File),
                ("tree/src", EntryKind::Dir),
                ("tree/src/empty", EntryKind::Dir),
                ("tree/src/main.rs", EntryKind::File),
                ("tree/vendor", EntryKind::Dir),
            ]
        );
        let bulk: Vec<&str> =
            out.manifests[&CaptureClass::Bulk].entries.iter().map(|e| e.path.to_str().unwrap()).collect();
        assert_eq!(bulk, ["tree/vendor/lib.a"]);
        let run = out.manifests[&CaptureClass::Small].entries.iter().find(|e| e.path == "tree/run.sh").unwrap();
        assert_eq!(run.mode, 0o750);
        assert_eq!(run.objects, [object_key(b"#!/bin/sh")]);
        let link = out.manifests[&CaptureClass::Small].entries.iter().find(|e| e.path == "tree/link").unwrap();
        assert_eq!(link.target.as_ref().and_then(Name::to_str), Some("src/main.rs"));
    }

    #[test]
    fn an_unchanged_file_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "one").unwrap();
        std::fs::write(dir.path().join("b"), "two").unwrap();
        let mut seen = SeenFiles::default();
        let first = snap(&config(dir.path()), SnapKind::Automatic, &BTreeMap::new(), &mut seen).unwrap();
        assert_eq!(first.read_bytes, 6);
        std::fs::write(dir.path().join("b"), "three").unwrap();
        let second = snap(&config(dir.path()), SnapKind::Automatic, &first.manifests, &mut seen).unwrap();
        assert_eq!(second.read_bytes, 5, "only the changed file is read");
        assert_eq!(second.objects.len(), 1);
    }

    #[test]
    fn chunk_boundaries_survive_an_insertion() {
        // Pseudo-random bytes, so boundaries depend on content.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut data: Vec<u8> = (0..(4 << 20))
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let chunks = |data: &[u8]| {
            let path = dir.path().join("big");
            std::fs::write(&path, data).unwrap();
            objects_of(std::fs::File::open(&path).unwrap(), data.len() as u64, false, |_, _, _: &[u8], _| {}).unwrap().0
        };
        let before = chunks(&data);
        data.splice(2 << 20..2 << 20, b"inserted in the middle".iter().copied());
        let after = chunks(&data);
        let kept = after.iter().filter(|k| before.contains(k)).count();
        assert!(before.len() > 8, "{} chunks", before.len());
        assert!(
            after.len() - kept <= 2,
            "only the chunks around the insertion change: {} of {}",
            after.len() - kept,
            after.len()
        );
    }
}
