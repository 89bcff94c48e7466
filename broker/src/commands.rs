//! Durable commands: started under the client's identity at most once (the
//! executor's daemon claims the identity atomically), read back, and
//! cancelled, which fences a launch that has not happened yet. Output stays
//! in the executor.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine as _;
use serde_json::json;
use sluice_executor::daemon::CommandCall;
use sluice_executor::{RefusalCode, Target};
use sluice_protocol::CommandStatus;

use crate::exec::{ExecBody, daemon_request, executor, upstream, validate};
use crate::lease::{DEFAULT_EXEC_TIMEOUT_SECONDS, MAX_EXEC_TIMEOUT_SECONDS};
use crate::{Authenticated, BrokerCode, BrokerError, BrokerJson, Shared, ok};
use sluice_domain::ids::WorkspaceId;

fn valid_identity(identity: &str) -> Result<(), BrokerError> {
    let ok = (1..=128).contains(&identity.len())
        && identity.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
        && identity != "."
        && identity != "..";
    if ok { Ok(()) } else { Err(BrokerError::invalid("identity: 1 to 128 characters of [A-Za-z0-9._:-]")) }
}

fn status_json(status: &CommandStatus) -> serde_json::Value {
    let mut body = json!({"state": status.state});
    if matches!(status.state.as_str(), "completed" | "canceled") && status.exit_code.is_some() {
        let length = |b: &Option<String>| {
            b.as_ref().and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok()).map_or(0, |b| b.len())
        };
        body["exit_code"] = json!(status.exit_code);
        body["stdout_b64"] = json!(status.stdout_b64.clone().unwrap_or_default());
        body["stderr_b64"] = json!(status.stderr_b64.clone().unwrap_or_default());
        body["output_truncated"] = json!(status.output_truncated);
        body["stdout_bytes"] = json!(length(&status.stdout_b64));
        body["stderr_bytes"] = json!(length(&status.stderr_b64));
    }
    body
}

pub async fn start(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path((id, identity)): Path<(WorkspaceId, String)>,
    BrokerJson(body): BrokerJson<ExecBody>,
) -> Result<Response, BrokerError> {
    valid_identity(&identity)?;
    let stdin = validate(&body)?;
    let (_, run_id, endpoint) = executor(&state, &lease.instance, &id).await?;
    let timeout = match body.timeout_seconds {
        None | Some(0) => DEFAULT_EXEC_TIMEOUT_SECONDS,
        Some(t) => t.min(MAX_EXEC_TIMEOUT_SECONDS),
    };
    let control = state.control.as_ref().ok_or_else(BrokerError::internal)?;
    let request = daemon_request(body, stdin, timeout);
    let target = Target { run_id: &run_id, endpoint: &endpoint };
    let call = CommandCall::Start(request);
    let status = control.command(target, &identity, call).await.map_err(|e| match e.refusal() {
        // Refused before anything was dispatched.
        Some(RefusalCode::ExecutorFinalized | RefusalCode::Invalid | RefusalCode::CommandNotStartable) => BrokerError::new(
            BrokerCode::CommandNotStarted,
            "the command was not started: its program or directory was not found, or the workspace takes no new work",
        ),
        _ => upstream(e),
    })?;
    let code = if status.created { StatusCode::ACCEPTED } else { StatusCode::OK };
    Ok(ok(code, status_json(&status)))
}

pub async fn read(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path((id, identity)): Path<(WorkspaceId, String)>,
) -> Result<Response, BrokerError> {
    Ok(ok(StatusCode::OK, status_json(&read_or_cancel(&state, &lease.instance, &id, &identity, false).await?)))
}

pub async fn cancel(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path((id, identity)): Path<(WorkspaceId, String)>,
) -> Result<Response, BrokerError> {
    Ok(ok(StatusCode::ACCEPTED, status_json(&read_or_cancel(&state, &lease.instance, &id, &identity, true).await?)))
}

async fn read_or_cancel(
    state: &Shared,
    instance: &str,
    id: &WorkspaceId,
    identity: &str,
    cancel: bool,
) -> Result<CommandStatus, BrokerError> {
    valid_identity(identity)?;
    let (_, run_id, endpoint) = executor(state, instance, id).await?;
    let control = state.control.as_ref().ok_or_else(BrokerError::internal)?;
    let target = Target { run_id: &run_id, endpoint: &endpoint };
    let call = if cancel { CommandCall::Cancel } else { CommandCall::Read };
    control.command(target, identity, call).await.map_err(upstream)
}
