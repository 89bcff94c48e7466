//! The daemon's side of the registrar channel: HTTP/1.1 on the unix socket
//! the runtime mounted for it, with the session token as a bearer token.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sluice_protocol::registrar::{self as wire, RegistrarRefusal};

/// The most a registrar answer may hold (a plan carries whole manifests).
const MAX_ANSWER: usize = 1 << 30;
/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum RegistrarError {
    /// Not reachable, or not able to serve now (the registrar's own reason,
    /// such as `no space left in the object store`): the work waits and is
    /// tried again.
    #[error("{0}")]
    Unavailable(String),
    /// A refusal with the registrar's reason.
    #[error("the registrar refused: {} ({})", .0.message, .0.code)]
    Refused(RegistrarRefusal),
}

impl RegistrarError {
    /// Why shipping waits, for the status and the log.
    pub fn cause(&self) -> String {
        self.to_string()
    }

    pub fn code(&self) -> Option<&str> {
        match self {
            RegistrarError::Refused(r) => Some(&r.code),
            RegistrarError::Unavailable(_) => None,
        }
    }
}

#[derive(Clone)]
pub struct RegistrarClient {
    socket: PathBuf,
    token: String,
}

impl RegistrarClient {
    pub fn new(socket: PathBuf, token: String) -> RegistrarClient {
        RegistrarClient { socket, token }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<Bytes, RegistrarError> {
        let unavailable =
            |e: &dyn std::fmt::Display| RegistrarError::Unavailable(format!("the registrar is unreachable: {e}"));
        let exchange = async {
            let stream = tokio::net::UnixStream::connect(&self.socket).await.map_err(|e| unavailable(&e))?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| unavailable(&e))?;
            tokio::spawn(connection);
            let mut request = Request::builder()
                .method(method)
                .uri(path)
                .header(hyper::header::HOST, "registrar")
                .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.token))
                .header(hyper::header::CONTENT_TYPE, "application/json");
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let request = request.body(Full::new(body)).map_err(|e| unavailable(&e))?;
            let response = sender.send_request(request).await.map_err(|e| unavailable(&e))?;
            let status = response.status();
            let bytes = http_body_util::Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| unavailable(&e))?
                .to_bytes();
            Ok::<_, RegistrarError>((status, bytes))
        };
        let (status, bytes) =
            tokio::time::timeout(CALL_TIMEOUT, exchange).await.map_err(|_| unavailable(&"the call timed out"))??;
        if status.is_success() {
            return Ok(bytes);
        }
        match serde_json::from_slice::<RegistrarRefusal>(&bytes) {
            Ok(refusal) if refusal.code != wire::refusal::UNAVAILABLE && status != StatusCode::SERVICE_UNAVAILABLE => {
                Err(RegistrarError::Refused(refusal))
            }
            Ok(refusal) => Err(RegistrarError::Unavailable(refusal.message)),
            Err(_) if status.is_server_error() => {
                Err(RegistrarError::Unavailable(format!("the registrar answered {status}")))
            }
            Err(_) => Err(RegistrarError::Refused(RegistrarRefusal {
                code: wire::refusal::INVALID.into(),
                message: format!("answer {status}"),
                missing: Vec::new(),
            })),
        }
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, RegistrarError> {
        let body = serde_json::to_vec(body).map_err(|e| RegistrarError::Unavailable(e.to_string()))?;
        let bytes = self.call(method, path, &[], Bytes::from(body)).await?;
        serde_json::from_slice(&bytes).map_err(|e| RegistrarError::Unavailable(format!("a malformed answer: {e}")))
    }

    pub async fn claim(&self) -> Result<wire::Plan, RegistrarError> {
        self.json(Method::POST, wire::CLAIM, &serde_json::json!({})).await
    }

    pub async fn plan(&self) -> Result<wire::Plan, RegistrarError> {
        let bytes = self.call(Method::GET, wire::PLAN, &[], Bytes::new()).await?;
        serde_json::from_slice(&bytes).map_err(|e| RegistrarError::Unavailable(format!("a malformed answer: {e}")))
    }

    pub async fn lease(&self) -> Result<wire::Lease, RegistrarError> {
        let bytes = self.call(Method::GET, wire::LEASE, &[], Bytes::new()).await?;
        serde_json::from_slice(&bytes).map_err(|e| RegistrarError::Unavailable(format!("a malformed answer: {e}")))
    }

    pub async fn missing(&self, epoch: u64, keys: Vec<String>) -> Result<Vec<String>, RegistrarError> {
        let answer: wire::MissingAnswer =
            self.json(Method::POST, wire::MISSING, &wire::MissingRequest { epoch, keys }).await?;
        Ok(answer.missing)
    }

    /// Uploads framed objects (see [`wire::frame_header`]).
    pub async fn upload(&self, epoch: u64, frames: Vec<u8>) -> Result<(), RegistrarError> {
        self.call(Method::POST, wire::OBJECTS, &[(wire::EPOCH_HEADER, epoch.to_string())], Bytes::from(frames)).await?;
        Ok(())
    }

    /// Fetches objects of the plan in force; answers them in the order asked.
    pub async fn fetch(&self, keys: Vec<String>) -> Result<Vec<(String, Bytes)>, RegistrarError> {
        let body =
            serde_json::to_vec(&wire::FetchRequest { keys }).map_err(|e| RegistrarError::Unavailable(e.to_string()))?;
        let mut bytes = self.call(Method::POST, wire::FETCH, &[], Bytes::from(body)).await?;
        let mut objects = Vec::new();
        while !bytes.is_empty() {
            if bytes.len() < 72 {
                return Err(RegistrarError::Unavailable("a fetch answer ended inside a frame".into()));
            }
            let key = String::from_utf8_lossy(&bytes[..64]).into_owned();
            let len = u64::from_be_bytes(bytes[64..72].try_into().expect("eight bytes")) as usize;
            if bytes.len() < 72 + len {
                return Err(RegistrarError::Unavailable("a fetch answer ended inside a frame".into()));
            }
            let data = bytes.slice(72..72 + len);
            bytes = bytes.slice(72 + len..);
            objects.push((key, data));
        }
        Ok(objects)
    }

    pub async fn register(
        &self,
        request: &wire::RegisterRequest<&wire::Manifest>,
    ) -> Result<wire::Registered, RegistrarError> {
        self.json(Method::POST, wire::REGISTER, request).await
    }

    pub async fn seal(&self, request: &wire::SealRequest) -> Result<wire::Sealed, RegistrarError> {
        self.json(Method::POST, wire::SEAL, request).await
    }
}
