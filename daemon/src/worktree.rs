//! File operations on the worktree for the control plane (see
//! [`sluice_protocol::worktree`]), on a thread of their own that touches
//! files as the workload ([`crate::workload::act_as_workload`]): what it
//! reads and writes, the workload could, and what it makes is the
//! workload's. Every path is resolved beneath the worktree by the kernel
//! (`openat2` with `RESOLVE_BENEATH`), so neither a `..` nor a symlink
//! leads out; a name that is itself a symlink is never followed where an
//! operation acts on the name (a move, a removal, a write's rename).

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use sluice_protocol::session::FrameKind;
use sluice_protocol::worktree::{
    EntryKind, FileHead, FileOp, FilesRoot, Listing, MAX_DEPTH, MAX_LISTED, WorktreeEntry,
};
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use crate::dir_entries::names;
use crate::session_context::SessionContext;

/// Bytes one data frame carries.
const CHUNK: usize = 64 * 1024;

/// A number no other temporary file of this daemon has.
fn next_serial() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Why an operation was refused: one of the protocol's codes, and words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: &'static str,
    pub message: String,
}

fn refused(code: &'static str, message: impl Into<String>) -> Refused {
    Refused { code, message: message.into() }
}

fn io_refused(e: std::io::Error, what: &str) -> Refused {
    let code = match e.raw_os_error() {
        Some(libc::EXDEV) => return refused("outside-worktree", format!("{what} leads out of the worktree")),
        Some(libc::ELOOP) => return refused("outside-worktree", format!("{what} goes through a symlink here")),
        Some(libc::ENOENT) => "not-found",
        Some(libc::ENOTDIR) => "not-a-directory",
        Some(libc::EISDIR) => "is-a-directory",
        Some(libc::EEXIST) => "exists",
        Some(libc::ENOTEMPTY) => "not-empty",
        Some(libc::EACCES) | Some(libc::EPERM) => "permission-denied",
        Some(libc::ENOSYS) => {
            return refused("failed", "this kernel cannot resolve paths beneath a directory (openat2, Linux 5.6)");
        }
        _ => "failed",
    };
    refused(code, format!("{what}: {e}"))
}

/// A path's components within the worktree: no NUL, not absolute, no
/// `..`; `.` and empty components are dropped (none at all is the
/// worktree itself).
pub fn components(path: &str) -> Result<Vec<&OsStr>, Refused> {
    let parts = sluice_protocol::worktree::path_parts(path).map_err(|(code, message)| refused(code, message))?;
    Ok(parts.into_iter().map(OsStr::new).collect())
}

fn c_name(name: &OsStr) -> CString {
    CString::new(name.as_bytes()).expect("components hold no NUL")
}

fn check(result: libc::c_long) -> std::io::Result<libc::c_long> {
    if result < 0 { Err(std::io::Error::last_os_error()) } else { Ok(result) }
}

/// The directory an operation's paths start from, and how the kernel
/// resolves them there.
struct Root {
    fd: OwnedFd,
    resolve: u64,
    base: FilesRoot,
}

impl Root {
    /// The worktree (every path beneath it), or the workload's filesystem
    /// (paths resolved as the workload's own would be).
    fn open(base: FilesRoot, worktree: &Path) -> Result<Root, Refused> {
        let (dir, resolve) = match base {
            FilesRoot::Worktree => (worktree, libc::RESOLVE_BENEATH),
            FilesRoot::Filesystem => (Path::new("/"), libc::RESOLVE_IN_ROOT),
        };
        let fd = std::fs::File::open(dir).map_err(|e| io_refused(e, "the worktree"))?;
        Ok(Root { fd: fd.into(), resolve: resolve | libc::RESOLVE_NO_MAGICLINKS, base })
    }

    fn parts<'a>(&self, path: &'a str) -> Result<Vec<&'a OsStr>, Refused> {
        let parts = self.base.parts(path).map_err(|(code, message)| refused(code, message))?;
        Ok(parts.into_iter().map(OsStr::new).collect())
    }
}

/// Opens `parts` from `root`: every step resolved by the kernel inside
/// it, magic links refused.
fn open_beneath(root: &Root, parts: &[&OsStr], flags: i32, mode: u32) -> std::io::Result<OwnedFd> {
    let joined: Vec<u8> = if parts.is_empty() {
        b".".to_vec()
    } else {
        parts.iter().map(|p| p.as_bytes()).collect::<Vec<_>>().join(&b'/')
    };
    let path = CString::new(joined).expect("components hold no NUL");
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if flags & libc::O_CREAT != 0 { u64::from(mode) } else { 0 };
    how.resolve = root.resolve;
    // SAFETY: a system call with a valid path, struct and size.
    let fd = check(unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.fd.as_raw_fd(),
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    })?;
    // SAFETY: the kernel just gave this descriptor to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn open_dir(root: &Root, parts: &[&OsStr]) -> std::io::Result<OwnedFd> {
    open_beneath(root, parts, libc::O_RDONLY | libc::O_DIRECTORY, 0)
}

/// The directory an operation's name is in, and the name (never the
/// worktree itself).
fn parent_of<'a>(root: &Root, parts: &[&'a OsStr], what: &str) -> Result<(OwnedFd, &'a OsStr), Refused> {
    let Some((name, parent)) = parts.split_last() else {
        return Err(refused("invalid", format!("{what} names the worktree itself")));
    };
    Ok((open_dir(root, parent).map_err(|e| io_refused(e, what))?, name))
}

fn stat_at(dir: &OwnedFd, name: &CString) -> std::io::Result<libc::stat> {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, name and buffer.
    check(unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } as _)?;
    Ok(st)
}

fn stat_fd(fd: &OwnedFd) -> std::io::Result<libc::stat> {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and buffer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } as _)?;
    Ok(st)
}

fn kind_of(st: &libc::stat) -> EntryKind {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => EntryKind::File,
        libc::S_IFDIR => EntryKind::Directory,
        libc::S_IFLNK => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

fn modified_ms(st: &libc::stat) -> i64 {
    st.st_mtime * 1000 + st.st_mtime_nsec / 1_000_000
}

fn entry(name: &[u8], st: &libc::stat) -> WorktreeEntry {
    let (name, name_hex) = match std::str::from_utf8(name) {
        Ok(text) => (Some(text.to_owned()), None),
        Err(_) => (None, Some(name.iter().map(|b| format!("{b:02x}")).collect())),
    };
    WorktreeEntry {
        name,
        name_hex,
        kind: kind_of(st),
        size: st.st_size as u64,
        mode: st.st_mode & 0o7777,
        modified_ms: modified_ms(st),
    }
}

fn list_into(dir: &OwnedFd, prefix: &[u8], depth: u32, listing: &mut Listing) -> std::io::Result<()> {
    for name in names(dir)? {
        if listing.entries.len() >= MAX_LISTED {
            listing.truncated = true;
            return Ok(());
        }
        let c = c_name(&name);
        let Ok(st) = stat_at(dir, &c) else { continue };
        let path = if prefix.is_empty() { name.as_bytes().to_vec() } else { [prefix, b"/", name.as_bytes()].concat() };
        listing.entries.push(entry(&path, &st));
        if depth > 1 && kind_of(&st) == EntryKind::Directory {
            // SAFETY: a valid descriptor and name; a symlink is not followed.
            let sub = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            if sub >= 0 {
                // SAFETY: just opened, ours alone.
                let sub = unsafe { OwnedFd::from_raw_fd(sub) };
                list_into(&sub, &path, depth - 1, listing)?;
            }
        }
    }
    Ok(())
}

/// Makes each of `parts` under `root` that is missing, each step
/// resolved beneath the worktree; answers the last.
fn make_dirs(root: &Root, parts: &[&OsStr]) -> std::io::Result<OwnedFd> {
    for (i, part) in parts.iter().enumerate() {
        let dir = open_dir(root, &parts[..i])?;
        // SAFETY: valid descriptor and name.
        let made = unsafe { libc::mkdirat(dir.as_raw_fd(), c_name(part).as_ptr(), 0o755) };
        if made < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(e);
            }
        }
    }
    open_dir(root, parts)
}

/// Removes `name` in `dir` and, for a directory, all it holds (symlinks
/// removed, never followed).
fn remove_tree(dir: &OwnedFd, name: &CString, depth: u32) -> std::io::Result<()> {
    let st = stat_at(dir, name)?;
    if kind_of(&st) == EntryKind::Directory {
        if depth > 256 {
            return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
        }
        // SAFETY: valid descriptor and name; not through a symlink.
        let sub = check(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        } as _)?;
        // SAFETY: just opened, ours alone.
        let sub = unsafe { OwnedFd::from_raw_fd(sub as i32) };
        for child in names(&sub)? {
            remove_tree(&sub, &c_name(&child), depth + 1)?;
        }
        // SAFETY: valid descriptor and name.
        check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) } as _)?;
    } else {
        // SAFETY: valid descriptor and name.
        check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } as _)?;
    }
    Ok(())
}

/// Puts a file named `name` in `dir` whole: written by `fill` beside its
/// place (never through a symlink), given `mode`, then renamed over the
/// name (the name itself, never what a symlink there points at). A
/// failure leaves nothing.
fn put_file(
    dir: &OwnedFd,
    name: &OsStr,
    mode: u32,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temp = c_name(OsStr::new(&format!(
        ".{}.sluice-{}-{}",
        name.to_string_lossy().chars().take(64).collect::<String>(),
        std::process::id(),
        next_serial()
    )));
    // SAFETY: valid descriptor and name; a fresh file, never through a symlink.
    let fd = check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            temp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode,
        )
    } as _)?;
    // SAFETY: just opened, ours alone.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    let filled = fill(&mut file).and_then(|()| {
        // SAFETY: a valid descriptor; the mode asked for, whatever the umask.
        check(unsafe { libc::fchmod(file.as_raw_fd(), mode) } as _).map(|_| ())
    });
    let target = c_name(name);
    // SAFETY: valid descriptors and names.
    let placed = filled.and_then(|()| {
        check(unsafe { libc::renameat(dir.as_raw_fd(), temp.as_ptr(), dir.as_raw_fd(), target.as_ptr()) } as _)
            .map(|_| ())
    });
    if placed.is_err() {
        // SAFETY: valid descriptor and name.
        unsafe { libc::unlinkat(dir.as_raw_fd(), temp.as_ptr(), 0) };
    }
    placed
}

/// Passes each chunk of the client's input to `each` until its end. The
/// end is an empty chunk (the client's `StdinEof`); input that stops
/// without it (the client went away) is an error, so nothing it started
/// is put in place.
fn take_input(
    input: &mut mpsc::Receiver<Vec<u8>>,
    mut each: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    loop {
        match input.blocking_recv() {
            Some(bytes) if bytes.is_empty() => return Ok(()),
            Some(bytes) => each(&bytes)?,
            None => return Err(std::io::Error::other("the input broke off before its end")),
        }
    }
}

/// Archive bytes on their way to the session, in frames of [`CHUNK`].
struct Packer<'a> {
    out: &'a mpsc::Sender<Out>,
    pending: Vec<u8>,
}

impl Packer<'_> {
    fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= CHUNK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.pending.is_empty() {
            let _ = self.out.blocking_send(Out::Data(std::mem::take(&mut self.pending)));
        }
    }
}

/// Packs what `dir` holds, under `prefix`: directories, files and
/// symlinks (as links); anything else is left out.
fn pack_into(dir: &OwnedFd, prefix: &[u8], depth: u32, packer: &mut Packer<'_>) -> std::io::Result<()> {
    use sluice_protocol::tar::{Header, Member, padding};
    if depth > 256 {
        return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
    }
    for name in names(dir)? {
        let c = c_name(&name);
        let Ok(st) = stat_at(dir, &c) else { continue };
        let path = if prefix.is_empty() { name.as_bytes().to_vec() } else { [prefix, b"/", name.as_bytes()].concat() };
        let (mode, mtime_ms) = (st.st_mode & 0o7777, modified_ms(&st));
        match kind_of(&st) {
            EntryKind::Directory => {
                packer.push(&Header { path: &path, mode, mtime_ms, member: Member::Dir }.encode());
                // SAFETY: valid descriptor and name; not through a symlink.
                let sub = check(unsafe {
                    libc::openat(
                        dir.as_raw_fd(),
                        c.as_ptr(),
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    )
                } as _)?;
                // SAFETY: just opened, ours alone.
                let sub = unsafe { OwnedFd::from_raw_fd(sub as i32) };
                pack_into(&sub, &path, depth + 1, packer)?;
            }
            EntryKind::Symlink => {
                let mut target = vec![0u8; 4096];
                // SAFETY: valid descriptor, name and buffer.
                let n = check(unsafe {
                    libc::readlinkat(dir.as_raw_fd(), c.as_ptr(), target.as_mut_ptr().cast(), target.len())
                } as _)?;
                target.truncate(n as usize);
                packer.push(
                    &Header { path: &path, mode, mtime_ms, member: Member::Symlink { target: &target } }.encode(),
                );
            }
            EntryKind::File => {
                // SAFETY: valid descriptor and name; not through a symlink.
                let fd = check(unsafe {
                    libc::openat(dir.as_raw_fd(), c.as_ptr(), libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                } as _)?;
                // SAFETY: just opened, ours alone.
                let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) });
                // The size it has now: a file that changes meanwhile is cut or padded to it.
                let size = file.metadata()?.len();
                packer.push(&Header { path: &path, mode, mtime_ms, member: Member::File { size } }.encode());
                let mut reader = std::io::Read::take(file, size);
                let mut buf = vec![0u8; CHUNK];
                let mut copied = 0u64;
                loop {
                    let n = std::io::Read::read(&mut reader, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    copied += n as u64;
                    packer.push(&buf[..n]);
                }
                let short = (size - copied) as usize;
                packer.push(&vec![0u8; short]);
                packer.push(&vec![0u8; padding(size)]);
            }
            EntryKind::Other => {}
        }
    }
    Ok(())
}

enum Unpack {
    Refused(Refused),
    Io(std::io::Error),
}

impl From<std::io::Error> for Unpack {
    fn from(e: std::io::Error) -> Unpack {
        Unpack::Io(e)
    }
}

/// Unpacks the archive coming on `input` into `dir` (the worktree's
/// `parts`): kept aside whole, checked member by member, then put in place.
fn unpack(
    root: &Root,
    parts: &[&OsStr],
    dir: &OwnedFd,
    input: &mut mpsc::Receiver<Vec<u8>>,
    send: &dyn Fn(Out),
) -> Result<sluice_protocol::worktree::Unpacked, Unpack> {
    let kept = c_name(OsStr::new(&format!(".sluice-unpack-{}-{}.tar", std::process::id(), next_serial())));
    // SAFETY: valid descriptor and name; a fresh file.
    let fd = check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            kept.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600,
        )
    } as _)?;
    // The archive is read back through this descriptor; its name goes at once.
    // SAFETY: valid descriptor and name.
    unsafe { libc::unlinkat(dir.as_raw_fd(), kept.as_ptr(), 0) };
    // SAFETY: just opened, ours alone.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    send(Out::Ready);
    take_input(input, |bytes| std::io::Write::write_all(&mut file, bytes))?;
    let rewound = |file: &mut std::fs::File| -> std::io::Result<std::fs::File> {
        std::io::Seek::seek(file, std::io::SeekFrom::Start(0))?;
        file.try_clone()
    };
    // First every member is checked: nothing is written for an archive refused.
    let mut links: Vec<Vec<u8>> = Vec::new();
    let mut archive = tar::Archive::new(rewound(&mut file)?);
    for member in archive.entries()? {
        let member = member?;
        let path = member.path_bytes().into_owned();
        let text = String::from_utf8_lossy(&path).into_owned();
        sluice_protocol::worktree::path_parts(&text)
            .map_err(|(code, why)| Unpack::Refused(refused(code, format!("the archive's member {text:?}: {why}"))))?;
        let under_link = links.iter().any(|link| path.starts_with(link) && path.get(link.len()) == Some(&b'/'));
        if under_link {
            return Err(Unpack::Refused(refused(
                "outside-worktree",
                format!("the archive's member {text:?} lies under one of its own symlinks"),
            )));
        }
        if member.header().entry_type().is_symlink() {
            links.push(path.strip_suffix(b"/").unwrap_or(&path).to_vec());
        }
    }
    let mut done = sluice_protocol::worktree::Unpacked { files: 0, directories: 0, symlinks: 0, skipped: 0 };
    let mut archive = tar::Archive::new(rewound(&mut file)?);
    for member in archive.entries()? {
        let mut member = member?;
        let path = String::from_utf8_lossy(&member.path_bytes()).into_owned();
        let inner = components(&path).map_err(Unpack::Refused)?;
        let whole: Vec<&OsStr> = parts.iter().copied().chain(inner.iter().copied()).collect();
        let mode = member.header().mode().unwrap_or(0o644) & 0o777;
        let kind = member.header().entry_type();
        if kind.is_dir() {
            let made = make_dirs(root, &whole)?;
            // SAFETY: a valid descriptor.
            check(unsafe { libc::fchmod(made.as_raw_fd(), mode | 0o700) } as _)?;
            done.directories += 1;
            continue;
        }
        let Some((name, parent)) = whole.split_last() else { continue };
        if kind.is_file() {
            let parent = make_dirs(root, parent)?;
            put_file(&parent, name, mode, |file| std::io::copy(&mut member, file).map(|_| ()))?;
            done.files += 1;
        } else if kind.is_symlink() {
            let parent = make_dirs(root, parent)?;
            let target = member.link_name_bytes().map(|t| t.into_owned()).unwrap_or_default();
            let target = CString::new(target).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
            let c = c_name(name);
            // A link replaces what was there, unless that is a directory.
            // SAFETY: valid descriptor and name.
            unsafe { libc::unlinkat(parent.as_raw_fd(), c.as_ptr(), 0) };
            // SAFETY: valid descriptor, target and name.
            check(unsafe { libc::symlinkat(target.as_ptr(), parent.as_raw_fd(), c.as_ptr()) } as _)?;
            done.symlinks += 1;
        } else {
            done.skipped += 1;
        }
    }
    Ok(done)
}

/// What the operation's thread sends the session.
enum Out {
    /// A write's file is ready for its bytes.
    Ready,
    Head(FileHead),
    Data(Vec<u8>),
    Answer(serde_json::Value),
    Refused(Refused),
}

/// Runs `op` from `base` (the worktree, or the filesystem's root), on
/// the calling (workload) thread: its input from `input`, what it says to
/// `out`.
fn run(
    op: FileOp,
    base: FilesRoot,
    worktree: &Path,
    mut input: mpsc::Receiver<Vec<u8>>,
    out: &mpsc::Sender<Out>,
) -> Result<(), Refused> {
    let root = Root::open(base, worktree)?;
    let send = |message: Out| {
        let _ = out.blocking_send(message);
    };
    match op {
        FileOp::Read { path, offset, length } => {
            let parts = root.parts(&path)?;
            let file = open_beneath(&root, &parts, libc::O_RDONLY, 0).map_err(|e| io_refused(e, &path))?;
            let st = stat_fd(&file).map_err(|e| io_refused(e, &path))?;
            match kind_of(&st) {
                EntryKind::File => {}
                EntryKind::Directory => return Err(refused("is-a-directory", format!("{path} is a directory"))),
                _ => return Err(refused("not-a-file", format!("{path} is not a regular file"))),
            }
            send(Out::Head(FileHead {
                size: st.st_size as u64,
                mode: st.st_mode & 0o7777,
                modified_ms: modified_ms(&st),
            }));
            let mut file = std::fs::File::from(file);
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(offset)).map_err(|e| io_refused(e, &path))?;
            let mut left = length.unwrap_or(u64::MAX);
            let mut buf = vec![0u8; CHUNK];
            let mut sent = 0u64;
            while left > 0 {
                let want = buf.len().min(left.min(usize::MAX as u64) as usize);
                let n = std::io::Read::read(&mut file, &mut buf[..want]).map_err(|e| io_refused(e, &path))?;
                if n == 0 {
                    break;
                }
                left -= n as u64;
                sent += n as u64;
                if out.blocking_send(Out::Data(buf[..n].to_vec())).is_err() {
                    return Ok(());
                }
            }
            send(Out::Answer(serde_json::json!({"bytes": sent})));
        }
        FileOp::Write { path, mode, parents } => {
            let parts = root.parts(&path)?;
            let Some((name, parent_parts)) = parts.split_last() else {
                return Err(refused("invalid", "a write names a file, not the worktree"));
            };
            let dir = if parents { make_dirs(&root, parent_parts) } else { open_dir(&root, parent_parts) }
                .map_err(|e| io_refused(e, &path))?;
            let mode = mode.map_or(0o644, |m| m & 0o777);
            put_file(&dir, name, mode, |file| {
                send(Out::Ready);
                take_input(&mut input, |bytes| std::io::Write::write_all(file, bytes))
            })
            .map_err(|e| io_refused(e, &path))?;
            let st = stat_at(&dir, &c_name(name)).map_err(|e| io_refused(e, &path))?;
            send(Out::Answer(serde_json::to_value(entry(path.as_bytes(), &st)).unwrap_or_default()));
        }
        FileOp::Pack { path } => {
            let parts = root.parts(&path)?;
            let dir = open_dir(&root, &parts).map_err(|e| io_refused(e, &path))?;
            send(Out::Ready);
            let mut packer = Packer { out, pending: Vec::new() };
            pack_into(&dir, b"", 0, &mut packer).map_err(|e| io_refused(e, &path))?;
            packer.push(&sluice_protocol::tar::END);
            packer.flush();
            send(Out::Answer(serde_json::json!({})));
        }
        FileOp::Watch { path, recursive } => {
            let parts = root.parts(&path)?;
            let dir = open_dir(&root, &parts).map_err(|e| io_refused(e, &path))?;
            // Each change goes on as it is heard; a full queue is an overflow.
            let (changes, mut heard) = mpsc::channel::<Vec<u8>>(256);
            let forwarding = std::thread::scope(|scope| {
                scope.spawn(|| {
                    while let Some(change) = heard.blocking_recv() {
                        if out.blocking_send(Out::Data(change)).is_err() {
                            return;
                        }
                    }
                });
                let watched =
                    crate::worktree_watch::watch(dir, recursive, &changes, &|| out.is_closed(), &|| send(Out::Ready));
                drop(changes);
                watched
            });
            forwarding.map_err(|e| io_refused(e, &path))?;
        }
        FileOp::Unpack { path } => {
            let parts = root.parts(&path)?;
            let dir = make_dirs(&root, &parts).map_err(|e| io_refused(e, &path))?;
            let unpacked = unpack(&root, &parts, &dir, &mut input, &send).map_err(|e| match e {
                Unpack::Refused(refusal) => refusal,
                Unpack::Io(e) => io_refused(e, &path),
            })?;
            send(Out::Answer(serde_json::to_value(unpacked).unwrap_or_default()));
        }
        FileOp::List { path, depth } => {
            let parts = root.parts(&path)?;
            let dir = open_dir(&root, &parts).map_err(|e| io_refused(e, &path))?;
            let mut listing = Listing { entries: Vec::new(), truncated: false };
            list_into(&dir, b"", depth.clamp(1, MAX_DEPTH), &mut listing).map_err(|e| io_refused(e, &path))?;
            send(Out::Answer(serde_json::to_value(listing).unwrap_or_default()));
        }
        FileOp::Mkdir { path, parents } => {
            let parts = root.parts(&path)?;
            if parents {
                make_dirs(&root, &parts).map_err(|e| io_refused(e, &path))?;
            } else {
                let (dir, name) = parent_of(&root, &parts, &path)?;
                // SAFETY: valid descriptor and name.
                check(unsafe { libc::mkdirat(dir.as_raw_fd(), c_name(name).as_ptr(), 0o755) } as _)
                    .map_err(|e| io_refused(e, &path))?;
            }
            send(Out::Answer(serde_json::json!({})));
        }
        FileOp::Move { from, to, overwrite } => {
            let (from_parts, to_parts) = (root.parts(&from)?, root.parts(&to)?);
            let (from_dir, from_name) = parent_of(&root, &from_parts, &from)?;
            let (to_dir, to_name) = parent_of(&root, &to_parts, &to)?;
            let flags = if overwrite { 0 } else { libc::RENAME_NOREPLACE };
            // SAFETY: valid descriptors and names; names themselves move, never followed.
            check(unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    from_dir.as_raw_fd(),
                    c_name(from_name).as_ptr(),
                    to_dir.as_raw_fd(),
                    c_name(to_name).as_ptr(),
                    flags,
                )
            })
            .map_err(|e| io_refused(e, &format!("{from} to {to}")))?;
            send(Out::Answer(serde_json::json!({})));
        }
        FileOp::Remove { path, recursive } => {
            let parts = root.parts(&path)?;
            let (dir, name) = parent_of(&root, &parts, &path)?;
            let c = c_name(name);
            let removed = if recursive {
                remove_tree(&dir, &c, 0)
            } else {
                let st = stat_at(&dir, &c).map_err(|e| io_refused(e, &path))?;
                let flags = if kind_of(&st) == EntryKind::Directory { libc::AT_REMOVEDIR } else { 0 };
                // SAFETY: valid descriptor and name.
                check(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) } as _).map(|_| ())
            };
            removed.map_err(|e| io_refused(e, &path))?;
            send(Out::Answer(serde_json::json!({})));
        }
    }
    Ok(())
}

/// Serves one file operation on a session: its input from the client's
/// `Stdin` frames, its answer as frames (see the protocol).
pub async fn serve<R: AsyncRead + Unpin>(
    op: FileOp,
    base: FilesRoot,
    mut reader: R,
    outbox: &mpsc::Sender<(FrameKind, Vec<u8>)>,
    context: &SessionContext,
) {
    let (input_tx, input) = mpsc::channel::<Vec<u8>>(16);
    let (out, mut said) = mpsc::channel::<Out>(16);
    let (ids, root) = (context.processes.ids(), context.workdir.clone());
    let writes = matches!(op, FileOp::Write { .. } | FileOp::Unpack { .. });
    let worker = std::thread::Builder::new().name("worktree-files".into()).spawn(move || {
        if let Err(e) = crate::workload::act_as_workload(ids) {
            let _ = out.blocking_send(Out::Refused(refused("failed", format!("cannot act as the workload: {e}"))));
            return;
        }
        if let Err(refusal) = run(op, base, &root, input, &out) {
            let _ = out.blocking_send(Out::Refused(refusal));
        }
    });
    if worker.is_err() {
        let _ =
            outbox.send((FrameKind::Refused, refusal_bytes(&refused("failed", "no thread for the operation")))).await;
        return;
    }
    if !writes {
        drop(input_tx);
        // A read's client only says it is there; its going away ends the
        // read (or the watch): the thread hears it when its next send fails.
        loop {
            tokio::select! {
                message = said.recv() => match message {
                    Some(message) => {
                        if forward(message, outbox).await.is_err() {
                            return;
                        }
                    }
                    None => return,
                },
                frame = sluice_session::read_frame(&mut reader) => match frame {
                    Ok(Some(_)) => {}
                    _ => return,
                },
            }
        }
    }
    let mut input_tx = Some(input_tx);
    loop {
        tokio::select! {
            message = said.recv() => match message {
                Some(message) => {
                    if forward(message, outbox).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
            frame = sluice_session::read_frame(&mut reader), if input_tx.is_some() => match frame {
                // An empty chunk is the end (see `take_input`): none is passed before it.
                Ok(Some((FrameKind::Stdin, bytes))) if bytes.is_empty() => {}
                Ok(Some((FrameKind::Stdin, bytes))) => {
                    if let Some(tx) = &input_tx && tx.send(bytes).await.is_err() {
                        input_tx = None;
                    }
                }
                Ok(Some((FrameKind::StdinEof, _))) => {
                    if let Some(tx) = input_tx.take() {
                        let _ = tx.send(Vec::new()).await;
                    }
                }
                Ok(Some(_)) => {}
                // The client went away mid-write: nothing is renamed into place.
                _ => return,
            },
        }
    }
}

fn refusal_bytes(refusal: &Refused) -> Vec<u8> {
    serde_json::to_vec(&sluice_protocol::session::Refusal {
        code: refusal.code.into(),
        message: refusal.message.clone(),
    })
    .unwrap_or_default()
}

async fn forward(message: Out, outbox: &mpsc::Sender<(FrameKind, Vec<u8>)>) -> Result<(), ()> {
    let frame = match message {
        Out::Ready => (FrameKind::Started, Vec::new()),
        Out::Head(head) => (FrameKind::Started, serde_json::to_vec(&head).unwrap_or_default()),
        Out::Data(bytes) => (FrameKind::Stdout, bytes),
        Out::Answer(value) => (FrameKind::Result, serde_json::to_vec(&value).unwrap_or_default()),
        Out::Refused(refusal) => (FrameKind::Refused, refusal_bytes(&refusal)),
    };
    outbox.send(frame).await.map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_relative_and_below() {
        assert_eq!(components("a/./b//c").unwrap(), [OsStr::new("a"), OsStr::new("b"), OsStr::new("c")]);
        assert!(components("").unwrap().is_empty());
        for (path, code) in [
            ("/etc/passwd", "outside-worktree"),
            ("a/../../x", "outside-worktree"),
            ("..", "outside-worktree"),
            ("a\0b", "invalid"),
        ] {
            assert_eq!(components(path).unwrap_err().code, code, "{path:?}");
        }
    }

    fn op(root: &Path, op: FileOp, input: &[&[u8]]) -> (Vec<Out>, Result<(), Refused>) {
        let (input_tx, input_rx) = mpsc::channel(16);
        for chunk in input {
            input_tx.try_send(chunk.to_vec()).unwrap();
        }
        // The end, as the session says it.
        input_tx.try_send(Vec::new()).unwrap();
        drop(input_tx);
        let (out, mut said) = mpsc::channel(1024);
        let result = run(op, FilesRoot::Worktree, root, input_rx, &out);
        drop(out);
        let mut messages = Vec::new();
        while let Ok(m) = said.try_recv() {
            messages.push(m);
        }
        (messages, result)
    }

    #[test]
    fn from_the_filesystem_root_paths_are_absolute_and_resolved_as_the_workloads() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("here")).unwrap();
        let at = |name: &str| format!("{}/{name}", dir.path().display());
        let in_filesystem = |op: FileOp, input: &[&[u8]]| {
            let (input_tx, input_rx) = mpsc::channel(input.len() + 1);
            for chunk in input.iter().chain([&&b""[..]]) {
                input_tx.try_send(chunk.to_vec()).unwrap();
            }
            let (out, mut said) = mpsc::channel(64);
            let result = run(op, FilesRoot::Filesystem, Path::new("/nonexistent"), input_rx, &out);
            drop(out);
            let mut data = Vec::new();
            while let Ok(message) = said.try_recv() {
                if let Out::Data(bytes) = message {
                    data.extend(bytes);
                }
            }
            (data, result)
        };
        let write = FileOp::Write { path: at("a/b/file"), mode: None, parents: true };
        in_filesystem(write, &[b"whole"]).1.unwrap();
        assert_eq!(std::fs::read(dir.path().join("a/b/file")).unwrap(), b"whole");
        // An absolute symlink is followed as the workload's own path would be.
        let read = FileOp::Read { path: at("here/a/b/file"), offset: 0, length: None };
        assert_eq!(in_filesystem(read, &[]), (b"whole".to_vec(), Ok(())));
        for path in ["relative/file".to_owned(), at("a/../a/b/file"), at("a\0b")] {
            let refused = in_filesystem(FileOp::Read { path: path.clone(), offset: 0, length: None }, &[]).1;
            assert!(refused.is_err(), "{path:?}");
        }
    }

    #[test]
    fn symlinks_out_of_the_worktree_are_refused_and_nothing_outside_changes() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"outside").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("out")).unwrap();
        std::os::unix::fs::symlink("/etc", root.path().join("etc")).unwrap();
        let path = |p: &str| p.to_owned();
        let read = op(root.path(), FileOp::Read { path: path("out/secret"), offset: 0, length: None }, &[]).1;
        assert_eq!(read.unwrap_err().code, "outside-worktree");
        let read = op(root.path(), FileOp::Read { path: path("etc/passwd"), offset: 0, length: None }, &[]).1;
        assert_eq!(read.unwrap_err().code, "outside-worktree");
        let write = op(root.path(), FileOp::Write { path: path("out/secret"), mode: None, parents: false }, &[b"x"]).1;
        assert_eq!(write.unwrap_err().code, "outside-worktree");
        let made = op(root.path(), FileOp::Mkdir { path: path("out/made"), parents: true }, &[]).1;
        assert_eq!(made.unwrap_err().code, "outside-worktree");
        let listed = op(root.path(), FileOp::List { path: path("out"), depth: 1 }, &[]).1;
        assert_eq!(listed.unwrap_err().code, "outside-worktree");
        // The link itself may go; what it pointed at stays.
        op(root.path(), FileOp::Remove { path: path("out"), recursive: true }, &[]).1.unwrap();
        assert_eq!(std::fs::read(outside.path().join("secret")).unwrap(), b"outside");
        assert!(!root.path().join("out").exists());
    }

    /// An archive's members: path, kind, mode, and bytes or link target.
    fn members(archive: &[u8]) -> Vec<(String, u8, u32, Vec<u8>)> {
        let mut archive = tar::Archive::new(archive);
        let mut found = Vec::new();
        for member in archive.entries().unwrap() {
            let mut member = member.unwrap();
            let path = String::from_utf8_lossy(&member.path_bytes()).into_owned();
            let (kind, mode) = (member.header().entry_type().as_byte(), member.header().mode().unwrap());
            let mut body = member.link_name_bytes().map(|l| l.into_owned()).unwrap_or_default();
            std::io::Read::read_to_end(&mut member, &mut body).unwrap();
            found.push((path, kind, mode, body));
        }
        assert!(found.len() >= 5, "{found:?}");
        found
    }

    fn data(said: &[Out]) -> Vec<u8> {
        said.iter().filter_map(|m| if let Out::Data(d) = m { Some(d.clone()) } else { None }).flatten().collect()
    }

    /// A tree packs and unpacks to the same tree (files with their modes,
    /// directories, symlinks as links); an archive with a member out of
    /// its directory, or under one of its own symlinks, is refused whole.
    #[test]
    fn trees_pack_and_unpack_to_the_same_tree_and_bad_archives_write_nothing() {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("src");
        std::fs::create_dir_all(src.join("a/empty")).unwrap();
        std::fs::write(src.join("a/one.txt"), b"one").unwrap();
        std::fs::write(src.join("big.bin"), vec![7u8; 200_000]).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(src.join("big.bin"), std::fs::Permissions::from_mode(0o750)).unwrap();
        std::os::unix::fs::symlink("a/one.txt", src.join("link")).unwrap();
        let (said, packed) = op(root.path(), FileOp::Pack { path: "src".into() }, &[]);
        packed.unwrap();
        let archive = data(&said);
        let (said, unpacked) = op(root.path(), FileOp::Unpack { path: "dst/in".into() }, &[&archive]);
        unpacked.unwrap();
        let Some(Out::Answer(counts)) = said.last() else { panic!("an answer") };
        assert_eq!(counts, &serde_json::json!({"files": 2, "directories": 2, "symlinks": 1, "skipped": 0}));
        let dst = root.path().join("dst/in");
        assert_eq!(std::fs::read(dst.join("a/one.txt")).unwrap(), b"one");
        assert_eq!(std::fs::read(dst.join("big.bin")).unwrap(), vec![7u8; 200_000]);
        assert_eq!(std::fs::metadata(dst.join("big.bin")).unwrap().permissions().mode() & 0o777, 0o750);
        assert!(dst.join("a/empty").is_dir());
        assert_eq!(std::fs::read_link(dst.join("link")).unwrap(), std::path::Path::new("a/one.txt"));
        let (said, _) = op(&dst, FileOp::Pack { path: String::new() }, &[]);
        assert!(members(&data(&said)) == members(&archive), "packed back to the same tree");

        let member = |path: &str, kind: tar::EntryType, link: Option<&str>| {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(kind);
            header.set_size(if kind == tar::EntryType::Regular { 1 } else { 0 });
            header.set_mode(0o644);
            if let Some(link) = link {
                header.set_link_name(link).unwrap();
            }
            (header, path.to_owned())
        };
        for members in [
            vec![
                member("fine.txt", tar::EntryType::Regular, None),
                member("../../escape.txt", tar::EntryType::Regular, None),
            ],
            vec![
                member("etc", tar::EntryType::Symlink, Some("/etc")),
                member("etc/evil", tar::EntryType::Regular, None),
            ],
        ] {
            let mut builder = tar::Builder::new(Vec::new());
            for (mut header, path) in members {
                let body: &[u8] = if header.entry_type() == tar::EntryType::Regular { b"x" } else { b"" };
                // The raw name, as a hostile archive would carry it.
                header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
                header.set_cksum();
                builder.append(&header, body).unwrap();
            }
            let bad = builder.into_inner().unwrap();
            let refused = op(root.path(), FileOp::Unpack { path: "bad".into() }, &[&bad]).1.unwrap_err();
            assert_eq!(refused.code, "outside-worktree", "{refused:?}");
            let left: Vec<_> = std::fs::read_dir(root.path().join("bad")).unwrap().collect();
            assert!(left.is_empty(), "nothing was written: {left:?}");
        }
    }

    /// A watch hears a create, a change, a rename and a removal, in order,
    /// below the directory it watches.
    #[test]
    fn a_watch_hears_changes_in_order() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("w/in")).unwrap();
        let (out, mut said) = mpsc::channel(1024);
        let (_input_tx, input) = mpsc::channel(1);
        let watched_root = root.path().to_path_buf();
        let watcher = std::thread::spawn(move || {
            run(FileOp::Watch { path: "w".into(), recursive: true }, FilesRoot::Worktree, &watched_root, input, &out)
        });
        match said.blocking_recv() {
            Some(Out::Ready) => {}
            Some(Out::Refused(r)) => panic!("refused: {r:?}"),
            _ => panic!("something else"),
        }
        let f = root.path().join("w/in/f");
        std::fs::write(&f, b"a").unwrap();
        std::fs::rename(&f, root.path().join("w/in/g")).unwrap();
        std::fs::remove_file(root.path().join("w/in/g")).unwrap();
        let mut seen = Vec::new();
        while seen.len() < 4 {
            let Some(Out::Data(change)) = said.blocking_recv() else { panic!("changes: {seen:?}") };
            let change: serde_json::Value = serde_json::from_slice(&change).unwrap();
            seen.push(format!("{} {}", change["kind"].as_str().unwrap(), change["path"].as_str().unwrap()));
        }
        assert_eq!(seen, ["created in/f", "modified in/f", "renamed in/g", "removed in/g"]);
        drop(said);
        watcher.join().unwrap().unwrap();
    }

    /// A write whose client goes away before its input's end puts nothing
    /// in place and leaves no temporary file.
    #[test]
    fn a_write_cut_short_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("kept.txt"), b"before").unwrap();
        let (input_tx, input) = mpsc::channel(16);
        input_tx.try_send(b"half of it".to_vec()).unwrap();
        drop(input_tx);
        let (out, _said) = mpsc::channel(16);
        let write = FileOp::Write { path: "kept.txt".into(), mode: None, parents: false };
        assert!(run(write, FilesRoot::Worktree, root.path(), input, &out).is_err());
        assert_eq!(std::fs::read(root.path().join("kept.txt")).unwrap(), b"before");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1, "no temporary file is left");
    }

    #[test]
    fn writes_replace_whole_files_and_the_rest_works_on_names() {
        let root = tempfile::tempdir().unwrap();
        let write = FileOp::Write { path: "a/b/f.txt".into(), mode: Some(0o600), parents: true };
        op(root.path(), write, &[b"hello ", b"world"]).1.unwrap();
        let written = root.path().join("a/b/f.txt");
        assert_eq!(std::fs::read(&written).unwrap(), b"hello world");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&written).unwrap().permissions().mode() & 0o777, 0o600);
        let (said, _) = op(root.path(), FileOp::Read { path: "a/b/f.txt".into(), offset: 6, length: Some(3) }, &[]);
        let data: Vec<u8> =
            said.iter().filter_map(|m| if let Out::Data(d) = m { Some(d.clone()) } else { None }).flatten().collect();
        assert_eq!(data, b"wor");
        let moved = FileOp::Move { from: "a/b/f.txt".into(), to: "g.txt".into(), overwrite: false };
        op(root.path(), moved, &[]).1.unwrap();
        std::fs::write(root.path().join("h.txt"), b"h").unwrap();
        let refused =
            op(root.path(), FileOp::Move { from: "g.txt".into(), to: "h.txt".into(), overwrite: false }, &[]).1;
        assert_eq!(refused.unwrap_err().code, "exists");
        let (said, _) = op(root.path(), FileOp::List { path: String::new(), depth: 3 }, &[]);
        let Some(Out::Answer(listing)) = said.first() else { panic!("a listing") };
        let names: Vec<&str> =
            listing["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "a/b", "g.txt", "h.txt"]);
        let not_empty = op(root.path(), FileOp::Remove { path: "a".into(), recursive: false }, &[]).1;
        assert_eq!(not_empty.unwrap_err().code, "not-empty");
        op(root.path(), FileOp::Remove { path: "a".into(), recursive: true }, &[]).1.unwrap();
        assert!(!root.path().join("a").exists());
        let leftovers: Vec<_> = std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 2, "no temporary file is left: {leftovers:?}");
    }
}
