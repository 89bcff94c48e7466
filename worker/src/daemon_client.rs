//! Talking to an executor's daemon over its control socket: HTTP/1.1 on a
//! unix socket, authenticated with the run's control token.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sluice_store::Secret;

use crate::error::WorkerError;

/// The longest socket path `connect(2)` takes as it is.
const SUN_PATH_MAX: usize = 107;

/// Connects to a unix socket, also when its path is longer than a socket
/// address can hold: then through the socket's directory, opened and named
/// by its short `/proc/self/fd/N` path.
async fn connect(path: &str) -> std::io::Result<tokio::net::UnixStream> {
    if path.len() <= SUN_PATH_MAX {
        return tokio::net::UnixStream::connect(path).await;
    }
    let path = std::path::Path::new(path);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other("the socket path has no directory"));
    };
    let dir = std::fs::File::open(dir)?;
    let short = format!("/proc/self/fd/{}/{}", std::os::fd::AsRawFd::as_raw_fd(&dir), name.to_string_lossy());
    let stream = tokio::net::UnixStream::connect(short).await;
    drop(dir);
    stream
}

/// A daemon's control endpoint and the token it accepts.
pub struct DaemonClient {
    socket: String,
    token: Secret<String>,
}

impl DaemonClient {
    /// `endpoint` is `unix://PATH`, as the runtime recorded it.
    pub fn new(endpoint: &str, token: Secret<String>) -> Result<Self, WorkerError> {
        let socket = endpoint
            .strip_prefix("unix://")
            .ok_or_else(|| WorkerError::DaemonUnreachable(format!("unsupported endpoint {endpoint}")))?;
        Ok(DaemonClient { socket: socket.to_owned(), token })
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), WorkerError> {
        let unreachable = |e: &dyn std::fmt::Display| WorkerError::DaemonUnreachable(e.to_string());
        let stream = connect(&self.socket).await.map_err(|e| unreachable(&e))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| unreachable(&e))?;
        tokio::spawn(connection);
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, "sluiced")
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.token.expose()))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| unreachable(&e))?;
        let response = sender.send_request(request).await.map_err(|e| unreachable(&e))?;
        let status = response.status();
        let bytes = response.into_body().collect().await.map_err(|e| unreachable(&e))?.to_bytes();
        Ok((status, bytes))
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<T, WorkerError> {
        let (status, bytes) = tokio::time::timeout(timeout, self.call(method, path, body))
            .await
            .map_err(|_| WorkerError::DaemonTimeout(timeout))??;
        if !status.is_success() {
            let message = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
                .unwrap_or_default();
            return Err(WorkerError::DaemonRefused { status: status.as_u16(), message });
        }
        serde_json::from_slice(&bytes).map_err(|e| WorkerError::DaemonUnreachable(format!("unreadable answer: {e}")))
    }

    /// Whether the daemon answers `health` with its token.
    pub async fn healthy(&self) -> bool {
        self.json::<serde_json::Value>(Method::GET, "/health", None, Duration::from_secs(2)).await.is_ok()
    }

    /// Runs one command through the daemon's `exec`.
    pub async fn exec<B: Serialize, T: DeserializeOwned>(&self, body: &B, timeout: Duration) -> Result<T, WorkerError> {
        let bytes = serde_json::to_vec(body).map_err(|e| WorkerError::DaemonUnreachable(e.to_string()))?;
        self.json(Method::POST, "/exec", Some(bytes), timeout).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sockets_with_paths_longer_than_an_address_are_reached() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a-directory-name-long-enough-".repeat(4));
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("control.sock");
        assert!(socket.as_os_str().len() > SUN_PATH_MAX);
        let handle = std::fs::File::open(&dir).unwrap();
        let short = format!("/proc/self/fd/{}/control.sock", std::os::fd::AsRawFd::as_raw_fd(&handle));
        let listener = tokio::net::UnixListener::bind(&short).unwrap();
        let accepted = tokio::spawn(async move { listener.accept().await.is_ok() });
        assert!(tokio::net::UnixStream::connect(&socket).await.is_err(), "too long to connect to as it is");
        connect(socket.to_str().unwrap()).await.expect("reached through its directory");
        assert!(accepted.await.unwrap());
    }
}
