//! Executor calls across hosts. A worker serves its host's executors on an
//! internal API (HTTPS, callers authenticated by the cluster credential);
//! [`RoutedExecutors`] sends each call for an executor of another host to a
//! worker of that host, and makes the others here. The serving worker
//! finds the executor from its own records, never from the caller's word,
//! and only for a run placed on its host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{DefaultBodyLimit, State};
use axum::routing::post;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sluice_executor::daemon::CommandCall;
use sluice_executor::{ExecutorError, ExecutorFuture, Executors, RefusalCode, TakenSnapshot, Target};
use sluice_protocol::capture::{BindRequest, Binds, CaptureStatus, FlushRequest, Replanned};
use sluice_protocol::{CommandStatus, ExecRequest, ExecResponse, FileContents, FileRead, FileWrite};
use sluice_store::Store;

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
const MAX_CALL_TIME: Duration = Duration::from_secs(15 * 60);

/// How long a call without its own bound may take (as on the host).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Time on top of a call's own bound for the hop between hosts.
const HOP_MARGIN: Duration = Duration::from_secs(5);

/// How long a worker's address is remembered before it is read again.
const ADDRESS_TTL: Duration = Duration::from_secs(2);

/// One call into an executor, as sent between hosts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "kebab-case")]
pub enum Call {
    Healthy,
    CaptureStatus { timeout_ms: u64 },
    CaptureFlush { request: FlushRequest, timeout_ms: u64 },
    CaptureReplan,
    Bind { request: BindRequest },
    ReadFile { request: FileRead },
    WriteFile { request: FileWrite },
    CommandStart { identity: String, request: ExecRequest },
    CommandRead { identity: String },
    CommandCancel { identity: String },
    Snapshot { snapshot_id: String, dir: String },
    Exec { request: ExecRequest, timeout_ms: u64 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRequest {
    pub run_id: String,
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

fn millis(d: Duration) -> u64 {
    d.min(MAX_CALL_TIME).as_millis() as u64
}

// ---------------------------------------------------------------- serving

/// What the internal API needs: the store, this host's name, and the
/// executors of this host.
#[derive(Clone)]
pub struct Serving {
    pub store: Store,
    pub host: String,
    pub local: Arc<dyn Executors>,
}

pub use sluice_executor::ticket::GATEWAY_PATH;

/// The internal API a worker serves to the rest of sluice (executor calls,
/// for members only: the caller wraps it with that check) and to SSH
/// gateways (with a ticket the API issued).
pub fn router(serving: Serving) -> axum::Router {
    axum::Router::new()
        .route(CALL_PATH, post(serve_call))
        .route(&format!("{SESSION_PATH}{{run_id}}"), axum::routing::get(serve_session))
        .route(&format!("{GATEWAY_PATH}{{run_id}}"), axum::routing::get(gateway_target))
        .route(&format!("{GATEWAY_PATH}{{run_id}}/session"), axum::routing::get(crate::sessions::relay))
        .layer(DefaultBodyLimit::max(MAX_CALL_BYTES))
        .with_state(serving)
}

/// What a gateway learns of the executor it may reach.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayTarget {
    pub run_id: String,
    pub workspace_id: String,
    pub host: String,
    /// Whether its daemon answers now.
    pub ready: bool,
}

pub(crate) fn gateway_refused(status: axum::http::StatusCode, message: &str) -> axum::response::Response {
    use axum::response::IntoResponse;
    (status, Json(serde_json::json!({"message": message}))).into_response()
}

/// The run a gateway's request names, when it carries a ticket for that
/// run and the run's executor is on this host; otherwise the refusal.
pub(crate) async fn ticketed_run(
    serving: &Serving,
    run_id: &str,
    headers: &axum::http::HeaderMap,
) -> Result<(sluice_store::model::Run, sluice_executor::ticket::Ticket), axum::response::Response> {
    use axum::http::StatusCode;
    let presented = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(presented) = presented else {
        return Err(gateway_refused(StatusCode::UNAUTHORIZED, "a gateway ticket is required"));
    };
    let now = sluice_store::clock::now_ms();
    let ticket = match sluice_executor::ticket::Ticket::check(serving.store.sealer(), presented, run_id, now) {
        Ok(ticket) => ticket,
        Err(refused) => {
            tracing::info!(run = %run_id, %refused, "a gateway ticket was refused");
            return Err(gateway_refused(StatusCode::UNAUTHORIZED, "the gateway ticket is not valid for this executor"));
        }
    };
    match serving.store.get_run(run_id).await {
        Ok(Some(run)) if run.host.as_deref() == Some(serving.host.as_str()) => Ok((run, ticket)),
        Ok(_) => Err(gateway_refused(StatusCode::NOT_FOUND, "no such executor on this host")),
        Err(e) => {
            tracing::warn!(error = %e, "the store did not answer a gateway");
            Err(gateway_refused(StatusCode::SERVICE_UNAVAILABLE, "try again shortly"))
        }
    }
}

/// A gateway connecting to an executor of this host: it must carry a
/// ticket for that run (see [`sluice_executor::ticket`]).
async fn gateway_target(
    State(serving): State<Serving>,
    axum::extract::Path(run_id): axum::extract::Path<String>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let run = match ticketed_run(&serving, &run_id, &headers).await {
        Ok((run, _)) => run,
        Err(refused) => return refused,
    };
    let endpoint = run.runtime.as_ref().filter(|_| run.runtime_removed_at.is_none()).and_then(|r| r.endpoint.clone());
    let ready = match &endpoint {
        Some(endpoint) => serving.local.healthy(Target { run_id: &run.id, endpoint }).await,
        None => false,
    };
    let target = GatewayTarget { run_id: run.id, workspace_id: run.workspace_id, host: serving.host.clone(), ready };
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

async fn serve_call(
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
async fn executor_here(serving: &Serving, run_id: &str) -> Result<(String, String), CallAnswer> {
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
            Some(endpoint) => Ok((run.id.clone(), endpoint.clone())),
            None => Err(CallAnswer::Unreachable { message: "the executor has no control endpoint".into() }),
        },
        None => Err(CallAnswer::Unreachable { message: "the executor is not on its runtime".into() }),
    }
}

/// `GET SESSION_PATH{run}`, upgraded: a session on the executor, its bytes
/// relayed as they are (the caller speaks the session protocol end to end).
async fn serve_session(
    State(serving): State<Serving>,
    axum::extract::Path(run_id): axum::extract::Path<String>,
    mut request: axum::extract::Request,
) -> axum::response::Response {
    use axum::http::StatusCode;
    let upgrade = request.headers().get(axum::http::header::UPGRADE).and_then(|v| v.to_str().ok());
    if upgrade != Some(sluice_protocol::session::UPGRADE) {
        let message = format!("a session is opened with Upgrade: {}", sluice_protocol::session::UPGRADE);
        return gateway_refused(StatusCode::BAD_REQUEST, &message);
    }
    let (run, endpoint) = match executor_here(&serving, &run_id).await {
        Ok(found) => found,
        Err(answer) => return gateway_refused(StatusCode::CONFLICT, &format!("{answer:?}")),
    };
    let Ok(slot) = MEMBER_SESSIONS.try_acquire() else {
        return gateway_refused(StatusCode::SERVICE_UNAVAILABLE, "this host relays as many sessions as it takes");
    };
    let mut daemon = match serving.local.open_session(Target { run_id: &run, endpoint: &endpoint }).await {
        Ok(session) => session,
        Err(e) => return gateway_refused(StatusCode::BAD_GATEWAY, &e.to_string()),
    };
    let upgraded = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let _slot = slot;
        if let Ok(caller) = upgraded.await {
            let _ = tokio::io::copy_bidirectional(&mut hyper_util::rt::TokioIo::new(caller), &mut daemon).await;
        }
    });
    axum::response::Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
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
    let target = Target { run_id: &run_id, endpoint: &endpoint };
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
        Call::ReadFile { request } => answer(local.read_file(target, request).await),
        Call::WriteFile { request } => answer(local.write_file(target, request).await),
        Call::CommandStart { identity, request } => {
            answer(local.command(target, &identity, CommandCall::Start(request)).await)
        }
        Call::CommandRead { identity } => answer(local.command(target, &identity, CommandCall::Read).await),
        Call::CommandCancel { identity } => answer(local.command(target, &identity, CommandCall::Cancel).await),
        Call::Snapshot { snapshot_id, dir } => answer(local.snapshot(target, &snapshot_id, &dir).await),
        Call::Exec { request, timeout_ms } => answer(local.exec(target, request, bounded(timeout_ms)).await),
    }
}

// ---------------------------------------------------------------- calling

/// Where a call for one executor goes.
enum Route {
    Here,
    Host { host: String, url: String },
}

/// The executor port of a process that may not run the executor itself:
/// calls for executors of this process's host (or of no recorded host) are
/// made here, the others on a worker of their host.
#[derive(Debug)]
pub struct RoutedExecutors {
    store: Store,
    /// The host this process's own worker drives, if it runs one.
    here: Option<String>,
    local: Arc<dyn Executors>,
    client: reqwest::Client,
    /// A run's host never changes once placed.
    hosts: Mutex<HashMap<String, Option<String>>>,
    addresses: Mutex<HashMap<String, (Instant, Option<String>)>>,
}

impl RoutedExecutors {
    pub fn new(
        store: Store,
        here: Option<String>,
        local: Arc<dyn Executors>,
        tls: &crate::credential::ClusterTls,
    ) -> Result<RoutedExecutors, crate::credential::ClusterTlsError> {
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls.client_config()?)
            .connect_timeout(Duration::from_secs(3))
            // Within the internal API's header read timeout (10 s), which
            // also closes a connection idle between requests: a call never
            // goes out on a connection the worker is closing.
            .pool_idle_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| crate::credential::ClusterTlsError::from_message(e.to_string()))?;
        Ok(RoutedExecutors {
            store,
            here,
            local,
            client,
            hosts: Mutex::new(HashMap::new()),
            addresses: Mutex::new(HashMap::new()),
        })
    }

    async fn host_of(&self, run_id: &str) -> Result<Option<String>, ExecutorError> {
        if let Some(host) = self.hosts.lock().unwrap().get(run_id) {
            return Ok(host.clone());
        }
        let run =
            self.store.get_run(run_id).await.map_err(|e| ExecutorError::Unreachable(format!("the store: {e}")))?;
        let host = run.and_then(|r| r.host);
        if host.is_some() {
            let mut hosts = self.hosts.lock().unwrap();
            if hosts.len() > 10_000 {
                hosts.clear();
            }
            hosts.insert(run_id.to_owned(), host.clone());
        }
        Ok(host)
    }

    async fn address_of(&self, host: &str) -> Result<Option<String>, ExecutorError> {
        if let Some((at, url)) = self.addresses.lock().unwrap().get(host)
            && at.elapsed() < ADDRESS_TTL
        {
            return Ok(url.clone());
        }
        let url =
            self.store.worker_address(host).await.map_err(|e| ExecutorError::Unreachable(format!("the store: {e}")))?;
        self.addresses.lock().unwrap().insert(host.to_owned(), (Instant::now(), url.clone()));
        Ok(url)
    }

    async fn route(&self, run_id: &str) -> Result<Route, ExecutorError> {
        match self.host_of(run_id).await? {
            None => Ok(Route::Here),
            Some(host) if Some(&host) == self.here.as_ref() => Ok(Route::Here),
            Some(host) => match self.address_of(&host).await? {
                Some(url) => Ok(Route::Host { host, url }),
                None => Err(ExecutorError::HostUnavailable {
                    host,
                    reason: "no worker of it is serving (its heartbeat stopped, or it has no --advertise-url)".into(),
                }),
            },
        }
    }

    async fn send<T: DeserializeOwned>(
        &self,
        host: &str,
        url: &str,
        run_id: &str,
        call: Call,
        bound: Duration,
    ) -> Result<T, ExecutorError> {
        let unavailable = |reason: String| ExecutorError::HostUnavailable { host: host.to_owned(), reason };
        let request = CallRequest { run_id: run_id.to_owned(), call };
        let mut call = self.client.post(format!("{}{CALL_PATH}", url.trim_end_matches('/')));
        // The trace goes on in the executor's worker.
        if let Some(traceparent) = sluice_telemetry::traces::traceparent() {
            call = call.header("traceparent", traceparent);
        }
        let sent = call
            .timeout(bound.min(MAX_CALL_TIME) + HOP_MARGIN)
            .json(&request)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        if !sent.status().is_success() {
            return Err(unavailable(format!("its worker answered {}", sent.status())));
        }
        let body = read_bounded(sent).await.map_err(unavailable)?;
        let answer: CallAnswer =
            serde_json::from_slice(&body).map_err(|e| unavailable(format!("its worker's answer: {e}")))?;
        match answer {
            CallAnswer::Ok { value } => serde_json::from_value(value)
                .map_err(|e| ExecutorError::Unreachable(format!("the executor's answer does not read: {e}"))),
            CallAnswer::Unreachable { message } => Err(ExecutorError::Unreachable(message)),
            CallAnswer::Refused { code, message } => Err(ExecutorError::Refused { code, message }),
            CallAnswer::NotHere { message } => Err(unavailable(message)),
        }
    }
}

/// A transport error in a few words: the message stays short, and names
/// no address.
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "its worker did not answer in time".into()
    } else if e.is_connect() {
        "its worker cannot be reached".into()
    } else if e.is_body() || e.is_decode() {
        "its worker's answer broke off".into()
    } else {
        "the call to its worker failed".into()
    }
}

async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
        if body.len() + chunk.len() > MAX_CALL_BYTES {
            return Err(format!("its worker's answer is over {MAX_CALL_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl Executors for RoutedExecutors {
    fn open_session<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, sluice_executor::SessionStream> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.open_session(target).await,
                Route::Host { host, url } => {
                    let unavailable = |reason: String| ExecutorError::HostUnavailable { host: host.clone(), reason };
                    let session = sluice_protocol::session::UPGRADE;
                    // Bounded while it opens, not once open (a session lasts).
                    let opening = self
                        .client
                        .get(format!("{}{SESSION_PATH}{}", url.trim_end_matches('/'), target.run_id))
                        .header(reqwest::header::CONNECTION, "upgrade")
                        .header(reqwest::header::UPGRADE, session)
                        .send();
                    let answer = tokio::time::timeout(HOP_MARGIN * 2, opening)
                        .await
                        .map_err(|_| unavailable("its worker did not answer in time".into()))?
                        .map_err(|e| unavailable(describe(&e)))?;
                    if answer.status() != reqwest::StatusCode::SWITCHING_PROTOCOLS {
                        return Err(ExecutorError::Unreachable(format!("its worker answered {}", answer.status())));
                    }
                    let upgraded = answer.upgrade().await.map_err(|e| unavailable(describe(&e)))?;
                    Ok(Box::new(upgraded) as sluice_executor::SessionStream)
                }
            }
        })
    }

    fn healthy<'a>(&'a self, target: Target<'a>) -> std::pin::Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            match self.route(target.run_id).await {
                Ok(Route::Here) => self.local.healthy(target).await,
                Ok(Route::Host { host, url }) => {
                    let answer = self.send(&host, &url, target.run_id, Call::Healthy, Duration::from_secs(5)).await;
                    answer.unwrap_or(false)
                }
                Err(_) => false,
            }
        })
    }

    fn watch<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, sluice_executor::Watched> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.watch(target).await,
                Route::Host { host, .. } => {
                    Err(ExecutorError::NotHere(format!("an executor is watched from its own host ({host})")))
                }
            }
        })
    }

    fn capture_status<'a>(&'a self, target: Target<'a>, timeout: Duration) -> ExecutorFuture<'a, CaptureStatus> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.capture_status(target, timeout).await,
                Route::Host { host, url } => {
                    let call = Call::CaptureStatus { timeout_ms: millis(timeout) };
                    self.send(&host, &url, target.run_id, call, timeout).await
                }
            }
        })
    }

    fn capture_flush<'a>(
        &'a self,
        target: Target<'a>,
        request: FlushRequest,
        timeout: Duration,
    ) -> ExecutorFuture<'a, CaptureStatus> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.capture_flush(target, request, timeout).await,
                Route::Host { host, url } => {
                    let call = Call::CaptureFlush { request, timeout_ms: millis(timeout) };
                    self.send(&host, &url, target.run_id, call, timeout).await
                }
            }
        })
    }

    fn capture_replan<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, Replanned> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.capture_replan(target).await,
                Route::Host { host, url } => {
                    self.send(&host, &url, target.run_id, Call::CaptureReplan, CALL_TIMEOUT).await
                }
            }
        })
    }

    fn bind<'a>(&'a self, target: Target<'a>, request: BindRequest) -> ExecutorFuture<'a, Binds> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.bind(target, request).await,
                Route::Host { host, url } => {
                    self.send(&host, &url, target.run_id, Call::Bind { request }, CALL_TIMEOUT).await
                }
            }
        })
    }

    fn read_file<'a>(&'a self, target: Target<'a>, request: FileRead) -> ExecutorFuture<'a, FileContents> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.read_file(target, request).await,
                Route::Host { host, url } => {
                    self.send(&host, &url, target.run_id, Call::ReadFile { request }, CALL_TIMEOUT).await
                }
            }
        })
    }

    fn write_file<'a>(&'a self, target: Target<'a>, request: FileWrite) -> ExecutorFuture<'a, ()> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.write_file(target, request).await,
                Route::Host { host, url } => {
                    self.send(&host, &url, target.run_id, Call::WriteFile { request }, CALL_TIMEOUT).await
                }
            }
        })
    }

    fn command<'a>(
        &'a self,
        target: Target<'a>,
        identity: &'a str,
        call: CommandCall,
    ) -> ExecutorFuture<'a, CommandStatus> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.command(target, identity, call).await,
                Route::Host { host, url } => {
                    let identity = identity.to_owned();
                    let call = match call {
                        CommandCall::Start(request) => Call::CommandStart { identity, request },
                        CommandCall::Read => Call::CommandRead { identity },
                        CommandCall::Cancel => Call::CommandCancel { identity },
                    };
                    self.send(&host, &url, target.run_id, call, CALL_TIMEOUT).await
                }
            }
        })
    }

    fn snapshot<'a>(
        &'a self,
        target: Target<'a>,
        snapshot_id: &'a str,
        dir: &'a str,
    ) -> ExecutorFuture<'a, TakenSnapshot> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.snapshot(target, snapshot_id, dir).await,
                Route::Host { host, url } => {
                    let call = Call::Snapshot { snapshot_id: snapshot_id.to_owned(), dir: dir.to_owned() };
                    self.send(&host, &url, target.run_id, call, MAX_CALL_TIME).await
                }
            }
        })
    }

    fn exec<'a>(
        &'a self,
        target: Target<'a>,
        request: ExecRequest,
        timeout: Duration,
    ) -> ExecutorFuture<'a, ExecResponse> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.exec(target, request, timeout).await,
                Route::Host { host, url } => {
                    let call = Call::Exec { request, timeout_ms: millis(timeout) };
                    self.send(&host, &url, target.run_id, call, timeout).await
                }
            }
        })
    }
}
