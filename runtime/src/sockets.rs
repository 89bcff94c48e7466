//! The unix sockets a host serves into an executor's run directory: where
//! they are, and binding one only the directory's owner may connect to.

use std::path::{Path, PathBuf};

/// Binds a unix socket at `path` that only the owner of its directory (and
/// root) may connect to. The socket is made and given its mode and owner in
/// the directory above (which that owner cannot write), then renamed into
/// place: nothing the owner plants at `path` can redirect a chmod or chown.
pub fn bind_for_directory_owner(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::MetadataExt;
    let dir = path.parent().ok_or_else(|| std::io::Error::other("the socket path has no directory"))?;
    let staging_dir = dir.parent().unwrap_or(dir);
    let name = path.file_name().ok_or_else(|| std::io::Error::other("the socket path has no name"))?;
    let staging = staging_dir.join(format!(".{}.staging", name.to_string_lossy()));
    let owner = std::fs::metadata(dir)?;
    let _ = std::fs::remove_file(&staging);
    // A socket address holds 107 bytes of path: a longer one is bound
    // through its directory, opened and named by a short /proc path.
    let listener = if staging.as_os_str().len() <= 107 {
        tokio::net::UnixListener::bind(&staging)?
    } else {
        let opened = std::fs::File::open(staging_dir)?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&opened);
        let short = format!("/proc/self/fd/{fd}/{}", staging.file_name().unwrap_or_default().to_string_lossy());
        tokio::net::UnixListener::bind(short)?
    };
    std::fs::set_permissions(&staging, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    std::os::unix::fs::lchown(&staging, Some(owner.uid()), Some(owner.gid()))?;
    std::fs::rename(&staging, path)?;
    Ok(listener)
}

/// The socket's path for a run, as the host sees it.
pub fn registrar_socket(run_dir: &Path) -> PathBuf {
    run_dir.join("run").join("registrar.sock")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run directory deep enough that its socket's path passes what a
    /// socket address holds is still served.
    #[tokio::test]
    async fn a_socket_past_the_address_length_is_bound_through_its_directory() {
        let root = tempfile::tempdir().unwrap();
        let run_dir = root.path().join("d".repeat(60)).join("executors").join(format!("run_{}", "0".repeat(32)));
        std::fs::create_dir_all(run_dir.join("run")).unwrap();
        let socket = registrar_socket(&run_dir);
        assert!(socket.as_os_str().len() > 107, "{}", socket.display());
        let listener = bind_for_directory_owner(&socket).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_socket(&std::fs::symlink_metadata(&socket).unwrap().file_type()));
        let dir = std::fs::File::open(run_dir.join("run")).unwrap();
        let short = format!("/proc/self/fd/{}/registrar.sock", std::os::fd::AsRawFd::as_raw_fd(&dir));
        let (client, accepted) = tokio::join!(tokio::net::UnixStream::connect(short), listener.accept());
        client.unwrap();
        accepted.unwrap();
    }
}
