//! The workload's way out when its executor has an egress allowlist: the
//! daemon listens on the executor's own loopback and carries each
//! connection, unread, to the worker's proxy on the mounted unix socket.
//! The proxy decides; nothing here is policy.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixStream};

/// The most connections carried at once (the proxy bounds its own too).
const MAX_CONNECTIONS: usize = 256;
/// How long a connection waits for the proxy's socket: it appears once the
/// worker serves this executor, and again after the worker restarts.
const PROXY_WITHIN: Duration = Duration::from_secs(15);

/// Binds the listener (before the workload starts, so nothing else holds
/// the address) and forwards from it in the background.
pub async fn start(socket: PathBuf) -> std::io::Result<()> {
    let listener = TcpListener::bind(sluice_protocol::egress::LISTEN).await?;
    log_line!("sluiced: egress through the worker's proxy on {}", sluice_protocol::egress::LISTEN);
    tokio::spawn(forward(listener, socket));
    Ok(())
}

async fn forward(listener: TcpListener, socket: PathBuf) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let socket = Arc::new(socket);
    loop {
        let slot = slots.clone().acquire_owned().await.expect("never closed");
        let Ok((mut client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let socket = socket.clone();
        tokio::spawn(async move {
            if let Some(mut proxy) = reach(&socket).await {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut proxy).await;
            }
            drop(slot);
        });
    }
}

/// Where an image keeps its system's roots, most common first.
const SYSTEM_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
];
/// The most of a bundle read: a system's roots are a few hundred KiB.
const MAX_BUNDLE: u64 = 4 << 20;

/// Writes the workload's trust before it starts: the system's roots (if the
/// executor has them) with the egress authority, and the authority alone,
/// in a directory of the daemon's that the workload can read, not change.
pub fn install_trust(authority: &std::path::Path) -> std::io::Result<()> {
    use std::io::Read;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let mut pem = String::new();
    std::fs::File::open(authority)?.take(64 * 1024).read_to_string(&mut pem)?;
    let mut bundle = Vec::new();
    if let Some(file) = SYSTEM_BUNDLES.iter().find_map(|p| std::fs::File::open(p).ok()) {
        file.take(MAX_BUNDLE).read_to_end(&mut bundle)?;
        if !bundle.ends_with(b"\n") {
            bundle.push(b'\n');
        }
    }
    bundle.extend_from_slice(pem.as_bytes());
    let dir = std::path::Path::new(sluice_protocol::egress::TRUST_DIR);
    let _ = std::fs::remove_dir_all(dir);
    std::fs::DirBuilder::new().mode(0o755).create(dir)?;
    // Whatever the umask this daemon inherited: the workload reads these.
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    for (path, contents) in [
        (sluice_protocol::egress::TRUST_BUNDLE, &bundle[..]),
        (sluice_protocol::egress::TRUST_AUTHORITY, pem.as_bytes()),
    ] {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(path)?;
        std::io::Write::write_all(&mut file, contents)?;
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    }
    log_line!("sluiced: the workload trusts the egress authority ({})", sluice_protocol::egress::TRUST_BUNDLE);
    Ok(())
}

async fn reach(socket: &std::path::Path) -> Option<UnixStream> {
    let deadline = tokio::time::Instant::now() + PROXY_WITHIN;
    loop {
        match UnixStream::connect(socket).await {
            Ok(stream) => return Some(stream),
            Err(_) if tokio::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            // Not logged: the workload decides how often this happens.
            Err(_) => return None,
        }
    }
}
