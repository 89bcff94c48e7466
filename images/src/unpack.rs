//! Layers applied to a root filesystem as the OCI image spec says: entries
//! replace what is there, `.wh.NAME` deletes NAME from the layers below and
//! `.wh..wh..opq` empties its directory of them. Every path is resolved
//! inside the root by the kernel (`openat2` with `RESOLVE_IN_ROOT`), so
//! neither `..` nor a symlink a layer planted can reach outside it.
//!
//! Ownership is applied when the unpacker may (root); modes, symlinks,
//! hard links, FIFOs and modification times always. Device nodes are
//! skipped (an executor gets its own `/dev`), and counted.

use std::collections::{BTreeMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Timestamps};
use rustix::io::Errno;

const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

/// What went wrong applying a layer: the entry and why.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("layer entry {path:?}: {message}")]
    Entry { path: String, message: String },
    #[error("layer: {0}")]
    Archive(String),
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UnpackStats {
    pub entries: u64,
    pub bytes: u64,
    pub skipped_devices: u64,
}

/// Applies layers, in order, to one root directory.
pub struct Unpacker {
    root: OwnedFd,
    owners: bool,
    /// Directory modes, applied once every layer is in (so a read-only
    /// directory does not stop a later entry from going into it).
    dir_modes: BTreeMap<PathBuf, u32>,
    stats: UnpackStats,
}

fn entry_error(path: &Path, message: impl std::fmt::Display) -> UnpackError {
    UnpackError::Entry { path: path.display().to_string(), message: message.to_string() }
}

/// The path inside the root, or `None` when it climbs out (`..`).
fn inside(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// `..` taken lexically, never above the root (as the root's own `..` is
/// the root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

fn resolve() -> ResolveFlags {
    ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS
}

/// Removes `name` under `dir` and everything below it; absent is fine.
pub(crate) fn remove_all_at(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<()> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
        let sub = rustix::fs::openat(
            dir,
            name,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        // Emptied of every entry, whatever its mode said.
        let _ = rustix::fs::fchmod(&sub, Mode::from_raw_mode(0o700));
        for child in children(sub.as_fd())? {
            remove_all_at(sub.as_fd(), &child)?;
        }
        rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    } else {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
    }
    Ok(())
}

fn children(dir: BorrowedFd<'_>) -> std::io::Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(&name).to_owned());
        }
    }
    Ok(names)
}

impl Unpacker {
    /// Unpacks into `root` (an existing, empty directory); `owners`: apply
    /// the layers' uids and gids (takes root).
    pub fn new(root: &Path, owners: bool) -> std::io::Result<Unpacker> {
        let root = rustix::fs::open(root, OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Unpacker { root, owners, dir_modes: BTreeMap::new(), stats: UnpackStats::default() })
    }

    /// Applies one layer: a tar stream, plain or gzip-compressed (told
    /// apart by its first bytes).
    pub fn apply(&mut self, layer: impl Read) -> Result<(), UnpackError> {
        let mut reader = BufReader::with_capacity(1 << 16, layer);
        let head = reader.fill_buf().map_err(|e| UnpackError::Archive(e.to_string()))?;
        if head.starts_with(&[0x1f, 0x8b]) {
            self.apply_tar(flate2::bufread::GzDecoder::new(reader))
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Err(UnpackError::Archive("zstd-compressed layers are not supported: push the image with gzip".into()))
        } else {
            self.apply_tar(reader)
        }
    }

    fn apply_tar(&mut self, reader: impl Read) -> Result<(), UnpackError> {
        let mut archive = tar::Archive::new(reader);
        let mut this_layer: HashSet<PathBuf> = HashSet::new();
        let entries = archive.entries().map_err(|e| UnpackError::Archive(e.to_string()))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| UnpackError::Archive(e.to_string()))?;
            let raw = entry.path().map_err(|e| UnpackError::Archive(e.to_string()))?.into_owned();
            let path = inside(&raw).ok_or_else(|| entry_error(&raw, "climbs out of the image's root"))?;
            let Some(name) = path.file_name().map(OsStr::to_owned) else { continue };
            let parent = path.parent().unwrap_or(Path::new("")).to_path_buf();
            self.stats.entries += 1;
            let name_bytes = name.as_bytes();
            if name_bytes == OPAQUE.as_bytes() {
                let dir = self.open_dir(&parent, true).map_err(|e| entry_error(&raw, e))?;
                for child in children(dir.as_fd()).map_err(|e| entry_error(&raw, e))? {
                    if !this_layer.contains(&parent.join(&child)) {
                        remove_all_at(dir.as_fd(), &child).map_err(|e| entry_error(&raw, e))?;
                    }
                }
                continue;
            }
            if let Some(hidden) = name_bytes.strip_prefix(WHITEOUT.as_bytes()) {
                match self.open_dir(&parent, false) {
                    Ok(dir) => {
                        remove_all_at(dir.as_fd(), OsStr::from_bytes(hidden)).map_err(|e| entry_error(&raw, e))?
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(entry_error(&raw, e)),
                }
                continue;
            }
            for ancestor in path.ancestors() {
                this_layer.insert(ancestor.to_path_buf());
            }
            self.apply_entry(&mut entry, &path, &parent, &name).map_err(|e| entry_error(&raw, e))?;
        }
        Ok(())
    }

    fn apply_entry(
        &mut self,
        entry: &mut tar::Entry<'_, impl Read>,
        path: &Path,
        parent: &Path,
        name: &OsStr,
    ) -> std::io::Result<()> {
        let header = entry.header();
        let kind = header.entry_type();
        let mode = header.mode().unwrap_or(0o644) & 0o7777;
        let owner = match self.owners {
            true => Some((header.uid().unwrap_or(0) as u32, header.gid().unwrap_or(0) as u32)),
            false => None,
        };
        let mtime = header.mtime().unwrap_or(0);
        let dir = self.open_dir(parent, true)?;
        let dir = dir.as_fd();
        let existing = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Some(FileType::from_raw_mode(stat.st_mode)),
            Err(Errno::NOENT) => None,
            Err(e) => return Err(e.into()),
        };
        // A directory over a directory keeps what is in it; anything else
        // replaces what was there.
        if existing.is_some() && !(kind.is_dir() && existing == Some(FileType::Directory)) {
            remove_all_at(dir, name)?;
        }
        let chown = |dir: BorrowedFd<'_>| -> std::io::Result<()> {
            if let Some((uid, gid)) = owner {
                rustix::fs::chownat(
                    dir,
                    name,
                    Some(rustix::fs::Uid::from_raw(uid)),
                    Some(rustix::fs::Gid::from_raw(gid)),
                    AtFlags::SYMLINK_NOFOLLOW,
                )?;
            }
            Ok(())
        };
        match kind {
            tar::EntryType::Directory => {
                if existing != Some(FileType::Directory) {
                    rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700))?;
                }
                chown(dir)?;
                self.dir_modes.insert(path.to_path_buf(), mode);
                return Ok(());
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let fd = rustix::fs::openat(
                    dir,
                    name,
                    OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )?;
                let mut file = std::fs::File::from(fd);
                self.stats.bytes += std::io::copy(entry, &mut file)?;
                chown(dir)?;
                // After the owner: chown clears set-id bits.
                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            }
            tar::EntryType::Symlink => {
                let target = entry.link_name()?.ok_or_else(|| std::io::Error::other("a symlink without a target"))?;
                rustix::fs::symlinkat(target.as_os_str(), dir, name)?;
                chown(dir)?;
            }
            tar::EntryType::Link => {
                let target = entry.link_name()?.ok_or_else(|| std::io::Error::other("a hard link without a target"))?;
                let target = inside(&target).ok_or_else(|| std::io::Error::other("a hard link out of the root"))?;
                let target_name = target.file_name().ok_or_else(|| std::io::Error::other("a hard link to the root"))?;
                let target_dir = self.open_dir(target.parent().unwrap_or(Path::new("")), false)?;
                rustix::fs::linkat(target_dir.as_fd(), target_name, dir, name, AtFlags::empty())?;
                // A link shares its target's inode: owner, mode and times are the target's.
                return Ok(());
            }
            tar::EntryType::Fifo => {
                rustix::fs::mknodat(dir, name, FileType::Fifo, Mode::from_raw_mode(mode), 0)?;
                chown(dir)?;
            }
            tar::EntryType::Char | tar::EntryType::Block => {
                self.stats.skipped_devices += 1;
                return Ok(());
            }
            // Extended headers are read by the tar reader itself; other
            // kinds carry nothing a root filesystem needs.
            _ => return Ok(()),
        }
        let time = rustix::fs::Timespec { tv_sec: mtime as i64, tv_nsec: 0 };
        let times = Timestamps { last_access: time, last_modification: time };
        rustix::fs::utimensat(dir, name, &times, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(())
    }

    /// The directory at `path` inside the root, made (with its parents,
    /// 0755) when `create` says so. A dangling symlink on the way is
    /// followed inside the root and its target made, as `docker` does.
    fn open_dir(&self, path: &Path, create: bool) -> std::io::Result<OwnedFd> {
        self.open_dir_following(path, create, 0)
    }

    fn open_dir_following(&self, path: &Path, create: bool, links: u32) -> std::io::Result<OwnedFd> {
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
        let relative: &Path = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        match rustix::fs::openat2(&self.root, relative, flags, Mode::empty(), resolve()) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOENT) if create => {}
            Err(e) => return Err(e.into()),
        }
        let mut dir = rustix::fs::openat2(&self.root, ".", flags, Mode::empty(), resolve())?;
        let mut prefix = PathBuf::new();
        let parts: Vec<&OsStr> = path.iter().collect();
        for (i, part) in parts.iter().enumerate() {
            prefix.push(part);
            match rustix::fs::openat2(&self.root, &prefix, flags, Mode::empty(), resolve()) {
                Ok(fd) => dir = fd,
                Err(Errno::NOENT) => match rustix::fs::mkdirat(&dir, *part, Mode::from_raw_mode(0o755)) {
                    Ok(()) => {
                        dir = rustix::fs::openat2(&dir, *part, flags | OFlags::NOFOLLOW, Mode::empty(), resolve())?;
                        // Not the umask's say: a parent no entry named is 0755.
                        rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o755))?;
                    }
                    Err(Errno::EXIST) if links < 40 => {
                        // A symlink to nothing yet: go on from its target.
                        let target = rustix::fs::readlinkat(&dir, *part, Vec::new())?;
                        let target = Path::new(OsStr::from_bytes(target.to_bytes()));
                        let base = prefix.parent().unwrap_or(Path::new(""));
                        let mut next =
                            if target.is_absolute() { PathBuf::from("/").join(target) } else { base.join(target) };
                        next.extend(&parts[i + 1..]);
                        let next = normalize(&next);
                        return self.open_dir_following(&next, create, links + 1);
                    }
                    Err(e) => return Err(e.into()),
                },
                Err(e) => return Err(e.into()),
            }
        }
        Ok(dir)
    }

    /// Applies the directories' modes and answers what went in.
    pub fn finish(self) -> std::io::Result<UnpackStats> {
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // Deepest first: a parent closed to its owner is closed last.
        for (path, mode) in self.dir_modes.iter().rev() {
            match rustix::fs::openat2(&self.root, path, flags, Mode::empty(), resolve()) {
                Ok(fd) => rustix::fs::fchmod(&fd, Mode::from_raw_mode(*mode))?,
                // Deleted by a later layer, or replaced by something else.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.stats)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

    use super::*;

    enum Item<'a> {
        Dir(&'a str, u32),
        File(&'a str, &'a str, u32),
        Symlink(&'a str, &'a str),
        Hardlink(&'a str, &'a str),
        Fifo(&'a str),
        CharDevice(&'a str),
    }

    fn layer(items: &[Item<'_>]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for item in items {
            let mut header = tar::Header::new_gnu();
            header.set_mtime(1_700_000_000);
            let (path, data): (&str, &[u8]) = match item {
                Item::Dir(path, mode) => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(*mode);
                    (path, b"")
                }
                Item::File(path, body, mode) => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(*mode);
                    (path, body.as_bytes())
                }
                Item::Symlink(path, target) | Item::Hardlink(path, target) => {
                    let kind =
                        if matches!(item, Item::Symlink(..)) { tar::EntryType::Symlink } else { tar::EntryType::Link };
                    header.set_entry_type(kind);
                    header.set_mode(0o777);
                    header.set_size(0);
                    builder.append_link(&mut header, path, target).unwrap();
                    continue;
                }
                Item::Fifo(path) => {
                    header.set_entry_type(tar::EntryType::Fifo);
                    header.set_mode(0o644);
                    (path, b"")
                }
                Item::CharDevice(path) => {
                    header.set_entry_type(tar::EntryType::Char);
                    header.set_mode(0o666);
                    header.set_device_major(1).unwrap();
                    header.set_device_minor(3).unwrap();
                    (path, b"")
                }
            };
            header.set_size(data.len() as u64);
            // Written raw: the builder's own path checks would refuse the
            // hostile names these tests need.
            header.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn unpack(layers: &[Vec<u8>]) -> Result<(tempfile::TempDir, UnpackStats), UnpackError> {
        let root = tempfile::tempdir().unwrap();
        let mut unpacker = Unpacker::new(root.path(), false).unwrap();
        for l in layers {
            unpacker.apply(l.as_slice())?;
        }
        let stats = unpacker.finish().unwrap();
        Ok((root, stats))
    }

    #[test]
    fn later_layers_replace_delete_and_make_directories_opaque() {
        let base = layer(&[
            Item::Dir("etc/", 0o755),
            Item::File("etc/os-release", "ID=base\n", 0o644),
            Item::File("bin/tool", "#!/bin/sh\n", 0o755),
            Item::File("bin/keep", "kept\n", 0o755),
            Item::File("data/old/one", "1", 0o644),
            Item::File("data/two", "2", 0o644),
            Item::Symlink("etc/link", "os-release"),
            Item::Hardlink("bin/tool2", "bin/tool"),
            Item::Fifo("run-fifo"),
            Item::CharDevice("dev-null"),
        ]);
        let upper = layer(&[
            Item::File("etc/os-release", "ID=upper\n", 0o600),
            Item::File("bin/.wh.tool", "", 0o644),
            Item::File("data/new", "3", 0o644),
            Item::File("data/.wh..wh..opq", "", 0o644),
            Item::File(".wh.never-there", "", 0o644),
        ]);
        let (root, stats) = unpack(&[base, upper]).unwrap();
        let at = |p: &str| root.path().join(p);
        assert_eq!(std::fs::read_to_string(at("etc/os-release")).unwrap(), "ID=upper\n");
        assert_eq!(std::fs::metadata(at("etc/os-release")).unwrap().permissions().mode() & 0o7777, 0o600);
        assert_eq!(std::fs::read_to_string(at("etc/link")).unwrap(), "ID=upper\n");
        assert!(!at("bin/tool").exists(), "the whiteout deleted it");
        assert_eq!(std::fs::read_to_string(at("bin/tool2")).unwrap(), "#!/bin/sh\n", "its hard link stays");
        assert!(at("bin/keep").exists());
        assert!(!at("data/old").exists() && !at("data/two").exists(), "the opaque directory hid the lower entries");
        assert_eq!(std::fs::read_to_string(at("data/new")).unwrap(), "3", "but kept its own layer's");
        assert!(std::fs::symlink_metadata(at("run-fifo")).unwrap().file_type().is_fifo());
        assert!(!at("dev-null").exists());
        assert_eq!(stats.skipped_devices, 1);
        assert_eq!(std::fs::metadata(at("data/new")).unwrap().mtime(), 1_700_000_000);
    }

    #[test]
    fn no_entry_reaches_outside_the_root() {
        let outside = tempfile::tempdir().unwrap();
        let outside_path = outside.path().to_str().unwrap().to_owned();
        std::fs::write(outside.path().join("secret"), "host").unwrap();
        // A symlink to a host directory, then a file through it: resolved
        // inside the root, it lands there.
        let planted = layer(&[
            Item::Symlink("escape", &outside_path),
            Item::File("escape/pwned", "x", 0o644),
            Item::Symlink("up", "../../../../.."),
            Item::File("up/pwned-too", "x", 0o644),
        ]);
        let (root, _) = unpack(&[planted]).unwrap();
        assert!(!outside.path().join("pwned").exists());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        assert!(root.path().join(outside_path.trim_start_matches('/')).join("pwned").exists());
        assert!(root.path().join("pwned-too").exists());
        // A hard link to a host file finds no such file inside the root.
        let linked = layer(&[Item::Hardlink("passwd", &format!("{outside_path}/secret"))]);
        assert!(matches!(unpack(&[linked]), Err(UnpackError::Entry { .. })));
        // A whiteout through a symlink deletes inside the root only.
        let whiteout = layer(&[Item::Symlink("door", &outside_path), Item::File("door/.wh.secret", "", 0o644)]);
        unpack(&[whiteout]).unwrap();
        assert!(outside.path().join("secret").exists());
        let climbing = layer(&[Item::File("../climb", "x", 0o644)]);
        let Err(UnpackError::Entry { message, .. }) = unpack(&[climbing]) else { panic!("a climbing path went in") };
        assert!(message.contains("climbs out"), "{message}");
    }

    #[test]
    fn gzip_layers_unpack_and_zstd_ones_are_refused_by_name() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&layer(&[Item::File("hello", "hi", 0o644)])).unwrap();
        let (root, _) = unpack(&[gz.finish().unwrap()]).unwrap();
        assert_eq!(std::fs::read_to_string(root.path().join("hello")).unwrap(), "hi");
        let zstd = [0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0].to_vec();
        let Err(UnpackError::Archive(message)) = unpack(&[zstd]) else { panic!("zstd went in") };
        assert!(message.contains("zstd"), "{message}");
    }

    #[test]
    fn read_only_directories_take_their_mode_after_everything_went_in() {
        let base = layer(&[Item::Dir("locked/", 0o555), Item::File("locked/a", "a", 0o644)]);
        let upper = layer(&[Item::File("locked/b", "b", 0o644), Item::Dir("open/", 0o1777)]);
        let (root, _) = unpack(&[base, upper]).unwrap();
        let mode = |p: &str| std::fs::metadata(root.path().join(p)).unwrap().permissions().mode() & 0o7777;
        assert!(root.path().join("locked/b").exists());
        assert_eq!(mode("locked"), 0o555);
        assert_eq!(mode("open"), 0o1777);
        // The temp dir's cleanup needs to get in again.
        std::fs::set_permissions(root.path().join("locked"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
