//! The preview listener: `PORT-WORKSPACEID.DOMAIN` is proxied to that port
//! inside the workspace, over a session on its executor's daemon
//! (HTTP/1.1, streaming bodies both ways, WebSocket and other upgrades).
//! A request is let through by a public grant of the port, by the cookie a
//! signed first visit left (for that host only), or by that visit itself;
//! every grant ends with the run it was made on. The listener has the API
//! listener's bounds (header read and idle timeouts, connection cap).

use std::future::Future;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use sluice_domain::preview::{self, Grant, Refusal, Serving};
use sluice_store::clock::now_ms;
use sluice_store::previews::Preview;

use crate::{AppState, PreviewSettings};
use sluice_domain::ids::{OwnerId, RunId, WorkspaceId};
use sluice_domain::sleep::WakeCause;

/// Headers that belong to one hop and are not passed on (an upgrade's
/// `Connection` and `Upgrade` are set again where one is asked for).
const HOP_BY_HOP: [header::HeaderName; 7] = [
    header::CONNECTION,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// Upgraded connections (WebSockets) carried at once: they leave the
/// listener's connection cap once upgraded.
static UPGRADED: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1024);

/// Serves previews on `listener` (over TLS when `tls` is given) until
/// `shutdown` resolves.
pub async fn serve(
    state: AppState,
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.config.http.clone();
    let app = Router::new().fallback(proxy).with_state(state);
    crate::listener::serve_over(app, listener, limits, tls, shutdown).await
}

/// The visit token a request carries in its query, and the query without it.
fn visit_token(query: Option<&str>) -> (Option<String>, String) {
    let mut token = None;
    let mut kept = Vec::new();
    for pair in query.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some((name, value)) if name == preview::VISIT_PARAM => token = Some(value.to_owned()),
            _ => kept.push(pair),
        }
    }
    (token, kept.join("&"))
}

/// The preview cookie's value, and the `Cookie` header without it (the
/// workspace's server never sees the token).
fn cookie_token(headers: &HeaderMap) -> (Option<String>, Option<String>) {
    let mut token = None;
    let mut kept = Vec::new();
    for value in headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()) {
        for cookie in value.split(';').map(str::trim).filter(|c| !c.is_empty()) {
            match cookie.split_once('=') {
                Some((name, value)) if name == preview::COOKIE => token = Some(value.to_owned()),
                _ => kept.push(cookie),
            }
        }
    }
    (token, (!kept.is_empty()).then(|| kept.join("; ")))
}

/// Why a request is not let through or not answered. A store that cannot
/// be read decides nothing: 503, never a grant's refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shut {
    /// A grant's refusal.
    Refused(Refusal),
    /// The store does not answer.
    Unavailable,
    /// This install serves no previews.
    NotServedHere,
    /// The host names no preview.
    NoPreviewAtHost,
    /// This process cannot reach executors.
    NoExecutorControl,
    /// The executor's daemon does not answer.
    ExecutorSilent,
    /// Nothing in the workspace accepts connections on the port.
    PortClosed,
    /// The request's path cannot be passed on.
    BadPath,
    /// The workspace's server did not answer.
    ServerSilent,
    /// The workspace's server switched protocols though the request did not ask.
    SwitchedUnasked,
    /// The listener carries as many upgraded connections as it takes.
    UpgradesFull,
}

impl Shut {
    /// The one place a preview answer's status is chosen.
    fn status(self) -> StatusCode {
        match self {
            Shut::Refused(Refusal::NoGrant | Refusal::Expired | Refusal::Revoked) => StatusCode::FORBIDDEN,
            Shut::Refused(Refusal::RunEnded) => StatusCode::GONE,
            Shut::Refused(Refusal::Asleep) => StatusCode::SERVICE_UNAVAILABLE,
            Shut::NotServedHere | Shut::NoPreviewAtHost => StatusCode::NOT_FOUND,
            Shut::BadPath => StatusCode::BAD_REQUEST,
            Shut::ExecutorSilent | Shut::PortClosed | Shut::ServerSilent | Shut::SwitchedUnasked => {
                StatusCode::BAD_GATEWAY
            }
            Shut::Unavailable | Shut::NoExecutorControl | Shut::UpgradesFull => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn message(self) -> &'static str {
        match self {
            Shut::Refused(Refusal::NoGrant) => "this preview is private: open the URL its owner was given",
            Shut::Refused(Refusal::Expired) => "this preview's grant has expired",
            Shut::Refused(Refusal::Revoked) => "this preview's grant was revoked",
            Shut::Refused(Refusal::RunEnded) => "this preview is gone: its workspace stopped or restarted",
            Shut::Refused(Refusal::Asleep) => "this preview's workspace is waking; try again shortly",
            Shut::Unavailable => "previews cannot be checked right now; try again shortly",
            Shut::NotServedHere => "previews are not served here",
            Shut::NoPreviewAtHost => "no preview is served at this host",
            Shut::NoExecutorControl => "this process cannot reach executors",
            Shut::ExecutorSilent => "the workspace's executor is not answering",
            Shut::PortClosed => "nothing in the workspace accepts connections on this port",
            Shut::BadPath => "the request's path cannot be passed on",
            Shut::ServerSilent => "the workspace's server did not answer",
            Shut::SwitchedUnasked => "the workspace's server switched protocols unasked",
            Shut::UpgradesFull => "this listener carries as many upgraded connections as it takes",
        }
    }
}

impl IntoResponse for Shut {
    fn into_response(self) -> Response {
        let mut response = (self.status(), format!("{}\n", self.message())).into_response();
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

impl From<Refusal> for Shut {
    fn from(refusal: Refusal) -> Shut {
        Shut::Refused(refusal)
    }
}

/// A store read the proxy needs; a failure is [`Shut::Unavailable`].
fn read<T>(answer: Result<Option<T>, sluice_store::StoreError>) -> Result<Option<T>, Shut> {
    answer.map_err(|e| {
        tracing::warn!(error = %e, "a preview could not read the store");
        Shut::Unavailable
    })
}

/// Whether `grant` lets a request for `port` of `workspace_id` through
/// now, reading the workspace's live run.
async fn admitted(
    app: &AppState,
    grant: &Preview,
    workspace_id: &WorkspaceId,
    port: u16,
) -> Result<(RunId, String), Shut> {
    let owner = OwnerId::from(&grant.created_by);
    let serving = |view: Option<&sluice_store::WorkspaceView>| {
        let live = view.and_then(|v| crate::routes::workspaces::live_executor(v).ok());
        let asleep = |v: &&sluice_store::WorkspaceView| {
            use sluice_domain::sleep::{Wakefulness, wakefulness};
            matches!(wakefulness(&v.workspace), Ok(Wakefulness::Asleep | Wakefulness::FallingAsleep))
        };
        let sleeping_run = view.filter(asleep).and_then(|v| v.workspace.current_run_id.clone());
        (Serving { live_run: live.as_ref().map(|(run, _)| run.clone()), sleeping_run }, live)
    };
    let view = read(app.store.get_workspace(&owner, &grant.grant.workspace_id).await)?;
    let (now_serving, live) = serving(view.as_ref());
    match preview::admits(&grant.grant, workspace_id, port, &now_serving, now_ms()) {
        Ok(()) => return Ok(live.ok_or(Refusal::RunEnded)?),
        Err(Refusal::Asleep) => {}
        Err(refusal) => return Err(refusal.into()),
    }
    // A visit with a grant that holds wakes the workspace: the visitor
    // waits for it, and the grant goes on with the run that resumes it.
    let woken = crate::waiting::awake(app, &owner, workspace_id, WakeCause::Preview, None).await;
    let view = woken.map_err(|e| {
        tracing::info!(workspace = %workspace_id, error = %e, "a preview could not wake its workspace");
        Shut::Unavailable
    })?;
    let grant = read(app.store.preview(workspace_id, &grant.id).await)?.ok_or(Refusal::NoGrant)?;
    let (now_serving, live) = serving(Some(&view));
    preview::admits(&grant.grant, workspace_id, port, &now_serving, now_ms())?;
    Ok(live.ok_or(Refusal::RunEnded)?)
}

async fn proxy(State(app): State<AppState>, mut request: Request) -> Response {
    let Some(settings) = app.config.previews.clone() else {
        return Shut::NotServedHere.into_response();
    };
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    let Some((port, workspace_id)) = host.as_deref().and_then(|h| preview::parse_host(h, &settings.domain)) else {
        return Shut::NoPreviewAtHost.into_response();
    };
    let (visit, query) = visit_token(request.uri().query());
    let (cookie, other_cookies) = cookie_token(request.headers());

    // A signed first visit: checked, then answered with the cookie and a
    // redirect to the same place without the token.
    if let Some(token) = visit {
        let grant = match read(app.store.preview_by_token(&token).await) {
            Ok(grant) => grant,
            Err(shut) => return shut.into_response(),
        };
        let Some(grant) = grant else { return Shut::Refused(Refusal::NoGrant).into_response() };
        if let Err(refusal) = admitted(&app, &grant, &workspace_id, port).await {
            return refusal.into_response();
        }
        let path = request.uri().path();
        let location = if query.is_empty() { path.to_owned() } else { format!("{path}?{query}") };
        return visited(&settings, &grant.grant, &token, &location);
    }
    // The cookie's grant first; where it does not let the request through
    // (expired, revoked), a public grant of the port still may.
    let mut refusal = Shut::Refused(Refusal::NoGrant);
    let mut live = None;
    if let Some(token) = &cookie {
        match read(app.store.preview_by_token(token).await) {
            Ok(Some(grant)) => match admitted(&app, &grant, &workspace_id, port).await {
                Ok(found) => live = Some(found),
                Err(why) => refusal = why,
            },
            Ok(None) => {}
            Err(shut) => return shut.into_response(),
        }
    }
    let public = if live.is_none() { read(app.store.public_preview(&workspace_id, port).await) } else { Ok(None) };
    let public = match public {
        Ok(public) => public,
        Err(shut) => return shut.into_response(),
    };
    if let Some(grant) = public {
        match admitted(&app, &grant, &workspace_id, port).await {
            Ok(found) => live = Some(found),
            Err(why) => refusal = why,
        }
    }
    let Some((run_id, endpoint)) = live else { return refusal.into_response() };
    let Some(control) = app.config.control.clone() else {
        return Shut::NoExecutorControl.into_response();
    };
    let target = sluice_executor::Target { run_id: &run_id, endpoint: &endpoint };
    let session = match control.open_session(target).await {
        Ok(session) => session,
        Err(e) => {
            tracing::info!(workspace = %workspace_id, error = %e, "a preview could not reach its executor");
            return Shut::ExecutorSilent.into_response();
        }
    };
    let stream = match sluice_session::connect_port(session, port).await {
        Ok(stream) => stream,
        Err(_) => return Shut::PortClosed.into_response(),
    };

    // The request as the workspace's server gets it: origin form, no
    // preview cookie or token, no hop-by-hop headers.
    let upgrade = request.headers().get(header::UPGRADE).cloned();
    let client_upgrade = upgrade.is_some().then(|| hyper::upgrade::on(&mut request));
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    parts.uri = match if query.is_empty() { path.parse() } else { format!("{path}?{query}").parse() } {
        Ok(uri) => uri,
        Err(_) => return Shut::BadPath.into_response(),
    };
    for name in HOP_BY_HOP {
        parts.headers.remove(name);
    }
    parts.headers.remove(header::COOKIE);
    if let Some(cookies) = other_cookies.and_then(|c| HeaderValue::from_str(&c).ok()) {
        parts.headers.insert(header::COOKIE, cookies);
    }
    if let Some(upgrade) = &upgrade {
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        parts.headers.insert(header::UPGRADE, upgrade.clone());
    }
    parts.version = axum::http::Version::HTTP_11;
    // HTTP/2 names the host in the request's authority; HTTP/1.1 needs the header.
    if !parts.headers.contains_key(header::HOST)
        && let Some(host) = host.as_deref().and_then(|h| HeaderValue::from_str(h).ok())
    {
        parts.headers.insert(header::HOST, host);
    }
    let (mut sender, connection) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
        Ok(pair) => pair,
        Err(_) => return Shut::ServerSilent.into_response(),
    };
    tokio::spawn(connection.with_upgrades());
    let mut response = match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(_) => return Shut::ServerSilent.into_response(),
    };
    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
        let Some(client_upgrade) = client_upgrade else {
            return Shut::SwitchedUnasked.into_response();
        };
        let Ok(slot) = UPGRADED.try_acquire() else {
            return Shut::UpgradesFull.into_response();
        };
        let server_upgrade = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            let _slot = slot;
            if let (Ok(client), Ok(server)) = (client_upgrade.await, server_upgrade.await) {
                let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(client), &mut TokioIo::new(server)).await;
            }
        });
        let (parts, _) = response.into_parts();
        return Response::from_parts(parts, Body::empty());
    }
    let (mut parts, body) = response.into_parts();
    for name in HOP_BY_HOP {
        parts.headers.remove(name);
    }
    Response::from_parts(parts, Body::new(body))
}

/// The answer to a signed first visit: the grant's cookie (this host only,
/// never readable by scripts, never sent cross-site on a subrequest) and a
/// redirect to where the visit was going.
fn visited(settings: &PreviewSettings, grant: &Grant, token: &str, location: &str) -> Response {
    let max_age = ((grant.expires_at - now_ms()) / 1000).max(1);
    let secure = if settings.scheme == "https" { "; Secure" } else { "" };
    let cookie = format!("{}={token}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}", preview::COOKIE);
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(cookie), Ok(location)) = (HeaderValue::from_str(&cookie), HeaderValue::from_str(location)) {
        headers.insert(header::SET_COOKIE, cookie);
        headers.insert(header::LOCATION, location);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_has_its_status() {
        for (shut, status) in [
            (Shut::Refused(Refusal::NoGrant), 403),
            (Shut::Refused(Refusal::Expired), 403),
            (Shut::Refused(Refusal::Revoked), 403),
            (Shut::Refused(Refusal::RunEnded), 410),
            (Shut::Unavailable, 503),
            (Shut::NotServedHere, 404),
            (Shut::NoPreviewAtHost, 404),
            (Shut::NoExecutorControl, 503),
            (Shut::ExecutorSilent, 502),
            (Shut::PortClosed, 502),
            (Shut::BadPath, 400),
            (Shut::ServerSilent, 502),
            (Shut::SwitchedUnasked, 502),
            (Shut::UpgradesFull, 503),
        ] {
            assert_eq!(shut.status().as_u16(), status, "{shut:?}");
            assert!(!shut.message().is_empty());
        }
    }

    #[test]
    fn the_visit_token_and_cookie_are_taken_out_of_what_is_passed_on() {
        let (token, rest) = visit_token(Some("a=1&sluice_preview_token=abc&b=2"));
        assert_eq!((token.as_deref(), rest.as_str()), (Some("abc"), "a=1&b=2"));
        assert_eq!(visit_token(None), (None, String::new()));
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("theme=dark; sluice_preview=tok; lang=en"));
        let (token, rest) = cookie_token(&headers);
        assert_eq!((token.as_deref(), rest.as_deref()), (Some("tok"), Some("theme=dark; lang=en")));
        let mut only = HeaderMap::new();
        only.insert(header::COOKIE, HeaderValue::from_static("sluice_preview=tok"));
        assert_eq!(cookie_token(&only), (Some("tok".into()), None));
    }
}
