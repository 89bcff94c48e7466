//! Talking to an executor's daemon over its control socket: HTTP/1.1 on a
//! unix socket, authenticated with the run's control token. A daemon's
//! answer is evidence from an untrusted place: every call is bounded in
//! time and every answer in size, and an answer past its bound fails that
//! call and nothing else.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use sluice_domain::secret::Secret;
use sluice_protocol::capture::{self, BindRequest, Binds, CaptureStatus, FlushRequest, Replanned};
use sluice_protocol::{ExecRequest, ExecResponse, Refusal, RefusalCode, snapshot};

/// Why a call to a daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("the daemon cannot be reached: {0}")]
    Unreachable(String),
    /// The daemon refused; its code says why, its message is cut short.
    #[error("the daemon refused ({code:?}): {message}")]
    Refused { code: RefusalCode, message: String },
    #[error("the daemon did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the daemon's answer was larger than {0} bytes and was dropped")]
    AnswerTooLarge(usize),
    #[error("the daemon's answer was malformed: {0}")]
    Malformed(String),
}

impl DaemonError {
    /// The refusal's code, when the daemon refused.
    pub fn refusal(&self) -> Option<RefusalCode> {
        match self {
            DaemonError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}

impl From<DaemonError> for crate::ExecutorError {
    fn from(e: DaemonError) -> Self {
        match e {
            DaemonError::Refused { code, message } => crate::ExecutorError::Refused { code, message },
            other => crate::ExecutorError::Unreachable(other.to_string()),
        }
    }
}

/// The most a `health` or `status` answer may hold.
pub const MAX_SMALL_ANSWER: usize = 64 << 10;
/// The most an `exec` answer may hold: two streams of at most 1 MiB each,
/// JSON-escaped (a control byte escapes to six), and the rest of the answer.
pub const MAX_EXEC_ANSWER: usize = 2 * 6 * (1 << 20) + (64 << 10);
/// The most a snapshot scan's answer may hold: its manifests and object list.
pub const MAX_SCAN_ANSWER: usize = 64 << 20;

/// A daemon's open watch stream.
pub struct WatchStream {
    body: hyper::body::Incoming,
}

impl WatchStream {
    /// Waits until the daemon says anything or the stream closes: either
    /// way, the executor is worth a look. Whatever the daemon sent is
    /// dropped unread (one read's worth at most).
    pub async fn closed(mut self) {
        let _ = self.body.frame().await;
    }
}

/// An error and its causes, as one line (the client's own error names
/// only its class).
fn causes(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line
}

/// What a durable-command call does.
#[derive(Debug, Clone)]
pub enum CommandCall {
    Start(ExecRequest),
    Read,
    Cancel,
}

/// A daemon's control endpoint and the token it accepts.
pub struct DaemonClient {
    socket: String,
    token: Secret<String>,
}

/// A request body as JSON.
fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, DaemonError> {
    serde_json::to_vec(value).map_err(|e| DaemonError::Unreachable(e.to_string()))
}

/// A daemon's refusal: its code and the start of its message (shown in run
/// errors and logs, where a daemon does not get to write much). A refusal
/// without one of the protocol's codes is the daemon failing.
fn refusal(status: StatusCode, body: &[u8]) -> DaemonError {
    match serde_json::from_slice::<Refusal>(body) {
        Ok(r) => DaemonError::Refused { code: r.code, message: r.message.chars().take(200).collect() },
        Err(_) => DaemonError::Refused { code: RefusalCode::Internal, message: format!("answered {status}") },
    }
}

impl DaemonClient {
    /// `endpoint` is `unix://PATH`, as the runtime recorded it.
    pub fn new(endpoint: &str, token: Secret<String>) -> Result<Self, DaemonError> {
        let socket = endpoint
            .strip_prefix("unix://")
            .ok_or_else(|| DaemonError::Unreachable(format!("unsupported endpoint {endpoint}")))?;
        Ok(DaemonClient { socket: socket.to_owned(), token })
    }

    /// A request to the daemon with its host and the control token.
    fn authorized(&self, method: Method, uri: Uri) -> hyper::http::request::Builder {
        Request::builder()
            .method(method)
            .uri(uri)
            .header(hyper::header::HOST, "sluiced")
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.token.expose()))
    }

    /// A connection of its own to the socket, not one of the kept ones: for
    /// a stream held open or a connection upgraded to a session.
    async fn dedicated(&self) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, DaemonError> {
        let unreachable = |e: &dyn std::fmt::Display| DaemonError::Unreachable(e.to_string());
        let stream = crate::connections::connect(&self.socket).await.map_err(|e| unreachable(&e))?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| unreachable(&e))?;
        tokio::spawn(connection.with_upgrades());
        Ok(sender)
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<(StatusCode, Bytes), DaemonError> {
        let unreachable = |e: &dyn std::fmt::Display| DaemonError::Unreachable(e.to_string());
        let uri = crate::connections::uri(&self.socket, path).map_err(|e| unreachable(&e))?;
        let request = self
            .authorized(method, uri)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| unreachable(&e))?;
        // On a kept connection to the socket, or a new one.
        let response = crate::connections::CLIENT.request(request).await.map_err(|e| unreachable(&causes(&e)))?;
        let status = response.status();
        let bytes = http_body_util::Limited::new(response.into_body(), limit).collect().await.map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                DaemonError::AnswerTooLarge(limit)
            } else {
                unreachable(&e)
            }
        })?;
        Ok((status, bytes.to_bytes()))
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
        limit: usize,
    ) -> Result<T, DaemonError> {
        let (status, bytes) = tokio::time::timeout(timeout, self.call(method, path, body, limit))
            .await
            .map_err(|_| DaemonError::Timeout(timeout))??;
        if !status.is_success() {
            return Err(refusal(status, &bytes));
        }
        // The position and class only: serde's message can quote the answer.
        serde_json::from_slice(&bytes).map_err(|e| {
            DaemonError::Malformed(format!("{:?} error at line {} column {}", e.classify(), e.line(), e.column()))
        })
    }

    /// Opens the daemon's watch stream, its head answered within `timeout`
    /// (see [`sluice_protocol::WATCH`]).
    pub async fn watch(&self, timeout: Duration) -> Result<WatchStream, DaemonError> {
        let unreachable = |e: &dyn std::fmt::Display| DaemonError::Unreachable(e.to_string());
        let open = async {
            let mut sender = self.dedicated().await?;
            let request = self
                .authorized(Method::GET, Uri::from_static(sluice_protocol::WATCH))
                .body(Full::new(Bytes::new()))
                .map_err(|e| unreachable(&e))?;
            sender.send_request(request).await.map_err(|e| unreachable(&e))
        };
        let response = tokio::time::timeout(timeout, open).await.map_err(|_| DaemonError::Timeout(timeout))??;
        if !response.status().is_success() {
            let status = response.status();
            let body = tokio::time::timeout(
                timeout,
                http_body_util::Limited::new(response.into_body(), MAX_SMALL_ANSWER).collect(),
            )
            .await;
            let body = body.ok().and_then(Result::ok).map(|b| b.to_bytes()).unwrap_or_default();
            return Err(refusal(status, &body));
        }
        Ok(WatchStream { body: response.into_body() })
    }

    /// Opens an interactive session: the connection, upgraded, on which
    /// the session's frames go (see [`sluice_protocol::session`]).
    pub async fn open_session(&self, timeout: Duration) -> Result<hyper::upgrade::Upgraded, DaemonError> {
        let unreachable = |e: &dyn std::fmt::Display| DaemonError::Unreachable(e.to_string());
        let open = async {
            let mut sender = self.dedicated().await?;
            let request = self
                .authorized(Method::GET, Uri::from_static(sluice_protocol::session::SESSION))
                .header(hyper::header::CONNECTION, "upgrade")
                .header(hyper::header::UPGRADE, sluice_protocol::session::UPGRADE)
                .body(Full::new(Bytes::new()))
                .map_err(|e| unreachable(&e))?;
            let response = sender.send_request(request).await.map_err(|e| unreachable(&e))?;
            if response.status() != StatusCode::SWITCHING_PROTOCOLS {
                let status = response.status();
                let body = http_body_util::Limited::new(response.into_body(), 64 << 10)
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                return Err(refusal(status, &body));
            }
            hyper::upgrade::on(response).await.map_err(|e| unreachable(&e))
        };
        tokio::time::timeout(timeout, open).await.map_err(|_| DaemonError::Timeout(timeout))?
    }

    /// Whether the daemon answers `health` with its token.
    pub async fn healthy(&self) -> bool {
        let health = self.json::<serde::de::IgnoredAny>(
            Method::GET,
            sluice_protocol::HEALTH,
            None,
            Duration::from_secs(2),
            MAX_SMALL_ANSWER,
        );
        health.await.is_ok()
    }

    /// Whether the daemon answers `health` as a pooled daemon, not yet
    /// assigned a run (no token is needed for that).
    pub async fn pooled(&self) -> bool {
        #[derive(serde::Deserialize)]
        struct Health {
            status: String,
        }
        let health =
            self.json::<Health>(Method::GET, sluice_protocol::HEALTH, None, Duration::from_secs(2), MAX_SMALL_ANSWER);
        health.await.is_ok_and(|h| h.status == "pooled")
    }

    /// Makes a pooled daemon the run's executor (see
    /// [`sluice_protocol::ASSIGN`]): done again for the same launch, refused
    /// `assigned` for another.
    pub async fn assign(&self, request: &sluice_protocol::AssignRequest, timeout: Duration) -> Result<(), DaemonError> {
        let bytes = encode(request)?;
        let (status, body) = tokio::time::timeout(
            timeout,
            self.call(Method::POST, sluice_protocol::ASSIGN, Some(bytes), MAX_SMALL_ANSWER),
        )
        .await
        .map_err(|_| DaemonError::Timeout(timeout))??;
        if status.is_success() { Ok(()) } else { Err(refusal(status, &body)) }
    }

    /// How the executor is used now.
    pub async fn activity(&self, timeout: Duration) -> Result<sluice_protocol::Activity, DaemonError> {
        self.json(Method::GET, sluice_protocol::ACTIVITY, None, timeout, MAX_SMALL_ANSWER).await
    }

    /// The daemon's capture status.
    pub async fn capture_status(&self, timeout: Duration) -> Result<CaptureStatus, DaemonError> {
        self.json(Method::GET, capture::CAPTURE_STATUS, None, timeout, MAX_SMALL_ANSWER).await
    }

    /// Flushes the daemon's captures; answers its status after.
    pub async fn capture_flush(&self, request: &FlushRequest, timeout: Duration) -> Result<CaptureStatus, DaemonError> {
        let bytes = encode(request)?;
        self.json(Method::POST, capture::CAPTURE_FLUSH, Some(bytes), timeout, MAX_SMALL_ANSWER).await
    }

    /// Re-plans the daemon's capture.
    pub async fn capture_replan(&self, timeout: Duration) -> Result<Replanned, DaemonError> {
        self.json(Method::POST, capture::CAPTURE_REPLAN, Some(b"{}".to_vec()), timeout, MAX_SMALL_ANSWER).await
    }

    /// Applies a bind; answers the live binds.
    pub async fn bind(&self, request: &BindRequest, timeout: Duration) -> Result<Binds, DaemonError> {
        let bytes = encode(request)?;
        self.json(Method::POST, capture::BIND, Some(bytes), timeout, MAX_SMALL_ANSWER).await
    }

    /// A call whose successful answer is bytes, not JSON.
    async fn raw(&self, path: &str, body: Vec<u8>, timeout: Duration, limit: usize) -> Result<Bytes, DaemonError> {
        let (status, body) = tokio::time::timeout(timeout, self.call(Method::POST, path, Some(body), limit))
            .await
            .map_err(|_| DaemonError::Timeout(timeout))??;
        if status.is_success() {
            return Ok(body);
        }
        Err(refusal(status, &body))
    }

    /// Scans a directory for a snapshot: its manifests and objects.
    pub async fn snapshot_scan(&self, dir: &str, timeout: Duration) -> Result<snapshot::Scanned, DaemonError> {
        let bytes = encode(&snapshot::ScanRequest { dir: dir.to_owned() })?;
        self.json(Method::POST, snapshot::SNAPSHOT_SCAN, Some(bytes), timeout, MAX_SCAN_ANSWER).await
    }

    /// Pulls objects of a scan as frames (at most `bytes` of objects).
    pub async fn snapshot_objects(
        &self,
        request: &snapshot::ObjectsRequest,
        bytes: usize,
        timeout: Duration,
    ) -> Result<Bytes, DaemonError> {
        let body = encode(request)?;
        self.raw(snapshot::SNAPSHOT_OBJECTS, body, timeout, bytes + 72 * request.keys.len()).await
    }

    /// Makes a directory match a snapshot in all but file contents.
    pub async fn snapshot_prepare(
        &self,
        request: &snapshot::PrepareRequest,
        timeout: Duration,
    ) -> Result<snapshot::Prepared, DaemonError> {
        let body = encode(request)?;
        // It names at most the files it was sent.
        let limit = body.len() + (64 << 10);
        self.json(Method::POST, snapshot::SNAPSHOT_PREPARE, Some(body), timeout, limit).await
    }

    /// Writes one batch of a snapshot's files.
    pub async fn snapshot_write(
        &self,
        batch: &snapshot::WriteBatch,
        frames: &[u8],
        timeout: Duration,
    ) -> Result<(), DaemonError> {
        let header = encode(batch)?;
        let mut body = Vec::with_capacity(4 + header.len() + frames.len());
        body.extend_from_slice(&(header.len() as u32).to_be_bytes());
        body.extend_from_slice(&header);
        body.extend_from_slice(frames);
        self.raw(snapshot::SNAPSHOT_WRITE, body, timeout, MAX_SMALL_ANSWER).await.map(drop)
    }

    /// Starts (`Some(request)`), reads or cancels a durable command.
    pub async fn command(
        &self,
        identity: &str,
        call: CommandCall,
        timeout: Duration,
    ) -> Result<sluice_protocol::CommandStatus, DaemonError> {
        let path = format!("{}/{identity}", sluice_protocol::COMMANDS);
        match call {
            CommandCall::Start(request) => {
                let bytes = encode(&request)?;
                self.json(Method::PUT, &path, Some(bytes), timeout, MAX_EXEC_ANSWER).await
            }
            CommandCall::Read => self.json(Method::GET, &path, None, timeout, MAX_EXEC_ANSWER).await,
            CommandCall::Cancel => {
                self.json(Method::POST, &format!("{path}/cancel"), Some(b"{}".to_vec()), timeout, MAX_EXEC_ANSWER).await
            }
        }
    }

    pub async fn exec(&self, request: &ExecRequest, timeout: Duration) -> Result<ExecResponse, DaemonError> {
        let bytes = encode(request)?;
        self.json(Method::POST, sluice_protocol::EXEC, Some(bytes), timeout, MAX_EXEC_ANSWER).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A fake daemon on a unix socket that answers every connection with
    /// `head` and then `body_bytes` bytes of `fill`, as fast as it is read,
    /// and then holds the connection open.
    fn fake_daemon(dir: &std::path::Path, head: String, body_bytes: usize, fill: u8) -> String {
        let path = dir.join("fake.sock");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let head = head.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    let _ = stream.read(&mut request).await;
                    if stream.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = vec![fill; 64 << 10];
                    let mut sent = 0;
                    while sent < body_bytes {
                        let n = chunk.len().min(body_bytes - sent);
                        if stream.write_all(&chunk[..n]).await.is_err() {
                            return;
                        }
                        sent += n;
                    }
                    // Holds the connection open, as a daemon that stalls would.
                    std::future::pending::<()>().await;
                    drop(stream);
                });
            }
        });
        format!("unix://{}", path.display())
    }

    #[tokio::test]
    async fn an_oversized_answer_fails_the_call_without_being_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let size = 200 << 20;
        let endpoint =
            fake_daemon(dir.path(), format!("HTTP/1.1 200 OK\r\ncontent-length: {size}\r\n\r\n"), size, b' ');
        let client = DaemonClient::new(&endpoint, Secret::new("t".repeat(32))).unwrap();
        let err = client.exec(&ExecRequest::default(), Duration::from_secs(30)).await.unwrap_err();
        assert!(matches!(err, DaemonError::AnswerTooLarge(MAX_EXEC_ANSWER)), "{err}");
        assert!(!client.healthy().await);
    }

    #[tokio::test]
    async fn a_silent_or_malformed_daemon_fails_the_call_in_bounded_time() {
        let dir = tempfile::tempdir().unwrap();
        // Headers promised, the body never finished.
        let endpoint = fake_daemon(dir.path(), "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{".into(), 0, b' ');
        let client = DaemonClient::new(&endpoint, Secret::new("t".repeat(32))).unwrap();
        let started = std::time::Instant::now();
        let err = client.exec(&ExecRequest::default(), Duration::from_millis(300)).await;
        assert!(matches!(err, Err(DaemonError::Timeout(_))));
        assert!(started.elapsed() < Duration::from_secs(5));

        let other = tempfile::tempdir().unwrap();
        let secretish = "printed-by-the-workload";
        let body = format!("{{\"exitCode\": \"{secretish}\"}}");
        let endpoint = fake_daemon(
            other.path(),
            format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len()),
            0,
            b' ',
        );
        let client = DaemonClient::new(&endpoint, Secret::new("t".repeat(32))).unwrap();
        let err = client.exec(&ExecRequest::default(), Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(err, DaemonError::Malformed(_)), "{err}");
        assert!(!err.to_string().contains(secretish), "the error does not quote the answer: {err}");
    }

    #[tokio::test]
    async fn a_refusal_is_known_by_its_code_and_one_without_a_known_code_is_a_failure() {
        for (body, code) in [
            (r#"{"code":"scan-gone","message":"no such scan"}"#, RefusalCode::ScanGone),
            (r#"{"code":"made-up","message":"trust me"}"#, RefusalCode::Internal),
            (r#"not json"#, RefusalCode::Internal),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let head = format!("HTTP/1.1 404 Not Found\r\ncontent-length: {}\r\n\r\n{body}", body.len());
            let endpoint = fake_daemon(dir.path(), head, 0, b' ');
            let client = DaemonClient::new(&endpoint, Secret::new("t".repeat(32))).unwrap();
            let err = client.exec(&ExecRequest::default(), Duration::from_secs(5)).await.unwrap_err();
            assert_eq!(err.refusal(), Some(code), "{body}: {err}");
            assert!(!err.to_string().contains("trust me") || code == RefusalCode::ScanGone, "{err}");
        }
    }

    #[tokio::test]
    async fn sockets_with_paths_longer_than_an_address_are_reached() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a-directory-name-long-enough-".repeat(4));
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("control.sock");
        assert!(socket.as_os_str().len() > crate::connections::SUN_PATH_MAX);
        let handle = std::fs::File::open(&dir).unwrap();
        let short = format!("/proc/self/fd/{}/control.sock", std::os::fd::AsRawFd::as_raw_fd(&handle));
        let listener = tokio::net::UnixListener::bind(&short).unwrap();
        let accepted = tokio::spawn(async move { listener.accept().await.is_ok() });
        assert!(tokio::net::UnixStream::connect(&socket).await.is_err(), "too long to connect to as it is");
        crate::connections::connect(socket.to_str().unwrap()).await.expect("reached through its directory");
        assert!(accepted.await.unwrap());
    }
}
