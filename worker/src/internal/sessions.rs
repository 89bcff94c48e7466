//! Gateways' interactive sessions, relayed to this host's executors. A
//! gateway with a ticket for a run upgrades its connection; the worker
//! opens the session on the daemon's socket and passes frames both ways
//! (each read bounded by [`session::MAX_FRAME`]). The session is recorded
//! (principal, key, kind, start, end, exit status) and counts as use of
//! the workspace; what goes through it is never looked at beyond the
//! frame kinds.

use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::response::IntoResponse;
use axum::response::Response;
use hyper_util::rt::TokioIo;
use sluice_executor::daemon::DaemonClient;
use sluice_protocol::session::{self, Exit, FrameKind, Open, Refusal};
use sluice_store::ssh_keys::SessionOutcome;
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use super::refusal::{Refusal as Refused, switching_protocols};
use super::server::{Serving, ticketed_run};
use sluice_domain::ids::{RunId, SshSessionId, WorkspaceId};

/// Sessions one worker relays at once.
const MAX_SESSIONS: usize = 256;
static SESSIONS: Semaphore = Semaphore::const_new(MAX_SESSIONS);

/// The header a gateway names the user's key in (its SHA256 fingerprint).
pub const KEY_HEADER: &str = "x-sluice-key-fingerprint";

/// How long the daemon has to take the session.
const OPEN_WITHIN: Duration = Duration::from_secs(10);

/// A gateway that sends nothing for this long (it pings meanwhile) is gone.
const SILENT_FOR: Duration = Duration::from_millis(3 * session::PING_EVERY_MS);

/// How often a live session renews the workspace's use.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// `GET /gateway/v1/executors/{run}/session`, upgraded.
pub async fn relay(State(serving): State<Serving>, Path(run_id): Path<RunId>, mut request: Request) -> Response {
    let (run, ticket) = match ticketed_run(&serving, &run_id, request.headers()).await {
        Ok(found) => found,
        Err(refused) => return refused.into_response(),
    };
    let protocol = session::UPGRADE;
    let upgrade_asked =
        request.headers().get(axum::http::header::UPGRADE).and_then(|v| v.to_str().ok()) == Some(protocol);
    if !upgrade_asked {
        return Refused::Invalid(format!("a session is opened with Upgrade: {protocol}")).into_response();
    }
    let fingerprint = request
        .headers()
        .get(KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|f| f.len() <= 100 && f.starts_with("SHA256:"))
        .map(str::to_owned);
    let Some(endpoint) =
        run.runtime.as_ref().filter(|_| run.runtime_removed_at.is_none()).and_then(|r| r.endpoint.clone())
    else {
        return Refused::NotServing("the workspace's executor is not running".into()).into_response();
    };
    let Ok(permit) = SESSIONS.try_acquire() else {
        return Refused::Unavailable("this host has as many sessions as it takes".into()).into_response();
    };
    let token = crate::reconcile::control_token_for(serving.store.sealer(), &run.id);
    let daemon = match DaemonClient::new(&endpoint, token) {
        Ok(client) => client.open_session(OPEN_WITHIN).await,
        Err(e) => Err(e),
    };
    let daemon = match daemon {
        Ok(upgraded) => upgraded,
        Err(e) => {
            tracing::info!(run = %run.id, error = %e, "a session could not be opened on the executor");
            return Refused::Unavailable("the workspace's executor is not answering".into()).into_response();
        }
    };
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let _permit = permit;
        if let Ok(gateway) = upgrade.await {
            let who = Who {
                workspace_id: run.workspace_id.clone(),
                run_id: run.id.clone(),
                principal: ticket.principal,
                fingerprint,
            };
            pass(&serving, who, TokioIo::new(gateway), TokioIo::new(daemon)).await;
        }
    });
    switching_protocols()
        .header(axum::http::header::CONNECTION, "upgrade")
        .header(axum::http::header::UPGRADE, protocol)
        .body(axum::body::Body::empty())
        .unwrap_or_default()
}

struct Who {
    workspace_id: WorkspaceId,
    run_id: RunId,
    principal: String,
    fingerprint: Option<String>,
}

async fn refuse_gateway(gateway: &mut (impl tokio::io::AsyncWrite + Unpin), code: &str, message: &str) {
    let refusal = Refusal { code: code.into(), message: message.into() };
    let _ =
        sluice_session::write_frames(gateway, FrameKind::Refused, &serde_json::to_vec(&refusal).unwrap_or_default())
            .await;
    let _ = gateway.shutdown().await;
}

/// Passes one session's frames until it ends, and records it.
async fn pass<G, D>(serving: &Serving, who: Who, gateway: G, daemon: D)
where
    G: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    D: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (mut from_gateway, mut to_gateway) = tokio::io::split(gateway);
    let (mut from_daemon, mut to_daemon) = tokio::io::split(daemon);
    let open = match tokio::time::timeout(OPEN_WITHIN, sluice_session::read_frame(&mut from_gateway)).await {
        Ok(Ok(Some((FrameKind::Open, payload)))) => serde_json::from_slice::<Open>(&payload).ok().map(|o| (o, payload)),
        _ => None,
    };
    let Some((open, payload)) = open else {
        return refuse_gateway(&mut to_gateway, "invalid", "a session starts with an open frame").await;
    };
    let store = serving.store.clone();
    let recorded = store
        .session_started(&who.workspace_id, &who.run_id, &who.principal, who.fingerprint.as_deref(), open.kind())
        .await;
    let id = match recorded {
        Ok(id) => id,
        Err(e) => {
            // Unrecorded sessions are not opened.
            tracing::warn!(error = %e, "a session could not be recorded");
            return refuse_gateway(&mut to_gateway, "unavailable", "sessions cannot be recorded now; try again").await;
        }
    };
    tracing::info!(session = %id, run = %who.run_id, kind = open.kind(), "session opened");
    if sluice_session::write_frames(&mut to_daemon, FrameKind::Open, &payload).await.is_err() {
        let _ = store.session_ended(&SshSessionId::from(&id), SessionOutcome::Cut, None).await;
        return refuse_gateway(&mut to_gateway, "unavailable", "the workspace's executor went away").await;
    }
    // Gateway to daemon, on a task of its own: it ends when the gateway
    // leaves or falls silent, and then closes the daemon's side (which
    // hangs the session up).
    let upstream = {
        let store = store.clone();
        let workspace_id = who.workspace_id.clone();
        tokio::spawn(async move {
            let mut touched = tokio::time::Instant::now();
            loop {
                let frame = tokio::time::timeout(SILENT_FOR, sluice_session::read_frame(&mut from_gateway)).await;
                let Ok(Ok(Some((kind, payload)))) = frame else { break };
                if sluice_session::write_frames(&mut to_daemon, kind, &payload).await.is_err() {
                    break;
                }
                if touched.elapsed() >= TOUCH_EVERY {
                    touched = tokio::time::Instant::now();
                    let _ = store.touch_broker_workspace(&workspace_id).await;
                }
            }
            let _ = to_daemon.shutdown().await;
        })
    };
    // Daemon to gateway, here: it ends with the daemon's last frame.
    let mut ended = (SessionOutcome::Cut, None);
    while let Ok(Some((kind, payload))) = sluice_session::read_frame(&mut from_daemon).await {
        match kind {
            FrameKind::Refused => ended = (SessionOutcome::Refused, None),
            FrameKind::Exit => {
                let status = serde_json::from_slice::<Exit>(&payload).ok().map(|exit| i64::from(exit.status()));
                ended = (SessionOutcome::Exited, status);
            }
            _ => {}
        }
        if sluice_session::write_frames(&mut to_gateway, kind, &payload).await.is_err() {
            break;
        }
    }
    let _ = to_gateway.shutdown().await;
    upstream.abort();
    let (outcome, status) = ended;
    if let Err(e) = store.session_ended(&SshSessionId::from(&id), outcome, status).await {
        tracing::warn!(session = %id, error = %e, "a session's end could not be recorded");
    }
    let _ = store.touch_broker_workspace(&who.workspace_id).await;
    tracing::info!(session = %id, outcome = outcome.as_str(), "session ended");
}
