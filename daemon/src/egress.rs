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
