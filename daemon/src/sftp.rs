//! The sftp subsystem (so `sftp` and `scp` work through a gateway): the
//! daemon's own binary, started as the workload in its working directory,
//! serves SFTP on its stdin and stdout. It sees and may change only what
//! the workload may: it runs with the workload's uid and no capabilities.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use russh_sftp::protocol::{Attrs, Data, File, FileAttributes, Handle, Name, OpenFlags, Status, StatusCode, Version};
use russh_sftp::server::StatusReply;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// The most one read answers (OpenSSH asks for 32 KiB at a time).
const MAX_READ: u32 = 256 * 1024;
/// Entries one readdir answers.
const DIR_BATCH: usize = 128;
/// Handles one session may hold open.
const MAX_HANDLES: usize = 1024;

enum Opened {
    File(tokio::fs::File),
    /// A directory's entries not listed yet.
    Dir(Vec<File>),
}

struct Server {
    handles: HashMap<String, Opened>,
    next: u64,
    /// Told when the server ends (the handler is dropped with its task).
    done: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

fn status(id: u32) -> Status {
    Status { id, status_code: StatusCode::Ok, error_message: "Ok".into(), language_tag: "en-US".into() }
}

fn failure(e: std::io::Error) -> StatusReply {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => StatusCode::NoSuchFile,
        std::io::ErrorKind::PermissionDenied => StatusCode::PermissionDenied,
        std::io::ErrorKind::UnexpectedEof => StatusCode::Eof,
        _ => StatusCode::Failure,
    };
    code.with_message(e.to_string())
}

fn entry(name: String, metadata: &std::fs::Metadata) -> File {
    File::new(name, FileAttributes::from(metadata))
}

impl Server {
    fn hold(&mut self, opened: Opened) -> Result<String, StatusReply> {
        if self.handles.len() >= MAX_HANDLES {
            return Err(StatusCode::Failure.with_message("too many open handles"));
        }
        self.next += 1;
        let handle = self.next.to_string();
        self.handles.insert(handle.clone(), opened);
        Ok(handle)
    }

    fn file(&mut self, handle: &str) -> Result<&mut tokio::fs::File, StatusReply> {
        match self.handles.get_mut(handle) {
            Some(Opened::File(file)) => Ok(file),
            _ => Err(StatusCode::Failure.with_message("no such file handle")),
        }
    }
}

async fn apply(path: &Path, attrs: &FileAttributes) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(size) = attrs.size {
        tokio::fs::OpenOptions::new().write(true).open(path).await?.set_len(size).await?;
    }
    if let Some(mode) = attrs.permissions {
        tokio::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o7777)).await?;
    }
    Ok(())
}

impl russh_sftp::server::Handler for Server {
    type Error = StatusReply;

    fn unimplemented(&self) -> Self::Error {
        StatusCode::OpUnsupported.into()
    }

    async fn init(&mut self, _version: u32, _extensions: HashMap<String, String>) -> Result<Version, Self::Error> {
        Ok(Version::new())
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        pflags: OpenFlags,
        attrs: FileAttributes,
    ) -> Result<Handle, Self::Error> {
        let mut options = tokio::fs::OpenOptions::new();
        options
            .read(pflags.contains(OpenFlags::READ))
            .write(pflags.contains(OpenFlags::WRITE) || pflags.contains(OpenFlags::APPEND))
            .append(pflags.contains(OpenFlags::APPEND))
            .truncate(pflags.contains(OpenFlags::TRUNCATE));
        if pflags.contains(OpenFlags::CREATE) {
            if pflags.contains(OpenFlags::EXCLUDE) {
                options.create_new(true);
            } else {
                options.create(true);
            }
            options.mode(attrs.permissions.map_or(0o644, |m| m & 0o777));
        }
        let file = options.open(&filename).await.map_err(failure)?;
        let handle = self.hold(Opened::File(file))?;
        Ok(Handle { id, handle })
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, Self::Error> {
        if let Some(Opened::File(mut file)) = self.handles.remove(&handle) {
            file.flush().await.map_err(failure)?;
        }
        Ok(status(id))
    }

    async fn read(&mut self, id: u32, handle: String, offset: u64, len: u32) -> Result<Data, Self::Error> {
        let file = self.file(&handle)?;
        file.seek(std::io::SeekFrom::Start(offset)).await.map_err(failure)?;
        let mut data = vec![0u8; len.min(MAX_READ) as usize];
        let n = file.read(&mut data).await.map_err(failure)?;
        if n == 0 && !data.is_empty() {
            return Err(StatusCode::Eof.into());
        }
        data.truncate(n);
        Ok(Data { id, data })
    }

    async fn write(&mut self, id: u32, handle: String, offset: u64, data: Vec<u8>) -> Result<Status, Self::Error> {
        let file = self.file(&handle)?;
        file.seek(std::io::SeekFrom::Start(offset)).await.map_err(failure)?;
        file.write_all(&data).await.map_err(failure)?;
        Ok(status(id))
    }

    async fn lstat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        let metadata = tokio::fs::symlink_metadata(&path).await.map_err(failure)?;
        Ok(Attrs { id, attrs: FileAttributes::from(&metadata) })
    }

    async fn stat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        let metadata = tokio::fs::metadata(&path).await.map_err(failure)?;
        Ok(Attrs { id, attrs: FileAttributes::from(&metadata) })
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<Attrs, Self::Error> {
        let metadata = self.file(&handle)?.metadata().await.map_err(failure)?;
        Ok(Attrs { id, attrs: FileAttributes::from(&metadata) })
    }

    async fn setstat(&mut self, id: u32, path: String, attrs: FileAttributes) -> Result<Status, Self::Error> {
        apply(Path::new(&path), &attrs).await.map_err(failure)?;
        Ok(status(id))
    }

    async fn fsetstat(&mut self, id: u32, handle: String, attrs: FileAttributes) -> Result<Status, Self::Error> {
        let file = self.file(&handle)?;
        if let Some(size) = attrs.size {
            file.set_len(size).await.map_err(failure)?;
        }
        if let Some(mode) = attrs.permissions {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777)).await.map_err(failure)?;
        }
        Ok(status(id))
    }

    async fn opendir(&mut self, id: u32, path: String) -> Result<Handle, Self::Error> {
        let mut entries = Vec::new();
        for name in [".", ".."] {
            if let Ok(metadata) = std::fs::metadata(Path::new(&path).join(name)) {
                entries.push(entry(name.to_owned(), &metadata));
            }
        }
        let mut dir = tokio::fs::read_dir(&path).await.map_err(failure)?;
        while let Some(item) = dir.next_entry().await.map_err(failure)? {
            if let Ok(metadata) = tokio::fs::symlink_metadata(item.path()).await {
                entries.push(entry(item.file_name().to_string_lossy().into_owned(), &metadata));
            }
        }
        entries.reverse();
        let handle = self.hold(Opened::Dir(entries))?;
        Ok(Handle { id, handle })
    }

    async fn readdir(&mut self, id: u32, handle: String) -> Result<Name, Self::Error> {
        let Some(Opened::Dir(entries)) = self.handles.get_mut(&handle) else {
            return Err(StatusCode::Failure.with_message("no such directory handle"));
        };
        if entries.is_empty() {
            return Err(StatusCode::Eof.into());
        }
        let take = entries.len().min(DIR_BATCH);
        let files = entries.split_off(entries.len() - take).into_iter().rev().collect();
        Ok(Name { id, files })
    }

    async fn remove(&mut self, id: u32, filename: String) -> Result<Status, Self::Error> {
        tokio::fs::remove_file(&filename).await.map_err(failure)?;
        Ok(status(id))
    }

    async fn mkdir(&mut self, id: u32, path: String, attrs: FileAttributes) -> Result<Status, Self::Error> {
        let mut builder = tokio::fs::DirBuilder::new();
        builder.mode(attrs.permissions.map_or(0o755, |m| m & 0o7777));
        builder.create(&path).await.map_err(failure)?;
        Ok(status(id))
    }

    async fn rmdir(&mut self, id: u32, path: String) -> Result<Status, Self::Error> {
        tokio::fs::remove_dir(&path).await.map_err(failure)?;
        Ok(status(id))
    }

    async fn realpath(&mut self, id: u32, path: String) -> Result<Name, Self::Error> {
        let path = if path.is_empty() { ".".to_owned() } else { path };
        let real = tokio::fs::canonicalize(&path).await.unwrap_or_else(|_| absolute(&path));
        let name = real.to_string_lossy().into_owned();
        Ok(Name { id, files: vec![File::dummy(name)] })
    }

    async fn rename(&mut self, id: u32, oldpath: String, newpath: String) -> Result<Status, Self::Error> {
        tokio::fs::rename(&oldpath, &newpath).await.map_err(failure)?;
        Ok(status(id))
    }

    async fn readlink(&mut self, id: u32, path: String) -> Result<Name, Self::Error> {
        let target = tokio::fs::read_link(&path).await.map_err(failure)?;
        Ok(Name { id, files: vec![File::dummy(target.to_string_lossy())] })
    }

    async fn symlink(&mut self, id: u32, linkpath: String, targetpath: String) -> Result<Status, Self::Error> {
        tokio::fs::symlink(&targetpath, &linkpath).await.map_err(failure)?;
        Ok(status(id))
    }
}

/// `path` made absolute against the working directory, without touching
/// the disk (for a path that does not exist yet).
fn absolute(path: &str) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    cwd.join(path)
}

/// Serves SFTP on stdin and stdout until the client ends it.
pub async fn serve_stdio() {
    let (done, ended) = tokio::sync::oneshot::channel();
    let server = Server { handles: HashMap::new(), next: 0, done: Some(done) };
    let stdio = tokio::io::join(tokio::io::stdin(), tokio::io::stdout());
    russh_sftp::server::run(stdio, server).await;
    let _ = ended.await;
}
