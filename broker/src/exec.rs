//! Exec: one command in the workspace, argv without a shell, through the
//! executor's daemon. Never replayed: the client reports an unknown outcome.

use std::time::Duration;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;
use sluice_executor::{ExecutorError, Target};

use crate::lease::{DEFAULT_EXEC_TIMEOUT_SECONDS, MAX_EXEC_TIMEOUT_SECONDS, MAX_FILE_BYTES, MAX_OUTPUT_BYTES};
use crate::workspaces::{owned, usable};
use crate::{Authenticated, BrokerCode, BrokerError, BrokerJson, Shared, ok};
use sluice_domain::ids::{RunId, WorkspaceId};

/// Past the command's own timeout, how long the daemon may take to answer.
const TRANSPORT_SLACK: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecBody {
    pub argv: Vec<String>,
    pub dir: Option<String>,
    pub stdin_b64: Option<String>,
    pub timeout_seconds: Option<u64>,
}

/// An absolute path in the workspace: at most 4096 bytes, no NUL.
pub(crate) fn absolute_path(field: &str, path: &str) -> Result<(), BrokerError> {
    if !path.starts_with('/') || path.len() > 4096 || path.contains('\0') {
        return Err(BrokerError::invalid(format!("{field}: an absolute path of at most 4096 bytes")));
    }
    Ok(())
}

pub(crate) fn decode(field: &str, encoded: &str, max: u64) -> Result<Vec<u8>, BrokerError> {
    if encoded.len() as u64 > max.div_ceil(3) * 4 + 4 {
        return Err(too_large(field));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| BrokerError::invalid(format!("{field}: standard base64 with padding")))?;
    if bytes.len() as u64 > max {
        return Err(too_large(field));
    }
    Ok(bytes)
}

fn too_large(field: &str) -> BrokerError {
    BrokerError::new(BrokerCode::PayloadTooLarge, format!("{field}: at most {MAX_FILE_BYTES} bytes decoded"))
}

pub(crate) fn upstream(e: ExecutorError) -> BrokerError {
    // Only the class: a daemon's message may quote the request (argv, paths).
    let class = match &e {
        ExecutorError::Unreachable(_) => "unreachable",
        ExecutorError::NotHere(_) => "not reachable from this process",
        ExecutorError::Refused { code, .. } => code.as_str(),
        ExecutorError::HostUnavailable { host, .. } => {
            tracing::warn!(%host, "the workspace's host does not answer");
            let message = format!("the workspace's host {host} does not answer; try again shortly");
            return BrokerError::new(BrokerCode::Unavailable, message).reason("host_unavailable").retry_after(5);
        }
    };
    sandbox_failed(class)
}

/// The answer to a daemon's failure, known by its class alone.
pub(crate) fn sandbox_failed(class: &str) -> BrokerError {
    tracing::warn!(daemon = %class, "the executor's daemon failed a broker call");
    let mut error = BrokerError::new(BrokerCode::UpstreamError, "the workspace's sandbox failed");
    error.retryable = true;
    error
}

/// A workspace used within this long is not written used again: idle time
/// is counted in seconds, and a burst of calls should not write each.
const TOUCH_EVERY_MS: i64 = 1000;

/// The executor of a usable workspace: its run and control endpoint, read
/// with the workspace in one query.
pub(crate) async fn executor(
    state: &Shared,
    instance: &str,
    id: &WorkspaceId,
) -> Result<(sluice_store::broker::BrokerWorkspace, RunId, String), BrokerError> {
    let workspace = owned(state, instance, id).await?;
    usable(state, &workspace).await?;
    let run_id = workspace.current_run_id.clone().ok_or_else(BrokerError::internal)?;
    let endpoint = workspace
        .endpoint
        .clone()
        .ok_or_else(|| BrokerError::new(BrokerCode::WorkspaceNotReady, "the workspace is starting").retry_after(1))?;
    if sluice_store::clock::now_ms() - workspace.last_used_at >= TOUCH_EVERY_MS {
        state.store.touch_broker_workspace(id).await?;
    }
    Ok((workspace, run_id, endpoint))
}

/// Checks a command body (exec and durable commands alike); answers its
/// stdin, still base64.
pub(crate) fn validate(body: &ExecBody) -> Result<Option<String>, BrokerError> {
    let total: usize = body.argv.iter().map(String::len).sum();
    if body.argv.is_empty() || body.argv.len() > 4096 || total > 256 << 10 || body.argv[0].is_empty() {
        return Err(BrokerError::invalid("argv: 1 to 4096 strings, at most 256 KiB in all, naming a program"));
    }
    if body.argv.iter().any(|a| a.contains('\0')) {
        return Err(BrokerError::invalid("argv: no NUL characters"));
    }
    if let Some(dir) = body.dir.as_deref().filter(|d| !d.is_empty()) {
        absolute_path("dir", dir)?;
    }
    match &body.stdin_b64 {
        Some(encoded) if !encoded.is_empty() => {
            decode("stdin_b64", encoded, MAX_FILE_BYTES)?;
            Ok(Some(encoded.clone()))
        }
        _ => Ok(None),
    }
}

/// What the daemon is asked to run: bytes in and out, output capped.
pub(crate) fn daemon_request(
    body: ExecBody,
    stdin: Option<String>,
    timeout_seconds: u64,
) -> sluice_protocol::ExecRequest {
    sluice_protocol::ExecRequest {
        argv: body.argv,
        cwd: body.dir.filter(|d| !d.is_empty()),
        timeout_ms: Some(timeout_seconds * 1000),
        output_limit_bytes: Some(MAX_OUTPUT_BYTES as usize),
        stdin_b64: stdin,
        binary: true,
        ..Default::default()
    }
}

pub async fn exec(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path(id): Path<WorkspaceId>,
    BrokerJson(body): BrokerJson<ExecBody>,
) -> Result<Response, BrokerError> {
    let stdin = validate(&body)?;
    let (workspace, run_id, endpoint) = executor(&state, &lease.instance, &id).await?;
    let asked = match body.timeout_seconds {
        None | Some(0) => DEFAULT_EXEC_TIMEOUT_SECONDS,
        Some(t) => t,
    };
    let left = ((workspace.expires_at - sluice_store::clock::now_ms()).max(1000) / 1000) as u64;
    let timeout = asked.min(MAX_EXEC_TIMEOUT_SECONDS).min(left);
    let control = state.control.as_ref().ok_or_else(BrokerError::internal)?;
    let request = daemon_request(body, stdin, timeout);
    let target = Target { run_id: &run_id, endpoint: &endpoint };
    let answer =
        control.exec(target, request, Duration::from_secs(timeout) + TRANSPORT_SLACK).await.map_err(upstream)?;
    Ok(ok(
        StatusCode::OK,
        json!({
            "exit_code": answer.exit_code,
            "stdout_b64": answer.stdout_b64.unwrap_or_default(),
            "stderr_b64": answer.stderr_b64.unwrap_or_default(),
            "stdout_truncated": answer.stdout_truncated,
            "stderr_truncated": answer.stderr_truncated,
            "timeout_clamped": timeout != asked,
        }),
    ))
}
