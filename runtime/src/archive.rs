//! An executor's disk as a tar archive, read from the host: for an
//! operator exporting a retained executor's work when it cannot be started
//! again. Every member sits under one top directory (`workspace/`); names
//! are bytes, modes, times, symlinks, hard links, fifos and holes are kept.
//! Device nodes and sockets are left out, each named in a warning.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use sluice_protocol::tar::{self, Header, Member};

/// An archive as it is read.
pub type DiskArchive = std::pin::Pin<Box<dyn futures::Stream<Item = std::io::Result<Bytes>> + Send>>;

/// The top directory every member of an exported disk sits under.
pub const TOP: &str = "workspace";

/// How much of a file is read at a time.
const READ_BYTES: usize = 1 << 20;

/// Archives the tree at `root`, walked on a thread of its own as the
/// archive is read; it stops when the reader goes away.
pub fn directory_archive(root: PathBuf) -> DiskArchive {
    let (sender, receiver) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(4);
    std::thread::spawn(move || {
        let mut out = Out { sender, links: Default::default() };
        let written = out.tree(&root, TOP.as_bytes()).and_then(|()| out.send(tar::END.to_vec()));
        if let Err(e) = written
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            let _ = out.sender.blocking_send(Err(e));
        }
    });
    Box::pin(futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    }))
}

struct Out {
    sender: tokio::sync::mpsc::Sender<std::io::Result<Bytes>>,
    /// Files with several names: the first name archived, by (device, inode).
    links: std::collections::HashMap<(u64, u64), Vec<u8>>,
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.mtime().saturating_mul(1000) + meta.mtime_nsec() / 1_000_000
}

impl Out {
    fn send(&self, bytes: Vec<u8>) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.sender
            .blocking_send(Ok(Bytes::from(bytes)))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the reader went away"))
    }

    fn header(&self, name: &[u8], meta: &std::fs::Metadata, member: Member<'_>) -> std::io::Result<()> {
        self.send(Header { path: name, mode: meta.mode() & 0o7777, mtime_ms: mtime_ms(meta), member }.encode())
    }

    /// The directory at `dir` as `name`, then everything under it in name order.
    fn tree(&mut self, dir: &Path, name: &[u8]) -> std::io::Result<()> {
        let meta = std::fs::symlink_metadata(dir)?;
        self.header(name, &meta, Member::Dir)?;
        let mut children: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        children.sort_by_key(|c| c.file_name());
        for child in children {
            let path = child.path();
            let child_name = [name, b"/", child.file_name().as_bytes()].concat();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                tracing::warn!(path = %path.display(), "left out of the archive: it cannot be read");
                continue;
            };
            let kind = meta.file_type();
            let archived = if kind.is_dir() {
                self.tree(&path, &child_name)
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path)?;
                self.header(&child_name, &meta, Member::Symlink { target: target.as_os_str().as_bytes() })
            } else if kind.is_fifo() {
                self.header(&child_name, &meta, Member::Fifo)
            } else if kind.is_file() {
                self.file(&path, &child_name, &meta)
            } else {
                tracing::warn!(path = %path.display(), "left out of the archive: a device node or socket");
                Ok(())
            };
            match archived {
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    tracing::warn!(path = %path.display(), "left out of the archive: permission denied");
                }
                other => other?,
            }
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, name: &[u8], meta: &std::fs::Metadata) -> std::io::Result<()> {
        if meta.nlink() > 1 {
            if let Some(first) = self.links.get(&(meta.dev(), meta.ino())) {
                return self.header(name, meta, Member::HardLink { target: first });
            }
            self.links.insert((meta.dev(), meta.ino()), name.to_vec());
        }
        let mut file = std::fs::File::open(path)?;
        let size = meta.len();
        // Fewer blocks than the size needs: it has holes, archived as such.
        let regions = if meta.blocks() * 512 < size { data_regions(&file, size)? } else { vec![(0, size)] };
        let member =
            if regions == [(0, size)] { Member::File { size } } else { Member::Sparse { size, data: &regions } };
        let header = Header { path: name, mode: meta.mode() & 0o7777, mtime_ms: mtime_ms(meta), member };
        let data_len = header.data_len();
        self.send(header.encode())?;
        for (offset, len) in &regions {
            use std::io::{Seek, SeekFrom};
            file.seek(SeekFrom::Start(*offset))?;
            let mut left = *len;
            let mut reader = (&mut file).take(*len);
            while left > 0 {
                let mut buffer = vec![0; READ_BYTES.min(left as usize)];
                let read = reader.read(&mut buffer)?;
                // A file that shrank reads as zeros to the size its header gave.
                let read = if read == 0 { buffer.len() } else { read };
                buffer.truncate(read);
                left -= read as u64;
                self.send(buffer)?;
            }
        }
        self.send(vec![0; tar::padding(data_len)])
    }
}

/// A file's data regions, found with `SEEK_DATA` and `SEEK_HOLE`; a file
/// system that cannot tell answers the whole file.
fn data_regions(file: &std::fs::File, size: u64) -> std::io::Result<Vec<(u64, u64)>> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let mut regions = Vec::new();
    let mut at: i64 = 0;
    while (at as u64) < size {
        // SAFETY: lseek on a file this function borrows.
        let data = unsafe { libc::lseek(fd, at, libc::SEEK_DATA) };
        if data < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENXIO) {
                break;
            }
            return if regions.is_empty() { Ok(vec![(0, size)]) } else { Err(e) };
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let end = (hole as u64).min(size);
        if end > data as u64 {
            regions.push((data as u64, end - data as u64));
        }
        at = hole;
    }
    Ok(regions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    /// What `tar` extracts from the archive of a tree with every kind of
    /// member is that tree.
    #[tokio::test]
    async fn an_archived_directory_extracts_to_the_same_tree() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("disk");
        std::fs::create_dir_all(root.join("src/empty")).unwrap();
        std::fs::write(root.join("src/a.txt"), "hello\n").unwrap();
        std::fs::set_permissions(root.join("src/a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::hard_link(root.join("src/a.txt"), root.join("linked.txt")).unwrap();
        std::os::unix::fs::symlink("src/a.txt", root.join("link")).unwrap();
        let odd = root.join(std::ffi::OsStr::from_bytes(b"bad\xffname"));
        std::fs::write(&odd, "odd").unwrap();
        let sparse = std::fs::File::create(root.join("sparse.img")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&sparse, b"data", 512 << 20).unwrap();
        drop(sparse);
        let fifo = std::ffi::CString::new(root.join("pipe").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo of a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);

        let mut archive = Vec::new();
        let mut stream = directory_archive(root.clone());
        while let Some(chunk) = stream.next().await {
            archive.extend_from_slice(&chunk.unwrap());
        }
        assert!(archive.len() < 4 << 20, "the hole is not in the archive: {} bytes", archive.len());
        let into = dir.path().join("out");
        std::fs::create_dir(&into).unwrap();
        let mut tar = std::process::Command::new("tar")
            .args(["-x", "-p", "-f", "-", "-C"])
            .arg(&into)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(tar.stdin.as_mut().unwrap(), &archive).unwrap();
        drop(tar.stdin.take());
        assert!(tar.wait().unwrap().success());

        let out = into.join(TOP);
        assert_eq!(std::fs::read_to_string(out.join("src/a.txt")).unwrap(), "hello\n");
        assert_eq!(std::fs::metadata(out.join("src/a.txt")).unwrap().mode() & 0o7777, 0o640);
        let (a, linked) =
            (std::fs::metadata(out.join("src/a.txt")).unwrap(), std::fs::metadata(out.join("linked.txt")).unwrap());
        assert_eq!((a.ino(), a.nlink()), (linked.ino(), 2), "the hard link is a link");
        assert_eq!(std::fs::read_link(out.join("link")).unwrap(), Path::new("src/a.txt"));
        assert_eq!(std::fs::read(out.join(std::ffi::OsStr::from_bytes(b"bad\xffname"))).unwrap(), b"odd");
        assert!(std::fs::symlink_metadata(out.join("pipe")).unwrap().file_type().is_fifo());
        assert!(out.join("src/empty").is_dir());
        let sparse = std::fs::metadata(out.join("sparse.img")).unwrap();
        assert_eq!(sparse.len(), 1 << 30);
        assert!(sparse.blocks() * 512 < 4 << 20, "the hole stays a hole: {} blocks", sparse.blocks());
        let file = std::fs::File::open(out.join("sparse.img")).unwrap();
        let mut data = [0u8; 4];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut data, 512 << 20).unwrap();
        assert_eq!(&data, b"data");
        let mtime = |p: &Path| std::fs::metadata(p).unwrap().mtime();
        assert_eq!(mtime(&out.join("src/a.txt")), mtime(&root.join("src/a.txt")));
    }
}
