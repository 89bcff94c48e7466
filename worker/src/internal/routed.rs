//! The executor port that routes: each call for an executor of another
//! host goes to a worker of that host over the internal API (HTTPS, the
//! cluster credential both ways); the others are made here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use sluice_executor::daemon::CommandCall;
use sluice_executor::{ExecutorError, ExecutorFuture, Executors, TakenSnapshot, Target};
use sluice_protocol::capture::{BindRequest, Binds, CaptureStatus, FlushRequest, Replanned};
use sluice_protocol::{CommandStatus, ExecRequest, ExecResponse};
use sluice_store::Store;

use super::server::{
    CALL_PATH, CALL_TIMEOUT, Call, CallAnswer, CallRequest, HOP_MARGIN, MAX_CALL_BYTES, MAX_CALL_TIME, SESSION_PATH,
    millis,
};
use sluice_domain::ids::{RunId, SnapshotId};

/// How long a worker's address is remembered before it is read again.
const ADDRESS_TTL: Duration = Duration::from_secs(2);

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
    hosts: Mutex<HashMap<RunId, Option<String>>>,
    addresses: Mutex<HashMap<String, (Instant, Option<String>)>>,
}

impl RoutedExecutors {
    pub fn new(
        store: Store,
        here: Option<String>,
        local: Arc<dyn Executors>,
        tls: &crate::internal::credential::ClusterTls,
    ) -> Result<RoutedExecutors, crate::internal::credential::ClusterTlsError> {
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls.client_config()?)
            .connect_timeout(Duration::from_secs(3))
            // Within the internal API's header read timeout (10 s), which
            // also closes a connection idle between requests: a call never
            // goes out on a connection the worker is closing.
            .pool_idle_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| crate::internal::credential::ClusterTlsError::from_message(e.to_string()))?;
        Ok(RoutedExecutors {
            store,
            here,
            local,
            client,
            hosts: Mutex::new(HashMap::new()),
            addresses: Mutex::new(HashMap::new()),
        })
    }

    async fn host_of(&self, run_id: &RunId) -> Result<Option<String>, ExecutorError> {
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
            hosts.insert(run_id.clone(), host.clone());
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

    async fn route(&self, run_id: &RunId) -> Result<Route, ExecutorError> {
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
        run_id: &RunId,
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

    fn activity<'a>(&'a self, target: Target<'a>) -> ExecutorFuture<'a, sluice_protocol::Activity> {
        Box::pin(async move {
            match self.route(target.run_id).await? {
                Route::Here => self.local.activity(target).await,
                Route::Host { host, .. } => {
                    Err(ExecutorError::NotHere(format!("an executor's use is read on its own host ({host})")))
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
        snapshot_id: &'a SnapshotId,
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

    fn exec_streaming<'a>(
        &'a self,
        target: Target<'a>,
        request: sluice_protocol::ExecRequest,
        timeout: Duration,
        output: sluice_executor::streamed::OutputSink,
    ) -> ExecutorFuture<'a, sluice_protocol::ExecResponse> {
        Box::pin(sluice_executor::streamed::exec_streaming(self, target, request, timeout, output))
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
