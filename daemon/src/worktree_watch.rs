//! A watch of a worktree directory for a client (see
//! [`sluice_protocol::worktree::FileOp::Watch`]): an inotify instance of
//! its own on the directory (and, recursively, those below it, each opened
//! beneath the worktree and never through a symlink), read by the
//! operation's workload thread until the client goes. What the client has
//! not taken is bounded: past the bound, changes are dropped and an
//! `overflow` says so.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use sluice_protocol::worktree::{WatchEvent, WatchKind};
use tokio::sync::mpsc;

/// The most directories one watch follows.
const MAX_DIRS: usize = 8192;
/// How often the thread looks whether its client is still there.
const POLL_MS: i32 = 250;

fn mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::CLOSE_WRITE
        | WatchMask::ATTRIB
        | WatchMask::DELETE
        | WatchMask::MOVE
        // Followed: the path given is /proc's name of a descriptor opened
        // beneath the worktree, never through a symlink.
        | WatchMask::ONLYDIR
        | WatchMask::EXCL_UNLINK
}

/// Watches `dir` (an open directory of the worktree) and, when
/// `recursive`, every directory below it; sends each change to `out` as
/// JSON until `out`'s receiver is gone or `gone` says the client is;
/// `watching` is called once the watches are in place.
pub(crate) fn watch(
    dir: OwnedFd,
    recursive: bool,
    out: &mpsc::Sender<Vec<u8>>,
    gone: &dyn Fn() -> bool,
    watching: &dyn Fn(),
) -> std::io::Result<()> {
    let mut inotify = Inotify::init()?;
    let mut dirs: HashMap<WatchDescriptor, PathBuf> = HashMap::new();
    add(&mut inotify, &dir, PathBuf::new(), recursive, &mut dirs)?;
    // Only now does the client hear the watch is on: nothing after is missed.
    watching();
    let mut buffer = vec![0u8; 64 << 10];
    let mut lost = false;
    let mut moved: Option<(u32, String, bool)> = None;
    let send = |event: WatchEvent, lost: &mut bool| -> bool {
        if *lost {
            let overflow = WatchEvent { kind: WatchKind::Overflow, path: None, from: None, directory: false };
            match out.try_send(serde_json::to_vec(&overflow).unwrap_or_default()) {
                Ok(()) => *lost = false,
                Err(mpsc::error::TrySendError::Closed(_)) => return false,
                Err(mpsc::error::TrySendError::Full(_)) => return true,
            }
        }
        match out.try_send(serde_json::to_vec(&event).unwrap_or_default()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                *lost = true;
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    };
    loop {
        if out.is_closed() || gone() {
            return Ok(());
        }
        let mut poll = libc::pollfd { fd: inotify.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, POLL_MS) };
        if ready <= 0 {
            // A lone move out, unmatched by now, was a removal.
            if let Some((_, path, directory)) = moved.take()
                && !send(WatchEvent { kind: WatchKind::Removed, path: Some(path), from: None, directory }, &mut lost)
            {
                return Ok(());
            }
            continue;
        }
        let mut new_dirs = Vec::new();
        let events: Vec<_> = inotify
            .read_events(&mut buffer)?
            .map(|e| (e.wd, e.mask, e.cookie, e.name.map(|n| n.as_bytes().to_vec())))
            .collect();
        for (wd, mask, cookie, name) in events {
            if mask.contains(EventMask::Q_OVERFLOW) {
                lost = true;
                continue;
            }
            if mask.contains(EventMask::IGNORED) {
                dirs.remove(&wd);
                continue;
            }
            let (Some(parent), Some(name)) = (dirs.get(&wd), name) else { continue };
            let path = parent.join(OsStr::from_bytes(&name)).to_string_lossy().into_owned();
            let directory = mask.contains(EventMask::ISDIR);
            if let Some((pending, from, was_dir)) = moved.take() {
                if mask.contains(EventMask::MOVED_TO) && cookie == pending {
                    let renamed =
                        WatchEvent { kind: WatchKind::Renamed, path: Some(path.clone()), from: Some(from), directory };
                    if !send(renamed, &mut lost) {
                        return Ok(());
                    }
                    if directory && recursive {
                        new_dirs.push(PathBuf::from(&path));
                    }
                    continue;
                }
                if !send(
                    WatchEvent { kind: WatchKind::Removed, path: Some(from), from: None, directory: was_dir },
                    &mut lost,
                ) {
                    return Ok(());
                }
            }
            let kind = if mask.contains(EventMask::MOVED_FROM) {
                moved = Some((cookie, path, directory));
                continue;
            } else if mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
                if directory && recursive {
                    new_dirs.push(PathBuf::from(&path));
                }
                WatchKind::Created
            } else if mask.contains(EventMask::DELETE) {
                WatchKind::Removed
            } else {
                WatchKind::Modified
            };
            if !send(WatchEvent { kind, path: Some(path), from: None, directory }, &mut lost) {
                return Ok(());
            }
        }
        for path in new_dirs {
            let parts: Vec<&OsStr> = path.iter().collect();
            if let Ok(sub) = open_below(&dir, &parts) {
                // A directory gone meanwhile was heard going.
                let _ = add(&mut inotify, &sub, path, true, &mut dirs);
            }
        }
    }
}

/// Opens `parts` below `dir`, step by step, never through a symlink.
fn open_below(dir: &OwnedFd, parts: &[&OsStr]) -> std::io::Result<OwnedFd> {
    let mut current = dir.try_clone()?;
    for part in parts {
        let name =
            std::ffi::CString::new(part.as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: valid descriptor and name.
        let fd = unsafe {
            libc::openat(
                current.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: just opened, ours alone.
        current = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    Ok(current)
}

/// Watches `dir` (known as `path` below the watch's root) and, when
/// `recursive`, the directories below it.
fn add(
    inotify: &mut Inotify,
    dir: &OwnedFd,
    path: PathBuf,
    recursive: bool,
    dirs: &mut HashMap<WatchDescriptor, PathBuf>,
) -> std::io::Result<()> {
    if dirs.len() >= MAX_DIRS {
        return Ok(());
    }
    // The descriptor was opened beneath the worktree: its /proc name is
    // that directory, whatever its path.
    let wd = inotify.watches().add(format!("/proc/self/fd/{}", dir.as_raw_fd()), mask())?;
    dirs.insert(wd, path.clone());
    if recursive {
        for name in crate::dir_entries::names(dir)? {
            if let Ok(sub) = open_below(dir, &[name.as_os_str()]) {
                add(inotify, &sub, path.join(&name), true, dirs)?;
            }
        }
    }
    Ok(())
}
