//! The operator console at `/console`: pages rendered here, with a little
//! script that reloads a page's content when the event feed moves. An
//! operator signs in with an API token; the console keeps no token, only a
//! session cookie (HttpOnly, SameSite=Strict) that names the token by a
//! digest prefix and is signed with a key derived from the install's
//! sealing key, so any API instance honours it; it ends when its token is
//! no longer accepted, and when its sign-in's record ends (a sign-out, or
//! `sluice console sessions revoke`). Every form carries a token derived from the
//! session (CSRF), and what the console does goes through the same store
//! requests as the API's.

mod views;

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use sluice_domain::transition::Request;
use sluice_store::clock::now_ms;
use sluice_store::seal::{hex, random_bytes, token_digest};

use crate::AppState;
use crate::error::{ApiError, ConsoleRefusal};
use sluice_domain::ids::{ConsoleSessionId, OwnerId, SessionId, WorkspaceId};

const SESSION_COOKIE: &str = "sluice_console";
const LOGIN_COOKIE: &str = "sluice_console_login";
/// How long a console session lasts.
const SESSION_FOR_MS: i64 = 8 * 3600 * 1000;
/// How often the console's stream looks at the feed.
const STREAM_POLL: Duration = Duration::from_secs(1);
/// Most rows a console table shows.
const ROWS: i64 = 200;

pub(crate) const SCRIPT: &str = include_str!("console.js");
pub(crate) const STYLE: &str = include_str!("console.css");

/// The console's routes, outside the API token's middleware: they check
/// the session themselves.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(overview))
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .route("/console/workspaces", get(workspaces))
        .route("/console/workspaces/{workspaceId}", get(workspace))
        .route("/console/workspaces/{workspaceId}/recover", post(recover))
        .route("/console/workspaces/{workspaceId}/wake", post(wake))
        .route("/console/workspaces/{workspaceId}/discard", get(discard_page).post(discard))
        .route("/console/workers", get(workers))
        .route("/console/captures/{sessionId}/{n}/archive", get(capture_archive))
        .route("/console/stream", get(stream))
        .route("/console/assets/console.js", get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }))
        .route("/console/assets/console.css", get(|| async { asset("text/css; charset=utf-8", STYLE) }))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// The key sessions and form tokens are signed with.
fn key(app: &AppState) -> [u8; 32] {
    *app.store.sealer().derived_secret("console sessions").expose()
}

fn mac(key: &[u8; 32], parts: &[&str]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    for part in parts {
        mac.update(part.as_bytes());
        mac.update(b"\n");
    }
    mac
}

fn signed(key: &[u8; 32], parts: &[&str]) -> String {
    hex(&mac(key, parts).finalize().into_bytes())
}

/// Compares in constant time.
fn verify(key: &[u8; 32], parts: &[&str], claimed: &str) -> bool {
    let Some(bytes) = unhex(claimed) else { return false };
    mac(key, parts).verify_slice(&bytes).is_ok()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

/// A signed-in operator: the session cookie's value.
pub(crate) struct Session {
    value: String,
    /// The session's record (see the store's console sessions).
    id: ConsoleSessionId,
}

impl Session {
    /// The token every form of this session carries.
    pub(crate) fn csrf(&self, app: &AppState) -> String {
        signed(&key(app), &["csrf", &self.value])
    }
}

/// The session the cookie names: signed here, not past its time, its token
/// still accepted, and its record not ended (a sign-out ends it on the
/// server, so a cookie kept or replayed after it is refused like none). A
/// store that cannot answer is no session either.
async fn session(app: &AppState, headers: &HeaderMap) -> Option<Session> {
    let value = cookie(headers, SESSION_COOKIE)?;
    let mut parts = value.splitn(4, '.');
    let (expires, digest, id, claimed) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let fresh = expires.parse::<i64>().is_ok_and(|at| at > now_ms());
    let signed_here = verify(&key(app), &["session", expires, digest, id], claimed);
    if !(fresh && signed_here && app.config.api_tokens.accepts_digest_prefix(digest)) {
        return None;
    }
    match app.store.console_session_holds(&ConsoleSessionId::from(id)).await {
        Ok(true) => Some(Session { value: value.to_owned(), id: ConsoleSessionId::from(id.to_owned()) }),
        Ok(false) => None,
        Err(e) => {
            tracing::warn!(error = %e, "a console session could not be checked");
            None
        }
    }
}

/// The session, or the sign-in page for a browser that has none.
async fn signed_in(app: &AppState, headers: &HeaderMap) -> Result<Session, Box<Response>> {
    session(app, headers).await.ok_or_else(|| Box::new(Redirect::to("/console/login").into_response()))
}

/// A form's fields, with its CSRF token checked against the session.
async fn form(
    app: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Session, HashMap<String, String>), Box<Response>> {
    let session =
        session(app, headers).await.ok_or_else(|| Box::new(refused(ConsoleRefusal::Forbidden("sign in again"))))?;
    let fields: HashMap<String, String> = serde_urlencoded::from_bytes(body)
        .map_err(|_| Box::new(refused(ConsoleRefusal::Invalid("the form could not be read"))))?;
    let csrf = fields.get("csrf").map(String::as_str).unwrap_or_default();
    if !verify(&key(app), &["csrf", &session.value], csrf) {
        let why = "the form's csrf token does not match this session: reload the page";
        return Err(Box::new(refused(ConsoleRefusal::Forbidden(why))));
    }
    Ok((session, fields))
}

fn refused(refusal: ConsoleRefusal) -> Response {
    (refusal.status(), Html(views::message("Refused", refusal.message()).into_string())).into_response()
}

fn page(markup: maud::Markup) -> Response {
    let mut response = Html(markup.into_string()).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
        .headers_mut()
        .insert("content-security-policy", HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"));
    response
}

/// A failure as a page; an internal one is logged, as the API logs it.
fn failed(e: impl Into<ApiError>) -> Response {
    let e = e.into();
    let (status, body) = e.status_and_body();
    if let ApiError::Internal(cause) = &e {
        tracing::error!(error = %cause, "a console page failed");
    }
    (status, Html(views::message("Something went wrong", &body.message).into_string())).into_response()
}

async fn login_page(State(app): State<AppState>) -> Response {
    let nonce = hex(&random_bytes::<16>());
    let csrf = signed(&key(&app), &["login", &nonce]);
    let mut response = page(views::login(&csrf, None));
    let cookie = format!("{LOGIN_COOKIE}={nonce}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=3600");
    response.headers_mut().append(header::SET_COOKIE, HeaderValue::from_str(&cookie).expect("hex is a header value"));
    response
}

async fn login(State(app): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let fields: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let nonce = cookie(&headers, LOGIN_COOKIE).unwrap_or_default();
    let csrf = fields.get("csrf").map(String::as_str).unwrap_or_default();
    if nonce.is_empty() || !verify(&key(&app), &["login", nonce], csrf) {
        return refused(ConsoleRefusal::Forbidden("the sign-in form expired: load it again"));
    }
    let token = fields.get("token").map(|t| t.trim()).unwrap_or_default();
    if !app.config.api_tokens.accepts(token) {
        tracing::info!("a console sign-in was refused");
        let mut response = page(views::login(csrf, Some("That is not an API token of this install.")));
        *response.status_mut() = ConsoleRefusal::SignedOut.status();
        return response;
    }
    let expires_at = now_ms() + SESSION_FOR_MS;
    let expires = expires_at.to_string();
    let digest = &token_digest(token)[..16];
    let id = hex(&random_bytes::<16>());
    if let Err(e) = app.store.begin_console_session(&ConsoleSessionId::from(&id), expires_at).await {
        return failed(e);
    }
    let value = format!("{expires}.{digest}.{id}.{}", signed(&key(&app), &["session", &expires, digest, &id]));
    let cookie = format!(
        "{SESSION_COOKIE}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_FOR_MS / 1000
    );
    tracing::info!("an operator signed in to the console");
    let mut response = Redirect::to("/console").into_response();
    response.headers_mut().append(header::SET_COOKIE, HeaderValue::from_str(&cookie).expect("a header value"));
    response
}

async fn logout(State(app): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let session = match form(&app, &headers, &body).await {
        Ok((session, _)) => session,
        Err(refusal) => return *refusal,
    };
    if let Err(e) = app.store.end_console_session(&session.id).await {
        return failed(e);
    }
    tracing::info!("an operator signed out of the console");
    let mut response = Redirect::to("/console/login").into_response();
    let cleared = format!("{SESSION_COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0");
    response.headers_mut().append(header::SET_COOKIE, HeaderValue::from_str(&cleared).expect("a header value"));
    response
}

async fn overview(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&app, &headers).await {
        Ok(session) => session,
        Err(to_login) => return *to_login,
    };
    let read = async {
        let retained = app.store.list_retained(ROWS).await?;
        let drains = app.store.drains_in_progress(ROWS).await?;
        let workers = app.store.workers().await?;
        Ok::<_, sluice_store::StoreError>((retained, drains, workers))
    };
    match read.await {
        Ok((retained, drains, workers)) => {
            page(views::overview(&session.csrf(&app), &retained, &drains, &workers, now_ms()))
        }
        Err(e) => failed(e),
    }
}

async fn workspaces(State(app): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let session = match signed_in(&app, &headers).await {
        Ok(session) => session,
        Err(to_login) => return *to_login,
    };
    let filters: HashMap<String, String> =
        serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default();
    let status = match filters.get("status").map(String::as_str).filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => match text.parse() {
            Ok(status) => Some(status),
            Err(_) => return refused(ConsoleRefusal::Invalid("status is not a workspace status")),
        },
    };
    let owner = filters.get("owner").map(|o| o.trim()).filter(|o| !o.is_empty()).map(OwnerId::from);
    match app.store.all_workspaces(status, owner.as_ref(), ROWS).await {
        Ok(list) => page(views::workspaces(&session.csrf(&app), &list, status, owner.as_ref(), now_ms())),
        Err(e) => failed(e),
    }
}

async fn workspace(State(app): State<AppState>, headers: HeaderMap, Path(id): Path<WorkspaceId>) -> Response {
    let session = match signed_in(&app, &headers).await {
        Ok(session) => session,
        Err(to_login) => return *to_login,
    };
    let read = async {
        let Some(state) = app.store.load_reconcile_state(&id).await? else { return Ok(None) };
        let timeline = app.store.timeline(&id, 500).await?;
        let captures = match state.workspace.spec.capture_session() {
            Some(session_id) => {
                let owner = &state.workspace.owner_user_id;
                app.store.list_captures(owner, &SessionId::from(session_id), 0, 1000).await?.unwrap_or_default()
            }
            None => Vec::new(),
        };
        Ok::<_, sluice_store::StoreError>(Some((state, timeline, captures)))
    };
    match read.await {
        Ok(Some((state, timeline, captures))) => {
            page(views::workspace(&session.csrf(&app), &state, &timeline, &captures, now_ms()))
        }
        Ok(None) => refused(ConsoleRefusal::NotFound("no such workspace")),
        Err(e) => failed(e),
    }
}

/// The owner of a workspace, which every request about it names.
async fn owner_of(app: &AppState, id: &WorkspaceId) -> Result<OwnerId, Response> {
    match app.store.load_reconcile_state(id).await {
        Ok(Some(state)) => Ok(state.workspace.owner_user_id),
        Ok(None) => Err(refused(ConsoleRefusal::NotFound("no such workspace"))),
        Err(e) => Err(failed(e)),
    }
}

/// Where a form asked to go back to: a console page, nothing else.
fn back(fields: &HashMap<String, String>) -> String {
    match fields.get("back") {
        Some(path) if path.starts_with("/console") && !path.starts_with("//") && !path.contains("://") => path.clone(),
        _ => "/console".into(),
    }
}

/// A console form about a workspace: the form checked against the session,
/// the workspace's owner read, and the page to go back to.
async fn form_on(
    app: &AppState,
    headers: &HeaderMap,
    id: &WorkspaceId,
    body: &Bytes,
) -> Result<(OwnerId, String), Response> {
    let fields = match form(app, headers, body).await {
        Ok((_, fields)) => fields,
        Err(refusal) => return Err(*refusal),
    };
    Ok((owner_of(app, id).await?, back(&fields)))
}

async fn recover(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<WorkspaceId>,
    body: Bytes,
) -> Response {
    let (owner, back) = match form_on(&app, &headers, &id, &body).await {
        Ok(asked) => asked,
        Err(refusal) => return refusal,
    };
    match app.store.request(&owner, &id, Request::Recover).await {
        Ok(_) => {
            app.work_enqueued();
            tracing::info!(workspace = %id, "recovery asked for from the console");
            Redirect::to(&back).into_response()
        }
        Err(e) => failed(e),
    }
}

/// Wakes a sleeping workspace as an owner's `POST …/wake` does (not over
/// another executor's unsaved work); the page follows it to ready.
async fn wake(State(app): State<AppState>, headers: HeaderMap, Path(id): Path<WorkspaceId>, body: Bytes) -> Response {
    let (owner, back) = match form_on(&app, &headers, &id, &body).await {
        Ok(asked) => asked,
        Err(refusal) => return refusal,
    };
    let deadline = tokio::time::Instant::now() + crate::waiting::FALLING_ASLEEP_WAIT;
    let cause = sluice_domain::sleep::WakeCause::Requested;
    match crate::waiting::wake(&app, &owner, &id, cause, deadline).await {
        Ok(woken) => {
            if woken.is_some() {
                tracing::info!(workspace = %id, "woken from the console");
            }
            Redirect::to(&back).into_response()
        }
        Err(e) => failed(e),
    }
}

async fn discard_page(State(app): State<AppState>, headers: HeaderMap, Path(id): Path<WorkspaceId>) -> Response {
    let session = match signed_in(&app, &headers).await {
        Ok(session) => session,
        Err(to_login) => return *to_login,
    };
    match app.store.load_reconcile_state(&id).await {
        Ok(Some(state)) => page(views::discard(&session.csrf(&app), &state)),
        Ok(None) => refused(ConsoleRefusal::NotFound("no such workspace")),
        Err(e) => failed(e),
    }
}

async fn discard(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<WorkspaceId>,
    body: Bytes,
) -> Response {
    let fields = match form(&app, &headers, &body).await {
        Ok((_, fields)) => fields,
        Err(refusal) => return *refusal,
    };
    if fields.get("confirm").map(String::as_str) != Some(id.as_str()) {
        return refused(ConsoleRefusal::Invalid("confirm by typing the workspace's id"));
    }
    let owner = match owner_of(&app, &id).await {
        Ok(owner) => owner,
        Err(refusal) => return refusal,
    };
    let intent = sluice_store::StopIntent { discard: true, attestation: None };
    let request = Request::Stop { by: "an operator, from the console".into(), intent };
    match app.store.request(&owner, &id, request).await {
        Ok(_) => {
            app.work_enqueued();
            tracing::warn!(workspace = %id, "unsaved work discarded from the console");
            Redirect::to("/console").into_response()
        }
        Err(e) => failed(e),
    }
}

async fn workers(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&app, &headers).await {
        Ok(session) => session,
        Err(to_login) => return *to_login,
    };
    let read = async { Ok::<_, sluice_store::StoreError>((app.store.workers().await?, app.store.hosts().await?)) };
    match read.await {
        Ok((workers, hosts)) => page(views::workers(&session.csrf(&app), &workers, &hosts, now_ms())),
        Err(e) => failed(e),
    }
}

async fn capture_archive(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path((session_id, n)): Path<(SessionId, u64)>,
) -> Response {
    if let Err(to_login) = signed_in(&app, &headers).await {
        return *to_login;
    }
    let owner = match app.store.capture_session(&session_id).await {
        Ok(Some(session)) => session.owner_user_id,
        Ok(None) => return refused(ConsoleRefusal::NotFound("no such capture session")),
        Err(e) => return failed(e),
    };
    match crate::routes::capture_sessions::archive(&app, &owner, &session_id, n).await {
        Ok(response) => response,
        Err(e) => failed(e),
    }
}

/// Tells the console's pages that the feed moved (`data:` is its cursor),
/// from now on; the page then reads itself again.
async fn stream(State(app): State<AppState>, headers: HeaderMap) -> Response {
    if session(&app, &headers).await.is_none() {
        return ConsoleRefusal::SignedOut.status().into_response();
    }
    let Ok(slot) = app.streams.clone().try_acquire_owned() else {
        return ConsoleRefusal::Busy.status().into_response();
    };
    let start = match app.store.feed_end().await {
        Ok(cursor) => cursor,
        Err(e) => return failed(e),
    };
    let moves = futures::stream::unfold((app, start, slot), |(app, mut after, slot)| async move {
        loop {
            if app.closing() {
                return None;
            }
            match app.store.feed_after(after, 500).await {
                Ok(batch) if !batch.is_empty() => {
                    after = batch.last().expect("not empty").cursor;
                    let event = SseEvent::default().data(after.to_string());
                    return Some((Ok::<_, Infallible>(event), (app, after, slot)));
                }
                Ok(_) => tokio::time::sleep(STREAM_POLL).await,
                Err(_) => return None,
            }
        }
    });
    Sse::new(moves).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("a=1; sluice_console_login=n; sluice_console=v.x.y"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("v.x.y"));
        assert_eq!(cookie(&headers, LOGIN_COOKIE), Some("n"));
        assert_eq!(cookie(&headers, "b"), None);
    }

    #[test]
    fn signatures_verify_only_for_their_parts() {
        let key = [3u8; 32];
        let sig = signed(&key, &["session", "1", "abc"]);
        assert!(verify(&key, &["session", "1", "abc"], &sig));
        assert!(!verify(&key, &["session", "2", "abc"], &sig));
        assert!(!verify(&[4u8; 32], &["session", "1", "abc"], &sig));
        assert!(!verify(&key, &["session", "1", "abc"], "zz"));
        assert!(!verify(&key, &["session", "1", "abc"], ""));
    }

    #[test]
    fn forms_go_back_only_to_console_pages() {
        let back_to = |path: &str| back(&HashMap::from([("back".to_owned(), path.to_owned())]));
        assert_eq!(back_to("/console/workspaces/ws_1"), "/console/workspaces/ws_1");
        for elsewhere in ["https://evil.example/console", "//evil.example", "/v1/workspaces", "/console://x"] {
            assert_eq!(back_to(elsewhere), "/console", "{elsewhere}");
        }
    }
}
