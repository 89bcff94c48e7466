//! Hearing of worktree changes from the kernel, so an idle worktree is not
//! walked: an inotify watch on every directory of the tree, read by a
//! thread that only raises a flag. A timed snap walks the tree only when
//! the flag is up (or the safety sweep is due: the kernel says nothing of a
//! write through a shared mapping, say).
//!
//! Where the kernel cannot be asked (no inotify, the host's watch limit is
//! reached, the tree has more directories than the daemon watches, or the
//! queue overflowed and could not be re-armed), the daemon says so and
//! walks on every interval as before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

/// What a directory's watch reports: anything that changes a name, a
/// file's bytes or its metadata below it.
fn mask() -> WatchMask {
    WatchMask::MODIFY
        | WatchMask::ATTRIB
        | WatchMask::CLOSE_WRITE
        | WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE
        | WatchMask::MOVE_SELF
        | WatchMask::DONT_FOLLOW
        | WatchMask::ONLYDIR
        | WatchMask::EXCL_UNLINK
}

/// How the engine learns that the worktree changed.
#[derive(Debug, Clone)]
pub struct Changes {
    changed: Arc<AtomicBool>,
    /// Signalled when `changed` is raised, so an idle engine sleeps until then.
    raised: Arc<tokio::sync::Notify>,
    /// Why the daemon walks on every interval; `None` while the kernel tells it.
    walking: Arc<Mutex<Option<String>>>,
}

impl Changes {
    /// Changes learned only by walking, for `reason`.
    pub fn walk(reason: impl Into<String>) -> Changes {
        Changes {
            changed: Arc::new(AtomicBool::new(true)),
            raised: Arc::default(),
            walking: Arc::new(Mutex::new(Some(reason.into()))),
        }
    }

    /// Watches every directory under `root` (at most `max_dirs`); falls back
    /// to walking, with the reason, where that cannot be done.
    pub fn watch(root: &Path, max_dirs: usize) -> Changes {
        let inotify = match Inotify::init() {
            Ok(inotify) => inotify,
            Err(e) => return Changes::walk(format!("inotify is not available: {e}")),
        };
        let mut dirs = HashMap::new();
        if let Err(reason) = watch_tree(&mut inotify.watches(), root, &mut dirs, max_dirs) {
            return Changes::walk(reason);
        }
        let changes = Changes {
            changed: Arc::new(AtomicBool::new(true)),
            raised: Arc::default(),
            walking: Arc::new(Mutex::new(None)),
        };
        let (heard, root) = (changes.clone(), root.to_path_buf());
        let spawned = std::thread::Builder::new()
            .name("sluiced-changes".into())
            .spawn(move || heard.listen(inotify, &root, dirs, max_dirs));
        match spawned {
            Ok(_) => changes,
            Err(e) => Changes::walk(format!("cannot start the change listener: {e}")),
        }
    }

    /// Whether anything changed since the last call (always, while walking).
    pub fn take(&self) -> bool {
        self.changed.swap(false, Ordering::SeqCst) || self.walking().is_some()
    }

    /// Whether a change waits to be taken (always, while walking).
    pub fn pending(&self) -> bool {
        self.changed.load(Ordering::SeqCst) || self.walking().is_some()
    }

    /// Resolves once a change is raised (at once if one was raised since
    /// the last time this resolved).
    pub async fn raised(&self) {
        self.raised.notified().await
    }

    fn raise(&self) {
        self.changed.store(true, Ordering::SeqCst);
        self.raised.notify_one();
    }

    /// Why the daemon walks on every interval; `None` while the kernel tells it.
    pub fn walking(&self) -> Option<String> {
        self.walking.lock().unwrap().clone()
    }

    fn fall_back(&self, reason: String) {
        log_line!("sluiced: worktree changes are found by walking it from now on: {reason}");
        *self.walking.lock().unwrap() = Some(reason);
        self.raise();
    }

    /// Reads events until inotify fails or its watches cannot keep up; then
    /// falls back (dropping the instance frees its watches for others).
    fn listen(self, mut inotify: Inotify, root: &Path, mut dirs: HashMap<WatchDescriptor, PathBuf>, max_dirs: usize) {
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            let mut new_dirs = Vec::new();
            let mut overflowed = false;
            match inotify.read_events_blocking(&mut buffer) {
                Ok(events) => {
                    for event in events {
                        if event.mask.contains(EventMask::Q_OVERFLOW) {
                            overflowed = true;
                        }
                        if event.mask.contains(EventMask::IGNORED) {
                            dirs.remove(&event.wd);
                        }
                        let arrived = event.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO);
                        if arrived
                            && event.mask.contains(EventMask::ISDIR)
                            && let (Some(parent), Some(name)) = (dirs.get(&event.wd), event.name)
                        {
                            new_dirs.push(parent.join(name));
                        }
                    }
                }
                Err(e) => return self.fall_back(format!("reading inotify failed: {e}")),
            }
            // A new directory is watched before the change is raised: the
            // walk the flag brings sees whatever came into it before that.
            let mut watches = inotify.watches();
            let rewatched = if overflowed {
                watch_tree(&mut watches, root, &mut dirs, max_dirs)
            } else {
                new_dirs.iter().try_for_each(|dir| watch_tree(&mut watches, dir, &mut dirs, max_dirs))
            };
            if let Err(reason) = rewatched {
                return self.fall_back(reason);
            }
            self.raise();
        }
    }
}

/// Adds a watch on `top` and every directory below it (symlinks not
/// followed). A directory gone meanwhile is skipped: its removal was heard.
fn watch_tree(
    watches: &mut Watches,
    top: &Path,
    dirs: &mut HashMap<WatchDescriptor, PathBuf>,
    max_dirs: usize,
) -> Result<(), String> {
    let mut stack = vec![top.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dirs.len() >= max_dirs {
            return Err(format!("the worktree has more than {max_dirs} directories to watch"));
        }
        match watches.add(&dir, mask()) {
            Ok(wd) => {
                dirs.insert(wd, dir.clone());
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                return Err("the host's inotify watch limit is reached (fs.inotify.max_user_watches)".into());
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => continue,
            Err(e) => return Err(format!("cannot watch a directory of the worktree: {e}")),
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn raised(changes: &Changes) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if changes.take() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// Nothing is raised, looking again and again for 200 ms.
    fn quiet(changes: &Changes) -> bool {
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            if changes.take() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Quiet once the change just made has settled: its last events (a new
    /// directory's watch and walk) may come after the first was taken, so
    /// it settles when a whole quiet window passes (within five seconds).
    fn settles(changes: &Changes) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if quiet(changes) {
                return true;
            }
        }
        false
    }

    #[test]
    fn the_kernel_tells_of_every_change_and_an_idle_tree_raises_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/file"), "one").unwrap();
        let changes = Changes::watch(dir.path(), 100);
        assert_eq!(changes.walking(), None);
        assert!(changes.take(), "the first look walks");
        assert!(quiet(&changes), "an idle tree raises nothing");

        std::fs::write(dir.path().join("a/b/file"), "two").unwrap();
        assert!(raised(&changes), "a write deep in the tree");
        assert!(settles(&changes));
        // A directory made after the start, and a file made in it at once.
        std::fs::create_dir_all(dir.path().join("new/deeper")).unwrap();
        std::fs::write(dir.path().join("new/deeper/file"), "x").unwrap();
        assert!(raised(&changes));
        assert!(settles(&changes));
        std::fs::write(dir.path().join("new/deeper/file"), "y").unwrap();
        assert!(raised(&changes), "the new directory is watched too");
        std::fs::rename(dir.path().join("new"), dir.path().join("a/moved")).unwrap();
        assert!(raised(&changes));
        assert!(settles(&changes));
        std::fs::write(dir.path().join("a/moved/deeper/file"), "z").unwrap();
        assert!(raised(&changes), "a moved directory is still watched");
        std::fs::set_permissions(dir.path().join("a/b/file"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        assert!(raised(&changes), "a mode change");
        std::fs::remove_dir_all(dir.path().join("a")).unwrap();
        assert!(raised(&changes), "a removal");
        assert_eq!(changes.walking(), None);
    }

    /// Why the sweep exists: a write through a shared mapping reaches the
    /// file, and no watch hears of it.
    #[test]
    fn a_write_through_a_mapping_is_not_told() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapped");
        std::fs::write(&path, "before-000\n").unwrap();
        let changes = Changes::watch(dir.path(), 100);
        assert!(changes.take());
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        // SAFETY: a fresh shared mapping of the whole 11-byte file, written
        // within its length and unmapped before the file closes.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                11,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            std::ptr::copy_nonoverlapping(b"after-1111\n".as_ptr(), map.cast::<u8>(), 11);
            assert_eq!(libc::msync(map, 11, libc::MS_SYNC), 0);
            libc::munmap(map, 11);
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "after-1111\n");
        assert!(quiet(&changes), "the kernel told of a mapped write");
        drop(file);
    }

    #[test]
    fn a_tree_past_the_watch_bound_is_walked_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "b", "c", "d"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        let changes = Changes::watch(dir.path(), 3);
        let reason = changes.walking().expect("walking");
        assert!(reason.contains("more than 3 directories"), "{reason}");
        assert!(changes.take() && changes.take(), "every interval walks");
    }

    #[test]
    fn growing_past_the_bound_falls_back_to_walking() {
        let dir = tempfile::tempdir().unwrap();
        let changes = Changes::watch(dir.path(), 3);
        assert!(changes.take());
        assert!(quiet(&changes));
        std::fs::create_dir_all(dir.path().join("a/b/c/d")).unwrap();
        assert!(raised(&changes));
        let deadline = Instant::now() + Duration::from_secs(5);
        while changes.walking().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(changes.walking().is_some_and(|r| r.contains("more than 3")), "{:?}", changes.walking());
        assert!(changes.take() && changes.take());
    }
}
