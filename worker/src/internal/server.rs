//! The internal API's server: what a worker answers for its host's
//! executors. The serving worker finds the executor from its own records,
//! never from the caller's word, and only for a run placed on its host.
//! The wire of an executor call (its path, its request and answer) is
//! here too; [`super::routed`] sends them.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use sluice_domain::ids::{RunId, SnapshotId, WorkspaceId};
use sluice_executor::daemon::CommandCall;
use sluice_executor::{ExecutorError, Executors, RefusalCode, Target};
use sluice_protocol::ExecRequest;
use sluice_protocol::capture::{BindRequest, FlushRequest};
use sluice_store::Store;

use axum::response::IntoResponse;

use super::refusal::{Refusal, switching_protocols};

/// The path every call is posted to.
pub const CALL_PATH: &str = "/internal/v1/executor-calls";

/// Where a session on one of this host's executors is opened (an upgrade,
/// then the session's frames both ways), followed by the run's id.
pub const SESSION_PATH: &str = "/internal/v1/executor-sessions/";

/// Sessions relayed for other processes of the install at once.
static MEMBER_SESSIONS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1024);

/// The largest call or answer (a file write or read, base64, with room).
pub const MAX_CALL_BYTES: usize = 64 << 20;

/// The longest any one call may be given.
pub(super) const MAX_CALL_TIME: Duration = Duration::from_secs(15 * 60);

/// How long a call without its own bound may take (as on the host).
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Time on top of a call's own bound for the hop between hosts.
pub(super) const HOP_MARGIN: Duration = Duration::from_secs(5);

/// One call into an executor, as sent between hosts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "kebab-case")]
pub enum Call {
    Healthy,
    CaptureStatus { timeout_ms: u64 },
    CaptureFlush { request: FlushRequest, timeout_ms: u64 },
    CaptureReplan,
    Bind { request: BindRequest },
    CommandStart { identity: String, request: ExecRequest },
    CommandRead { identity: String },
    CommandCancel { identity: String },
    Snapshot { snapshot_id: SnapshotId, dir: String },
    Exec { request: ExecRequest, timeout_ms: u64 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRequest {
    pub run_id: RunId,
    pub call: Call,
}

/// How a call ended, as answered between hosts: the port's closed error,
/// or the value.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum CallAnswer {
    Ok { value: serde_json::Value },
    Unreachable { message: String },
    Refused { code: RefusalCode, message: String },
    NotHere { message: String },
}

pub(super) fn millis(d: Duration) -> u64 {
    d.min(MAX_CALL_TIME).as_millis() as u64
}

/// What the internal API needs: the store, this host's name, and the
/// executors of this host.
#[derive(Clone)]
pub struct Serving {
    pub store: Store,
    pub host: String,
    pub local: Arc<dyn Executors>,
}

pub use sluice_executor::ticket::GATEWAY_PATH;

/// What a gateway learns of the executor it may reach.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayTarget {
    pub run_id: RunId,
    pub workspace_id: WorkspaceId,
    pub host: String,
    /// Whether its daemon answers now.
    pub ready: bool,
}

/// The run a gateway's request names, when it carries a ticket for that
/// run and the run's executor is on this host; otherwise the refusal.
pub(crate) async fn ticketed_run(
    serving: &Serving,
    run_id: &RunId,
    headers: &axum::http::HeaderMap,
) -> Result<(sluice_store::model::Run, sluice_executor::ticket::Ticket), Refusal> {
    let presented = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(presented) = presented else {
        return Err(Refusal::Unauthenticated("a gateway ticket is required"));
    };
    let now = sluice_store::clock::now_ms();
    let ticket = match sluice_executor::ticket::Ticket::check(
        &|b| serving.store.sealer().keyed_digest(b),
        presented,
        run_id,
        now,
    ) {
        Ok(ticket) => ticket,
        Err(refused) => {
            tracing::info!(run = %run_id, %refused, "a gateway ticket was refused");
            return Err(Refusal::Unauthenticated("the gateway ticket is not valid for this executor"));
        }
    };
    match serving.store.get_run(run_id).await {
        Ok(Some(run)) if run.host.as_deref() == Some(serving.host.as_str()) => Ok((run, ticket)),
        Ok(_) => Err(Refusal::NotHere),
        Err(e) => {
            tracing::warn!(error = %e, "the store did not answer a gateway");
            Err(Refusal::Unavailable("try again shortly".into()))
        }
    }
}

/// A gateway connecting to an executor of this host: it must carry a
/// ticket for that run (see [`sluice_executor::ticket`]).
pub(super) async fn gateway_target(
    State(serving): State<Serving>,
    axum::extract::Path(run_id): axum::extract::Path<RunId>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    let run = match ticketed_run(&serving, &run_id, &headers).await {
        Ok((run, _)) => run,
        Err(refused) => return refused.into_response(),
    };
    let endpoint = run.runtime.as_ref().filter(|_| run.runtime_removed_at.is_none()).and_then(|r| r.endpoint.clone());
    let ready = match &endpoint {
        Some(endpoint) => serving.local.healthy(Target { run_id: &run.id, endpoint }).await,
        None => false,
    };
    let target = GatewayTarget {
        run_id: run.id.clone(),
        workspace_id: run.workspace_id.clone(),
        host: serving.host.clone(),
        ready,
    };
    Json(target).into_response()
}

fn answer<T: Serialize>(result: Result<T, ExecutorError>) -> CallAnswer {
    match result {
        Ok(value) => match serde_json::to_value(value) {
            Ok(value) => CallAnswer::Ok { value },
            Err(e) => CallAnswer::Unreachable { message: format!("the answer does not serialize: {e}") },
        },
        Err(ExecutorError::Unreachable(message)) => CallAnswer::Unreachable { message },
        Err(ExecutorError::Refused { code, message }) => CallAnswer::Refused { code, message },
        Err(ExecutorError::NotHere(message)) => CallAnswer::NotHere { message },
        Err(e @ ExecutorError::HostUnavailable { .. }) => CallAnswer::NotHere { message: e.to_string() },
    }
}

pub(super) async fn serve_call(
    State(serving): State<Serving>,
    headers: axum::http::HeaderMap,
    Json(request): Json<CallRequest>,
) -> Json<CallAnswer> {
    let span = tracing::info_span!("executor call", otel.kind = "server", run = %request.run_id);
    let traceparent = headers.get("traceparent").and_then(|v| v.to_str().ok());
    sluice_telemetry::traces::continue_trace(&span, traceparent, None);
    Json(tracing::Instrument::instrument(make_call(&serving, request), span).await)
}

/// The run and control endpoint of an executor of this host, from this
/// worker's own records; otherwise how the call is answered.
async fn executor_here(serving: &Serving, run_id: &RunId) -> Result<(String, String), CallAnswer> {
    let run = match serving.store.get_run(run_id).await {
        Ok(Some(run)) => run,
        Ok(None) => return Err(CallAnswer::NotHere { message: "no such executor".into() }),
        Err(e) => return Err(CallAnswer::Unreachable { message: format!("the store: {e}") }),
    };
    if run.host.as_deref() != Some(serving.host.as_str()) {
        return Err(CallAnswer::NotHere { message: format!("the executor is not on host {}", serving.host) });
    }
    match run.runtime.as_ref().filter(|_| run.runtime_removed_at.is_none()) {
        Some(runtime) => match &runtime.endpoint {
            Some(endpoint) => Ok((run.id.to_string(), endpoint.clone())),
            None => Err(CallAnswer::Unreachable { message: "the executor has no control endpoint".into() }),
        },
        None => Err(CallAnswer::Unreachable { message: "the executor is not on its runtime".into() }),
    }
}

/// `GET SESSION_PATH{run}`, upgraded: a session on the executor, its bytes
/// relayed as they are (the caller speaks the session protocol end to end).
pub(super) async fn serve_session(
    State(serving): State<Serving>,
    axum::extract::Path(run_id): axum::extract::Path<RunId>,
    mut request: axum::extract::Request,
) -> axum::response::Response {
    let upgrade = request.headers().get(axum::http::header::UPGRADE).and_then(|v| v.to_str().ok());
    if upgrade != Some(sluice_protocol::session::UPGRADE) {
        let message = format!("a session is opened with Upgrade: {}", sluice_protocol::session::UPGRADE);
        return Refusal::Invalid(message).into_response();
    }
    let (run, endpoint) = match executor_here(&serving, &run_id).await {
        Ok(found) => found,
        Err(answer) => return Refusal::NotServing(format!("{answer:?}")).into_response(),
    };
    let Ok(slot) = MEMBER_SESSIONS.try_acquire() else {
        return Refusal::Unavailable("this host relays as many sessions as it takes".into()).into_response();
    };
    let mut daemon = match serving.local.open_session(Target { run_id: &RunId::from(&run), endpoint: &endpoint }).await
    {
        Ok(session) => session,
        Err(e) => return Refusal::Upstream(e.to_string()).into_response(),
    };
    let upgraded = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let _slot = slot;
        if let Ok(caller) = upgraded.await {
            let _ = tokio::io::copy_bidirectional(&mut hyper_util::rt::TokioIo::new(caller), &mut daemon).await;
        }
    });
    switching_protocols()
        .header(axum::http::header::CONNECTION, "upgrade")
        .header(axum::http::header::UPGRADE, sluice_protocol::session::UPGRADE)
        .body(axum::body::Body::empty())
        .expect("a fixed response")
}

async fn make_call(serving: &Serving, request: CallRequest) -> CallAnswer {
    let (run_id, endpoint) = match executor_here(serving, &request.run_id).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let target = Target { run_id: &RunId::from(&run_id), endpoint: &endpoint };
    let local = &serving.local;
    let bounded = |ms: u64| Duration::from_millis(ms).min(MAX_CALL_TIME);
    match request.call {
        Call::Healthy => CallAnswer::Ok { value: serde_json::Value::Bool(local.healthy(target).await) },
        Call::CaptureStatus { timeout_ms } => answer(local.capture_status(target, bounded(timeout_ms)).await),
        Call::CaptureFlush { request, timeout_ms } => {
            answer(local.capture_flush(target, request, bounded(timeout_ms)).await)
        }
        Call::CaptureReplan => answer(local.capture_replan(target).await),
        Call::Bind { request } => answer(local.bind(target, request).await),
        Call::CommandStart { identity, request } => {
            answer(local.command(target, &identity, CommandCall::Start(request)).await)
        }
        Call::CommandRead { identity } => answer(local.command(target, &identity, CommandCall::Read).await),
        Call::CommandCancel { identity } => answer(local.command(target, &identity, CommandCall::Cancel).await),
        Call::Snapshot { snapshot_id, dir } => answer(local.snapshot(target, &snapshot_id, &dir).await),
        Call::Exec { request, timeout_ms } => answer(local.exec(target, request, bounded(timeout_ms)).await),
    }
}
