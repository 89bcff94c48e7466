//! A snap: one walk of the worktree into a manifest per class. Runs on the
//! file worker thread (as the workload), never on the async runtime, with
//! helper threads it starts (as the workload too) reading directories
//! ahead of it. The walk meets paths in a manifest's order: compared with
//! the last capture as it goes, an unchanged tree builds nothing.
//!
//! A file whose size, mtime, ctime and inode are those of the last snap is
//! not read again. A path that cannot be listed, stat'ed or opened is never
//! taken as deleted: an automatic snap carries its last captured entry
//! forward, a final snap fails.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
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
    fn class_of(&self, path: &[u8], size: u64) -> CaptureClass {
        let bulk_path = self
            .bulk_paths
            .iter()
            .any(|p| path == p.as_bytes() || path.strip_prefix(p.as_bytes()).is_some_and(|r| r.first() == Some(&b'/')));
        if size > self.bulk_threshold || bulk_path { CaptureClass::Bulk } else { CaptureClass::Small }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapKind {
    Automatic,
    Final,
}

/// What snaps saw of a file, so an unchanged one is not read again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    dev: u64,
    objects: Vec<String>,
}

/// What decides that a file is as a snap read it.
type Stats = (u64, i128, i128, u64, u64);

impl Seen {
    fn stats(&self) -> Stats {
        (self.size, self.mtime_ns, self.ctime_ns, self.ino, self.dev)
    }
}

/// What snaps remember between walks: sorted by path, the order a walk
/// meets files in, so a walk finds each file's record by moving forward
/// through them, not by a lookup; a walk of an unchanged tree updates
/// nothing and allocates nothing for it.
#[derive(Debug, Default)]
pub struct SeenFiles {
    files: Vec<(Name, Seen)>,
    /// During a walk: how far into `files` it has come,
    at: usize,
    /// and, from its first difference on, the records of what it met, in order.
    next: Option<Vec<(Name, Seen)>>,
}

impl SeenFiles {
    fn begin(&mut self) {
        self.at = 0;
        self.next = None;
    }

    /// The walk differs from the records: what it met so far moves over.
    fn diverge(&mut self) -> &mut Vec<(Name, Seen)> {
        if self.next.is_none() {
            let rest = self.files.split_off(self.at);
            self.next = Some(std::mem::replace(&mut self.files, rest));
            self.at = 0;
        }
        self.next.get_or_insert_default()
    }

    /// Passes the records of paths before `path`: the walk did not meet them.
    fn pass(&mut self, path: &[u8]) {
        while self.files.get(self.at).is_some_and(|(p, _)| p.as_bytes() < path) {
            self.diverge();
            self.at += 1;
        }
    }

    /// The record of `path` if the file is as it was read (counted as met).
    fn unchanged(&mut self, path: &[u8], stats: Stats) -> Option<&Seen> {
        self.pass(path);
        let (p, seen) = self.files.get(self.at)?;
        if p.as_bytes() != path || seen.stats() != stats {
            return None;
        }
        self.at += 1;
        if self.next.is_none() {
            return Some(&self.files[self.at - 1].1);
        }
        let record = std::mem::take(&mut self.files[self.at - 1]);
        let next = self.diverge();
        next.push(record);
        next.last().map(|(_, seen)| seen)
    }

    /// Records what the walk read of `path`.
    fn read(&mut self, path: &[u8], seen: Seen) -> &Seen {
        self.pass(path);
        self.diverge();
        if self.files.get(self.at).is_some_and(|(p, _)| p.as_bytes() == path) {
            self.at += 1;
        }
        let next = self.diverge();
        next.push((Name::from_bytes(path), seen));
        &next[next.len() - 1].1
    }

    /// Ends a walk: files it did not meet are forgotten.
    fn end(&mut self) {
        match self.next.take() {
            Some(mut next) => {
                // A walk meets files in path order; should one not, the
                // records are put in order (a miss only reads a file again).
                if !next.windows(2).all(|w| w[0].0 < w[1].0) {
                    next.sort_by(|a, b| a.0.cmp(&b.0));
                    next.dedup_by(|a, b| a.0 == b.0);
                }
                self.files = next;
            }
            None => self.files.truncate(self.at),
        }
        self.at = 0;
    }
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
    /// The tree is exactly as the previous capture has it: the manifests
    /// were not built (only [`snap_changes`] answers this).
    pub unchanged: bool,
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

/// A path's status, from one `fstatat` of its directory's entry.
#[derive(Debug, Clone, Copy)]
struct Stat {
    mode: u32,
    size: u64,
    blocks: u64,
    nlink: u64,
    ino: u64,
    dev: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stat {
    // The fields' widths differ between targets (nlink is 32 bits on some).
    #[allow(clippy::useless_conversion)]
    fn of(st: &libc::stat) -> Stat {
        Stat {
            mode: st.st_mode,
            size: u64::try_from(st.st_size).unwrap_or(0),
            blocks: u64::try_from(st.st_blocks).unwrap_or(0),
            nlink: u64::from(st.st_nlink),
            ino: u64::from(st.st_ino),
            dev: u64::from(st.st_dev),
            mtime_ns: nanos(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: nanos(st.st_ctime, st.st_ctime_nsec),
        }
    }

    fn is(&self, format: libc::mode_t) -> bool {
        self.mode & libc::S_IFMT == format
    }

    fn perm(&self) -> u32 {
        self.mode & 0o7777
    }

    fn mtime_ms(&self) -> i64 {
        self.mtime_ns.div_euclid(1_000_000) as i64
    }
}

/// One directory's entries as one read of it found them: the names in one
/// buffer, each with its status or the error that kept it.
#[derive(Debug, Default)]
struct Listing {
    names: Vec<u8>,
    entries: Vec<(std::ops::Range<usize>, Result<Stat, i32>)>,
    /// The entries in the walk's order (see [`Listing::ordered`]).
    order: Vec<(usize, bool)>,
}

impl Listing {
    fn name(&self, i: usize) -> &[u8] {
        &self.names[self.entries[i].0.clone()]
    }

    /// The entries in the order of their virtual paths: a directory's own
    /// entry at its name and (`true`) what is under it at its name and a
    /// slash, so the walk meets paths in a manifest's order. At the root,
    /// `.git` (a path of its own) comes before everything of `tree/`.
    fn ordered(&self, root: bool) -> Vec<(usize, bool)> {
        let mut items = Vec::with_capacity(self.entries.len() + 8);
        for (i, (_, stat)) in self.entries.iter().enumerate() {
            items.push((i, false));
            if stat.as_ref().is_ok_and(|s| s.is(libc::S_IFDIR)) {
                items.push((i, true));
            }
        }
        let rank = |i: usize| u8::from(!(root && self.name(i) == GIT_DIR));
        items.sort_unstable_by(|&(a, a_under), &(b, b_under)| {
            rank(a).cmp(&rank(b)).then_with(|| path_order(self.name(a), a_under, self.name(b), b_under))
        });
        items
    }
}

const GIT_DIR: &[u8] = b".git";

/// The order of two names of one directory as paths, each followed by a
/// slash when it stands for what is under it (names hold no slash).
fn path_order(a: &[u8], a_under: bool, b: &[u8], b_under: bool) -> std::cmp::Ordering {
    let common = a.len().min(b.len());
    a[..common].cmp(&b[..common]).then_with(|| {
        let next = |name: &[u8], under: bool| name.get(common).copied().or(under.then_some(b'/'));
        next(a, a_under).cmp(&next(b, b_under))
    })
}

/// Lists `dir` and stats each entry relative to it without following a
/// symlink. Only the worktree's root itself may be reached through one.
fn list(dir: &Path, root: bool) -> std::io::Result<Listing> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let nofollow = if root { 0 } else { libc::O_NOFOLLOW };
    // SAFETY: a NUL-terminated path this function owns.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | nofollow) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the stream takes the descriptor over; `Stream` closes it.
    let stream = unsafe { libc::fdopendir(fd) };
    if stream.is_null() {
        let e = std::io::Error::last_os_error();
        // SAFETY: the descriptor opened above, owned by nothing else.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    struct Stream(*mut libc::DIR);
    impl Drop for Stream {
        fn drop(&mut self) {
            // SAFETY: a stream fdopendir answered, closed once.
            unsafe { libc::closedir(self.0) };
        }
    }
    let stream = Stream(stream);
    let mut listing = Listing::default();
    loop {
        // readdir's end and its failure differ only in errno.
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: a stream this function owns.
        let entry = unsafe { libc::readdir(stream.0) };
        if entry.is_null() {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error().unwrap_or(0) != 0 {
                return Err(e);
            }
            listing.order = listing.ordered(root);
            return Ok(listing);
        }
        // SAFETY: readdir answered an entry whose name is NUL-terminated
        // and valid until the next call.
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a name of this directory, relative to its descriptor;
        // `st` is written when the call succeeds.
        let stat = if unsafe { libc::fstatat(fd, name.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) } == 0 {
            // SAFETY: written by the successful call.
            Ok(Stat::of(unsafe { st.assume_init_ref() }))
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
        };
        let start = listing.names.len();
        listing.names.extend_from_slice(bytes);
        listing.entries.push((start..listing.names.len(), stat));
    }
}

/// Lists directories ahead of the walk on helper threads, in the order
/// the walk asks for them (a directory's subdirectories before its next
/// sibling), with at most [`AHEAD`] listings waiting: the walk's thread
/// then mostly compares, and the kernel's work of reading directories and
/// stat'ing entries is spread over the cores. Helpers are spawned by the
/// walk's thread and act with its credentials (the workload's).
#[derive(Default)]
struct Lister {
    state: std::sync::Mutex<Listed>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct Listed {
    /// Directories to list, the one the walk needs soonest first.
    queue: std::collections::VecDeque<PathBuf>,
    /// Listed, not yet taken by the walk.
    done: HashMap<PathBuf, std::io::Result<Listing>>,
    /// Being listed by a helper.
    busy: HashSet<PathBuf>,
    stop: bool,
}

/// Listings a lister keeps ready ahead of the walk, at most.
const AHEAD: usize = 64;

impl Lister {
    /// Puts `dir`'s subdirectories at the front of the queue, in order.
    fn queue_under(state: &mut Listed, dir: &Path, listing: &std::io::Result<Listing>) {
        use std::os::unix::ffi::OsStrExt;
        let Ok(listing) = listing else { return };
        for &(i, under) in listing.order.iter().rev() {
            if under {
                state.queue.push_front(dir.join(std::ffi::OsStr::from_bytes(listing.name(i))));
            }
        }
    }

    /// A helper: lists what is queued until told to stop.
    fn help(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            while !state.stop && (state.queue.is_empty() || state.done.len() >= AHEAD) {
                state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if state.stop {
                return;
            }
            state = self.list_next(state);
        }
    }

    /// Lists the directory at the queue's front, the lock let go meanwhile.
    fn list_next<'s>(&'s self, mut state: std::sync::MutexGuard<'s, Listed>) -> std::sync::MutexGuard<'s, Listed> {
        let Some(dir) = state.queue.pop_front() else { return state };
        state.busy.insert(dir.clone());
        drop(state);
        let listing = list(&dir, false);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.busy.remove(&dir);
        Self::queue_under(&mut state, &dir, &listing);
        state.done.insert(dir, listing);
        self.changed.notify_all();
        state
    }

    /// `dir`'s listing: a helper's, or read here when none has it.
    fn take(&self, dir: &Path, root: bool) -> std::io::Result<Listing> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(listing) = state.done.remove(dir) {
                self.changed.notify_all();
                return listing;
            }
            if !state.busy.contains(dir) {
                break;
            }
            // A helper is listing it: list what comes after meanwhile.
            if !state.queue.is_empty() && state.done.len() < AHEAD {
                state = self.list_next(state);
            } else {
                state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        if state.queue.front().map(PathBuf::as_path) == Some(dir) {
            state.queue.pop_front();
        } else if let Some(at) = state.queue.iter().position(|d| d == dir) {
            state.queue.remove(at);
        }
        drop(state);
        let listing = list(dir, root);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Self::queue_under(&mut state, dir, &listing);
        self.changed.notify_all();
        listing
    }

    fn stop(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).stop = true;
        self.changed.notify_all();
    }
}

/// An entry as the walk found it, borrowed: made an [`Entry`] only when
/// the walk builds a manifest.
struct Seeing<'e> {
    path: &'e [u8],
    kind: EntryKind,
    mode: u32,
    size: u64,
    mtime_ms: i64,
    objects: &'e [String],
    target: Option<&'e [u8]>,
    hard_link: Option<&'e Name>,
}

impl<'e> Seeing<'e> {
    fn file(path: &'e [u8], meta: &Stat, objects: &'e [String], hard_link: Option<&'e Name>) -> Seeing<'e> {
        Seeing {
            path,
            kind: EntryKind::File,
            mode: meta.perm(),
            size: meta.size,
            mtime_ms: meta.mtime_ms(),
            objects,
            target: None,
            hard_link,
        }
    }

    fn is(&self, entry: &Entry) -> bool {
        entry.path.as_bytes() == self.path
            && entry.kind == self.kind
            && entry.mode == self.mode
            && entry.size == self.size
            && entry.mtime_ms == self.mtime_ms
            && entry.objects == self.objects
            && entry.target.as_ref().map(Name::as_bytes) == self.target
            && entry.hard_link.as_ref() == self.hard_link
    }

    fn entry(&self) -> Entry {
        Entry {
            path: Name::from_bytes(self.path),
            kind: self.kind,
            mode: self.mode,
            size: self.size,
            mtime_ms: self.mtime_ms,
            objects: self.objects.to_vec(),
            target: self.target.map(Name::from_bytes),
            hard_link: self.hard_link.cloned(),
        }
    }
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
    /// Whether the walk builds manifests: from its start, or from the
    /// first path that is not as `previous` has it.
    building: bool,
    /// Until then: how many of each class's previous entries the walk met
    /// as they are, in order (an unchanged tree's walk copies nothing).
    matched: [usize; CaptureClass::ALL.len()],
    lister: &'a Lister,
}

/// How many bytes of new objects a snap keeps in memory for shipping.
const KEEP_BYTES: usize = 32 << 20;

fn class_index(class: CaptureClass) -> usize {
    CaptureClass::ALL.iter().position(|c| *c == class).unwrap_or(0)
}

impl Walk<'_> {
    fn push(&mut self, class: CaptureClass, entry: Entry) {
        self.out.manifests.entry(class).or_default().entries.push(entry);
    }

    /// Whether `found` is the next of `class`'s previous entries (then
    /// counted as met).
    fn met(
        previous: &BTreeMap<CaptureClass, Manifest>,
        matched: &mut [usize],
        class: CaptureClass,
        found: &Seeing<'_>,
    ) -> bool {
        let at = &mut matched[class_index(class)];
        let same = previous.get(&class).and_then(|m| m.entries.get(*at)).is_some_and(|e| found.is(e));
        if same {
            *at += 1;
        }
        same
    }

    /// From here on the walk builds manifests: first what it met as it
    /// was, copied from `previous`.
    fn start_building(&mut self) {
        if self.building {
            return;
        }
        self.building = true;
        for (class, manifest) in self.previous {
            let met = &manifest.entries[..self.matched[class_index(*class)]];
            self.out.manifests.entry(*class).or_default().entries.extend_from_slice(met);
        }
    }

    /// Records `found`: counted when the walk is not building and it is
    /// as before, pushed otherwise.
    fn emit(&mut self, class: CaptureClass, found: Seeing<'_>) {
        if !self.building && Self::met(self.previous, &mut self.matched, class, &found) {
            return;
        }
        self.start_building();
        self.push(class, found.entry());
    }

    /// A path that could not be read: its last entry (and, for a
    /// directory, everything under it) is carried forward.
    fn unreadable(&mut self, vpath: &Name, dir: bool) {
        self.start_building();
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

    fn file(&mut self, dir: &Path, name: &[u8], vpath: &[u8], meta: &Stat) {
        use std::os::unix::ffi::OsStrExt;
        let class = self.config.class_of(vpath, meta.size);
        let stats = (meta.size, meta.mtime_ns, meta.ctime_ns, meta.ino, meta.dev);
        // The first path of an inode with more than one name is the one
        // the others link to.
        let hard_link = if meta.nlink > 1 {
            match self.links.entry((meta.dev, meta.ino)) {
                std::collections::hash_map::Entry::Occupied(first) => Some(first.get().clone()),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(Name::from_bytes(vpath));
                    None
                }
            }
        } else {
            None
        };
        // Unchanged since a snap read it: its objects are those it found.
        if let Some(seen) = self.seen.unchanged(vpath, stats) {
            if !self.building
                && Self::met(
                    self.previous,
                    &mut self.matched,
                    class,
                    &Seeing::file(vpath, meta, &seen.objects, hard_link.as_ref()),
                )
            {
                return;
            }
            let entry = Seeing::file(vpath, meta, &seen.objects, hard_link.as_ref()).entry();
            self.start_building();
            return self.push(class, entry);
        }
        let path = &dir.join(std::ffi::OsStr::from_bytes(name));
        let read = open_nofollow(path).and_then(|file| {
            let opened = file.metadata()?;
            if !opened.is_file() || opened.ino() != meta.ino {
                return Err(std::io::Error::other("the path changed while it was read"));
            }
            let mut refs = Vec::new();
            let kept = &mut self.kept_bytes;
            // Fewer blocks than bytes: the file has holes to skip.
            let sparse = meta.blocks.saturating_mul(512) < meta.size;
            let (keys, read) = objects_of(file, meta.size, sparse, |key, offset, data, zeros| {
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
        let objects = match read {
            Ok((keys, read, refs)) => {
                self.out.read_bytes += read;
                for r in refs {
                    if self.keys.insert(r.key.clone()) {
                        self.out.objects.push(r);
                    }
                }
                keys
            }
            Err(_) => return self.unreadable(&Name::from_bytes(vpath), false),
        };
        let (size, mtime_ns, ctime_ns, ino, dev) = stats;
        let seen = self.seen.read(vpath, Seen { size, mtime_ns, ctime_ns, ino, dev, objects });
        let found = Seeing::file(vpath, meta, &seen.objects, hard_link.as_ref());
        if !self.building && Self::met(self.previous, &mut self.matched, class, &found) {
            return;
        }
        let entry = found.entry();
        self.start_building();
        self.push(class, entry);
    }

    fn dir(&mut self, dir: &Path, vdir: Option<&[u8]>) -> std::io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let listing = self.lister.take(dir, vdir.is_none())?;
        let mut vpath: Vec<u8> = Vec::with_capacity(vdir.map_or(0, <[u8]>::len) + 64);
        for &(i, under) in &listing.order {
            let name = listing.name(i);
            // A name is its bytes: Linux names need not be UTF-8.
            vpath.clear();
            match vdir {
                None if name == GIT_DIR => vpath.extend_from_slice(GIT_DIR),
                None => {
                    vpath.extend_from_slice(b"tree/");
                    vpath.extend_from_slice(name);
                }
                Some(parent) => {
                    vpath.extend_from_slice(parent);
                    vpath.push(b'/');
                    vpath.extend_from_slice(name);
                }
            }
            let disk = || dir.join(std::ffi::OsStr::from_bytes(name));
            if under {
                if self.dir(&disk(), Some(&vpath)).is_err() {
                    self.unreadable(&Name::from_bytes(vpath.as_slice()), true);
                }
                continue;
            }
            // Stat'ed relative to the open directory, without following a symlink.
            let meta = match &listing.entries[i].1 {
                Ok(meta) => *meta,
                Err(_) => {
                    self.unreadable(&Name::from_bytes(vpath.as_slice()), true);
                    continue;
                }
            };
            let contentless = |kind, mode| Seeing {
                path: &vpath,
                kind,
                mode,
                size: 0,
                mtime_ms: meta.mtime_ms(),
                objects: &[],
                target: None,
                hard_link: None,
            };
            if meta.is(libc::S_IFDIR) {
                // `.git` itself too: its mode and time are the worktree's.
                self.emit(CaptureClass::Small, contentless(EntryKind::Dir, meta.perm()));
            } else if meta.is(libc::S_IFLNK) {
                match std::fs::read_link(disk()) {
                    Ok(target) => {
                        let target = target.into_os_string();
                        let found =
                            Seeing { target: Some(target.as_bytes()), ..contentless(EntryKind::Symlink, 0o777) };
                        self.emit(CaptureClass::Small, found);
                    }
                    Err(_) => self.unreadable(&Name::from_bytes(vpath.as_slice()), false),
                }
            } else if meta.is(libc::S_IFREG) {
                self.file(dir, name, &vpath, &meta);
            } else if meta.is(libc::S_IFIFO) {
                self.emit(CaptureClass::Small, contentless(EntryKind::Fifo, meta.perm()));
            } else {
                // A socket belongs to a process and a device node to the
                // host: neither is work to keep, but both are named.
                self.out.not_kept.push(Name::from_bytes(vpath.as_slice()).to_string());
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
    walk(config, kind, previous, seen, true)
}

/// As [`snap`], except that a tree exactly as `previous` has it is
/// answered [`Snapped::unchanged`], its manifests not built (the walk
/// only compares what it meets with `previous`, in order).
pub fn snap_changes(
    config: &SnapConfig,
    kind: SnapKind,
    previous: &BTreeMap<CaptureClass, Manifest>,
    seen: &mut SeenFiles,
) -> Result<Snapped, SnapError> {
    walk(config, kind, previous, seen, false)
}

fn walk(
    config: &SnapConfig,
    kind: SnapKind,
    previous: &BTreeMap<CaptureClass, Manifest>,
    seen: &mut SeenFiles,
    build: bool,
) -> Result<Snapped, SnapError> {
    seen.begin();
    let mut out = Snapped::default();
    if build {
        for (class, manifest) in previous {
            out.manifests.insert(*class, Manifest { entries: Vec::with_capacity(manifest.entries.len()) });
        }
    }
    let lister = Lister::default();
    let helpers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4) - 1;
    let mut walk = Walk {
        config,
        previous,
        seen,
        out,
        keys: HashSet::new(),
        links: HashMap::new(),
        kept_bytes: 0,
        building: build,
        matched: [0; CaptureClass::ALL.len()],
        lister: &lister,
    };
    let walked = std::thread::scope(|scope| {
        for _ in 0..helpers {
            // A helper that cannot start (a pids limit) leaves the walk to list more itself.
            let _ = std::thread::Builder::new().name("capture-list".into()).spawn_scoped(scope, || lister.help());
        }
        // Told to stop however the walk ends (a panic too): the scope
        // waits for its helpers.
        struct Stop<'l>(&'l Lister);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.stop();
            }
        }
        let _stop = Stop(&lister);
        walk.dir(&config.worktree, None)
    });
    if let Err(e) = walked {
        walk.seen.end();
        return Err(SnapError::Root(e));
    }
    let all_met = CaptureClass::ALL
        .iter()
        .all(|class| walk.matched[class_index(*class)] == previous.get(class).map_or(0, |m| m.entries.len()));
    if !walk.building && !all_met {
        // Paths `previous` has after the last one met are gone.
        walk.start_building();
    }
    let unchanged = !walk.building;
    let mut out = walk.out;
    out.unchanged = unchanged;
    seen.end();
    if !unchanged {
        for class in CaptureClass::ALL {
            out.manifests.entry(class).or_default().canonicalize();
        }
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
        // A path gone before a kept one, and a new one between: only the new one is read.
        std::fs::remove_file(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("ab"), "four").unwrap();
        let third = snap(&config(dir.path()), SnapKind::Automatic, &second.manifests, &mut seen).unwrap();
        assert_eq!(third.read_bytes, 4, "only the new file is read");
        let paths: Vec<&str> =
            third.manifests[&CaptureClass::Small].entries.iter().filter_map(|e| e.path.to_str()).collect();
        assert_eq!(paths, ["tree/ab", "tree/b"]);
        let fourth = snap(&config(dir.path()), SnapKind::Automatic, &third.manifests, &mut seen).unwrap();
        assert_eq!(fourth.read_bytes, 0, "an unchanged tree is read from no file");
        assert_eq!(fourth.manifests, third.manifests);
    }

    /// A walk that may skip building answers `unchanged` exactly when the
    /// full walk's manifests are `previous`, and otherwise the same
    /// manifests the full walk builds.
    fn agrees_with_a_full_walk(root: &Path, previous: &BTreeMap<CaptureClass, Manifest>) -> bool {
        let full = snap(&config(root), SnapKind::Automatic, previous, &mut SeenFiles::default()).unwrap();
        let quick = snap_changes(&config(root), SnapKind::Automatic, previous, &mut SeenFiles::default()).unwrap();
        assert!(full.manifests.values().all(Manifest::is_canonical));
        let full_is_previous =
            CaptureClass::ALL.iter().all(|c| {
                full.manifests.get(c).map_or(0, |m| m.entries.len()) == previous.get(c).map_or(0, |m| m.entries.len())
            }) && full.manifests.iter().all(|(c, m)| m.entries.is_empty() || previous.get(c) == Some(m));
        assert_eq!(quick.unchanged, full_is_previous, "{:?}", full.manifests);
        if !quick.unchanged {
            assert_eq!(quick.manifests, full.manifests);
        }
        quick.unchanged
    }

    #[test]
    fn an_unchanged_tree_is_told_without_building_and_every_change_is_seen() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Names whose paths sort around a directory's: `a` < `a-b` < `a.b` < `a/x`.
        for d in ["a", "a/sub", ".git", "vendor"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (f, body) in [
            ("a-b", "1"),
            ("a.b", "2"),
            ("a/x", "3"),
            ("a/sub/y", "4"),
            (".gitignore", "5"),
            (".git/HEAD", "6"),
            ("vendor/lib.a", "7"),
            ("z", "8"),
        ] {
            std::fs::write(root.join(f), body).unwrap();
        }
        std::os::unix::fs::symlink("a/x", root.join("link")).unwrap();
        let first = snap(&config(root), SnapKind::Automatic, &BTreeMap::new(), &mut SeenFiles::default()).unwrap();
        let previous = first.manifests;
        assert!(agrees_with_a_full_walk(root, &previous), "the same tree is unchanged");

        let mut seen = SeenFiles::default();
        let warm = snap_changes(&config(root), SnapKind::Automatic, &previous, &mut seen).unwrap();
        assert!(warm.unchanged && warm.manifests.values().all(|m| m.entries.is_empty()), "nothing is built");
        let again = snap_changes(&config(root), SnapKind::Final, &previous, &mut seen).unwrap();
        assert!(again.unchanged && again.read_bytes == 0, "a second walk reads nothing");

        // Each change alone is seen, and the manifests are the full walk's.
        type Change = Box<dyn Fn(&Path)>;
        let changes: Vec<(&str, Change)> = vec![
            ("a file's content in the middle", Box::new(|r| std::fs::write(r.join("a/x"), "changed").unwrap())),
            ("the last path gone", Box::new(|r| std::fs::remove_file(r.join("z")).unwrap())),
            ("a new path", Box::new(|r| std::fs::write(r.join("a/new"), "n").unwrap())),
            (
                "a symlink's target",
                Box::new(|r| {
                    std::fs::remove_file(r.join("link")).unwrap();
                    std::os::unix::fs::symlink("a.b", r.join("link")).unwrap();
                }),
            ),
            (
                "a directory's mode",
                Box::new(|r| {
                    std::fs::set_permissions(r.join("a/sub"), std::fs::Permissions::from_mode(0o700)).unwrap()
                }),
            ),
            ("a bulk file", Box::new(|r| std::fs::write(r.join("vendor/lib.a"), "77").unwrap())),
        ];
        for (what, change) in changes {
            let copy = tempfile::tempdir().unwrap();
            let status = std::process::Command::new("cp")
                .arg("-a")
                .arg(format!("{}/.", root.display()))
                .arg(copy.path())
                .status();
            assert!(status.unwrap().success());
            // The copy's times are the source's: the same tree.
            assert!(agrees_with_a_full_walk(copy.path(), &previous), "{what}: the copy is the same tree");
            change(copy.path());
            assert!(!agrees_with_a_full_walk(copy.path(), &previous), "{what} is a change");
        }
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
