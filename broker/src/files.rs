//! Reading and writing one file in a workspace: the same operations the
//! workspaces API's files use, on the workload's whole filesystem rather
//! than its worktree, as the workload. The path travels in the body only,
//! and is never logged.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;
use sluice_executor::files::FileError;
use sluice_executor::{SessionStream, Target};
use sluice_protocol::session::Open;
use sluice_protocol::worktree::{FileOp, FilesRoot};

use crate::exec::{absolute_path, decode, executor, sandbox_failed, upstream};
use crate::lease::MAX_FILE_BYTES;
use crate::{Authenticated, BrokerCode, BrokerError, BrokerJson, Shared, ok};
use sluice_domain::ids::WorkspaceId;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadBody {
    path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBody {
    path: String,
    contents_b64: String,
}

/// The protocol's codes for what the daemon's file operation answered.
fn file_error(e: FileError) -> BrokerError {
    let code = match e {
        FileError::Executor(e) => return upstream(e),
        FileError::Refused { code, .. } => code,
    };
    match code.as_str() {
        "not-found" => BrokerError::new(BrokerCode::FileNotFound, "the path does not exist in the workspace"),
        "not-a-file" | "is-a-directory" | "not-a-directory" | "exists" => {
            BrokerError::new(BrokerCode::NotAFile, "the path is not a regular file")
        }
        "permission-denied" => BrokerError::new(BrokerCode::NotAFile, "the workspace may not use that path"),
        "finalized" => BrokerError::new(BrokerCode::WorkspaceGone, "the workspace is ending"),
        "invalid" | "outside-worktree" => BrokerError::invalid("path: an absolute path without `..`"),
        _ => sandbox_failed(&code),
    }
}

fn too_large() -> BrokerError {
    BrokerError::new(BrokerCode::FileTooLarge, format!("the file is over max_file_bytes ({MAX_FILE_BYTES})"))
}

/// A path as the workload's filesystem takes it, checked before anything
/// is sent.
fn file_path(path: &str) -> Result<(), BrokerError> {
    absolute_path("path", path)?;
    FilesRoot::Filesystem.parts(path).map_err(|_| BrokerError::invalid("path: an absolute path without `..`"))?;
    Ok(())
}

/// A session on the workspace's executor for one file operation on the
/// workload's filesystem (the daemon's worktree operations, from `/`).
async fn session(state: &Shared, instance: &str, id: &WorkspaceId) -> Result<SessionStream, BrokerError> {
    let (_, run_id, endpoint) = executor(state, instance, id).await?;
    let control = state.control.as_ref().ok_or_else(BrokerError::internal)?;
    control.open_session(Target { run_id: &run_id, endpoint: &endpoint }).await.map_err(upstream)
}

fn on_filesystem(op: FileOp) -> Open {
    Open::Files { op, root: FilesRoot::Filesystem }
}

pub async fn read(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path(id): Path<WorkspaceId>,
    BrokerJson(body): BrokerJson<ReadBody>,
) -> Result<Response, BrokerError> {
    file_path(&body.path)?;
    let session = session(&state, &lease.instance, &id).await?;
    // One byte past the bound tells a file that grew past it meanwhile.
    let op = FileOp::Read { path: body.path, offset: 0, length: Some(MAX_FILE_BYTES + 1) };
    let mut reading = sluice_executor::files::read(session, on_filesystem(op)).await.map_err(file_error)?;
    if reading.head.as_ref().is_some_and(|head| head.size > MAX_FILE_BYTES) {
        return Err(too_large());
    }
    let mut contents = Vec::new();
    while let Some(chunk) = reading.chunks.recv().await {
        contents.extend_from_slice(&chunk.map_err(file_error)?);
        if contents.len() as u64 > MAX_FILE_BYTES {
            return Err(too_large());
        }
    }
    let size_bytes = contents.len();
    let contents_b64 = base64::engine::general_purpose::STANDARD.encode(&contents);
    Ok(ok(StatusCode::OK, json!({"contents_b64": contents_b64, "size_bytes": size_bytes})))
}

pub async fn write(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path(id): Path<WorkspaceId>,
    BrokerJson(body): BrokerJson<WriteBody>,
) -> Result<Response, BrokerError> {
    file_path(&body.path)?;
    let contents = decode("contents_b64", &body.contents_b64, MAX_FILE_BYTES)?;
    let session = session(&state, &lease.instance, &id).await?;
    let (bytes, body_chunks) = tokio::sync::mpsc::channel(1);
    bytes.try_send(Ok(contents)).expect("room for the one chunk");
    drop(bytes);
    let op = FileOp::Write { path: body.path, mode: None, parents: true };
    sluice_executor::files::write(session, on_filesystem(op), body_chunks).await.map_err(file_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
