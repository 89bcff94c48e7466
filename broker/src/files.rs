//! Reading and writing one file in a workspace, through the executor's
//! daemon, as the workspace's workload. The path travels in the body only,
//! and is never logged.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use sluice_executor::{ExecutorError, RefusalCode, Target};

use crate::exec::{absolute_path, decode, executor, upstream};
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

/// The protocol's codes for what the daemon's file call answered.
fn file_error(e: ExecutorError) -> BrokerError {
    match e.refusal() {
        Some(RefusalCode::FileNotFound) => {
            BrokerError::new(BrokerCode::FileNotFound, "the path does not exist in the workspace")
        }
        Some(RefusalCode::NotAFile) => BrokerError::new(BrokerCode::NotAFile, "the path is not a regular file"),
        Some(RefusalCode::FileTooLarge) => {
            BrokerError::new(BrokerCode::FileTooLarge, format!("the file is over max_file_bytes ({MAX_FILE_BYTES})"))
        }
        Some(RefusalCode::PermissionDenied) => {
            BrokerError::new(BrokerCode::NotAFile, "the workspace may not use that path")
        }
        Some(RefusalCode::ExecutorFinalized) => BrokerError::new(BrokerCode::WorkspaceGone, "the workspace is ending"),
        _ => upstream(e),
    }
}

pub async fn read(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path(id): Path<WorkspaceId>,
    BrokerJson(body): BrokerJson<ReadBody>,
) -> Result<Response, BrokerError> {
    absolute_path("path", &body.path)?;
    let (_, run_id, endpoint) = executor(&state, &lease.instance, &id).await?;
    let control = state.control.as_ref().ok_or_else(BrokerError::internal)?;
    let request = sluice_protocol::FileRead { path: body.path, max_bytes: MAX_FILE_BYTES };
    let contents =
        control.read_file(Target { run_id: &run_id, endpoint: &endpoint }, request).await.map_err(file_error)?;
    Ok(ok(StatusCode::OK, json!({"contents_b64": contents.contents_b64, "size_bytes": contents.size_bytes})))
}

pub async fn write(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path(id): Path<WorkspaceId>,
    BrokerJson(body): BrokerJson<WriteBody>,
) -> Result<Response, BrokerError> {
    absolute_path("path", &body.path)?;
    decode("contents_b64", &body.contents_b64, MAX_FILE_BYTES)?;
    let (_, run_id, endpoint) = executor(&state, &lease.instance, &id).await?;
    let control = state.control.as_ref().ok_or_else(BrokerError::internal)?;
    let request = sluice_protocol::FileWrite { path: body.path, contents_b64: body.contents_b64 };
    control.write_file(Target { run_id: &run_id, endpoint: &endpoint }, request).await.map_err(file_error)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
