//! Whole trees: an image's root copied for an executor where no overlay
//! can be mounted, and trees removed whatever their modes say.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Copies `from` to `to` (which must not exist): directories, files (the
/// kernel shares extents where the filesystem can), symlinks and FIFOs,
/// with modes and, when `owners`, owners. Hard links become copies.
pub fn copy_tree(from: &Path, to: &Path, owners: bool) -> std::io::Result<u64> {
    let meta = std::fs::symlink_metadata(from)?;
    let mut bytes = 0;
    let kind = meta.file_type();
    if kind.is_dir() {
        std::fs::create_dir(to)?;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700))?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            bytes += copy_tree(&entry.path(), &to.join(entry.file_name()), owners)?;
        }
    } else if kind.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)?;
    } else if kind.is_file() {
        bytes += std::fs::copy(from, to)?;
    } else if std::os::unix::fs::FileTypeExt::is_fifo(&kind) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            to,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )?;
    } else {
        // Sockets and devices are never unpacked into an image's tree.
        return Ok(0);
    }
    if owners {
        std::os::unix::fs::lchown(to, Some(meta.uid()), Some(meta.gid()))?;
    }
    if !kind.is_symlink() {
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    }
    Ok(bytes)
}

/// Removes `path` and everything below it, opening directories whose mode
/// would refuse it (a tree unpacked from an image without root keeps the
/// image's modes). Absent is fine.
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    let Some(name) = path.file_name() else { return Err(std::io::Error::other("no tree at the root")) };
    let parent = path.parent().unwrap_or(Path::new("."));
    let parent = rustix::fs::open(
        parent,
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    crate::unpack::remove_all_at(std::os::fd::AsFd::as_fd(&parent), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_tree_keeps_modes_links_and_fifos_and_removes_whatever_its_modes() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("from");
        std::fs::create_dir_all(from.join("bin")).unwrap();
        std::fs::write(from.join("bin/tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(from.join("bin/tool"), std::fs::Permissions::from_mode(0o4755)).unwrap();
        std::os::unix::fs::symlink("bin/tool", from.join("tool")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            from.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o640),
            0,
        )
        .unwrap();
        std::fs::set_permissions(from.join("bin"), std::fs::Permissions::from_mode(0o555)).unwrap();
        let to = dir.path().join("to");
        assert_eq!(copy_tree(&from, &to, false).unwrap(), 10);
        let mode = |p: &str| std::fs::symlink_metadata(to.join(p)).unwrap().mode() & 0o7777;
        assert_eq!((mode("bin"), mode("bin/tool"), mode("fifo")), (0o555, 0o4755, 0o640));
        assert_eq!(std::fs::read_link(to.join("tool")).unwrap(), Path::new("bin/tool"));
        remove_tree(&to).unwrap();
        remove_tree(&from).unwrap();
        assert!(!to.exists() && !from.exists());
        remove_tree(&to).unwrap();
    }
}
