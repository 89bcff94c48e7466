//! How a sluice process is put together: `serve` (the API with its own
//! worker), `api` (the API alone) and `worker`, each from its settings, the
//! listener it answers on and a root cancellation token that stops it. The
//! `sluice` binary parses its flags and calls these; a test can start a
//! whole server in process the same way.

pub mod config;
pub mod internal;

use std::sync::Arc;

use anyhow::Context;
use sluice_api::{ApiConfig, AppState};
use tokio::sync::{Notify, watch};
pub use tokio_util::sync::CancellationToken;

use config::{ApiArgs, MetricsArgs, StoreArgs, WebhookArgs, WorkerArgs};

/// What an API process runs from.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    pub store: StoreArgs,
    pub api: ApiArgs,
    pub metrics: MetricsArgs,
    pub webhooks: WebhookArgs,
}

/// What runs beside an API: its own worker (`serve`), or nothing but the
/// object store it reads captures from (`api`; the data directory's
/// `objects/` when `None`).
#[derive(Debug, Clone)]
pub enum Beside {
    Worker(Box<WorkerArgs>),
    ObjectStore(Option<String>),
}

/// `serve`'s flags: the API's settings and its worker's.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeFlags {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub api: ApiArgs,
    #[command(flatten)]
    pub worker: WorkerArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub webhooks: WebhookArgs,
}

impl ServeFlags {
    /// The API's settings, and the worker beside it.
    pub fn split(self) -> (ApiSettings, Beside) {
        let ServeFlags { store, api, worker, metrics, webhooks } = self;
        (ApiSettings { store, api, metrics, webhooks }, Beside::Worker(Box::new(worker)))
    }
}

/// `serve`'s settings from its flags, parsed as the binary parses them
/// (the environment included; defaults for the rest): what a test starting
/// a whole server in process passes to [`serve_api`].
pub fn serve_settings<T: Into<std::ffi::OsString> + Clone>(
    flags: impl IntoIterator<Item = T>,
) -> Result<(ApiSettings, Beside), clap::Error> {
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        flags: ServeFlags,
    }
    let argv = std::iter::once(std::ffi::OsString::from("serve")).chain(flags.into_iter().map(Into::into));
    Ok(<Serve as clap::Parser>::try_parse_from(argv)?.flags.split())
}

/// How long requests in flight may run once shutdown begins.
pub const HTTP_DRAIN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// A worker alone (`sluice worker`): its jobs, its internal API (when
/// `--internal-listen` is given) and its metrics listener, until `stop`.
pub async fn run_worker(
    store_args: StoreArgs,
    worker_args: WorkerArgs,
    metrics_args: MetricsArgs,
    webhooks: WebhookArgs,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let store = store_args.open().await?;
    let metrics = Arc::new(sluice_telemetry::Metrics::new());
    let worker =
        start_worker(&store_args, &worker_args, &webhooks, store.clone(), Arc::new(Notify::new()), metrics.clone())
            .await?;
    let stopped = watch_of(&stop);
    let state = AppState::new(
        store.clone(),
        ApiConfig { control: Some(worker.executors.clone()), metrics, ..Default::default() },
    );
    let scraped = serve_metrics(&metrics_args, state, stopped.clone()).await?;
    let host = worker.config.host.clone();
    let internal =
        internal::serve(&worker_args, &store, &host, worker.executors.clone(), wait(stopped.clone())).await?;
    sluice_worker::run(worker, wait(stopped)).await;
    if let Some((_, serving)) = internal {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, serving).await;
    }
    if let Some(scraped) = scraped {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, scraped).await;
    }
    store.close().await;
    Ok(())
}

/// Opens the runtime and builds this process's worker.
pub async fn start_worker(
    store_args: &StoreArgs,
    args: &WorkerArgs,
    webhooks: &WebhookArgs,
    store: sluice_store::Store,
    wake: Arc<Notify>,
    metrics: Arc<sluice_telemetry::Metrics>,
) -> anyhow::Result<Arc<sluice_worker::Worker>> {
    store_args.ensure_data_dir()?;
    let (runtime, unsandboxed) = args.runtime(&store_args.data_dir).await.context("cannot open the runtime")?;
    if unsandboxed {
        tracing::warn!(posture = %runtime.posture(), "executors are NOT sandboxed");
    } else {
        tracing::info!(posture = %runtime.posture(), "runtime ready");
    }
    let objects_url = args.object_store(&store_args.data_dir)?;
    let objects = sluice_capture_store::objects::Objects::open(&objects_url, store.clone())
        .context("cannot open the object store")?;
    tracing::info!(objects = %objects_url.describe(), "capture object store");
    let template_builder = match args.template_builder(&store_args.data_dir, runtime.image_cache()).await {
        Ok(builder) => {
            tracing::info!(builder = builder.builder.name(), "template builds on this host");
            Some(builder)
        }
        Err(why) => {
            tracing::info!(%why, "no template builds on this host");
            None
        }
    };
    let config =
        sluice_worker::WorkerConfig { metrics, webhooks: webhooks.policy(), template_builder, ..args.worker_config()? };
    if store_args.database_url.is_none() && sole_worker_of_database(&store_args.data_dir)? {
        let expired = store.expire_predecessor_leases(&config.id).await?;
        if expired > 0 {
            tracing::info!(leases = expired, "took back the leases of this database's previous worker process");
        }
    }
    Ok(sluice_worker::Worker::new(store, runtime, config, wake, objects))
}

/// Every process that works on the embedded database holds a shared lock on
/// `DATA_DIR/sluice.db.workers` for its life. A process that gets the lock
/// exclusively first is the only one: any lease still held on the database
/// belongs to a process that is gone (a `serve` killed and restarted), and
/// is taken back at once rather than when it runs out.
fn sole_worker_of_database(data_dir: &std::path::Path) -> anyhow::Result<bool> {
    use std::os::fd::AsRawFd;
    static HELD: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
    let path = data_dir.join("sluice.db.workers");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let fd = file.as_raw_fd();
    // SAFETY: flock on a descriptor this function owns.
    let sole = unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0;
    // SAFETY: as above; blocks only while another process converts its own lock.
    if unsafe { libc::flock(fd, libc::LOCK_SH) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("cannot lock {}", path.display()));
    }
    let _ = HELD.set(file);
    Ok(sole)
}

/// The API on `listener`, with its own worker (`serve`) or alone with the
/// object store it reads captures from (`api`), until `stop` is cancelled;
/// then it finishes the requests in flight (within a deadline) and its
/// worker's passes, and closes the store.
pub async fn serve_api(
    settings: ApiSettings,
    beside: Beside,
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let ApiSettings { store: store_args, api: api_args, metrics: metrics_args, webhooks } = settings;
    let (mut worker_args, object_store) = match beside {
        Beside::Worker(worker) => (Some(*worker), None),
        Beside::ObjectStore(object_store) => (None, object_store),
    };
    // The embedded default is complete: its worker serves its executors on
    // a loopback port of its own, so a gateway beside it (and previews)
    // reach them with no flag.
    let loopback_internal = match worker_args.as_mut() {
        Some(args) if args.internal_listen.is_none() => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").context("cannot listen on loopback")?;
            args.internal_listen = Some(listener.local_addr()?.to_string());
            Some(listener)
        }
        _ => None,
    };
    store_args.ensure_data_dir()?;
    let store = store_args.open().await?;
    let api_tokens = api_args.api_tokens(&store_args.data_dir)?;
    let gateway_tokens = api_args.gateway_tokens(&store_args.data_dir)?;
    let wake = Arc::new(Notify::new());
    let broker_wake = wake.clone();
    // One registry for the process: its API's counters and its worker's.
    let metrics = Arc::new(sluice_telemetry::Metrics::new());
    let worker = match &worker_args {
        Some(args) => {
            Some(start_worker(&store_args, args, &webhooks, store.clone(), wake.clone(), metrics.clone()).await?)
        }
        None => None,
    };
    let objects = match &worker {
        Some(worker) => Some(worker.objects().clone()),
        None => {
            use sluice_capture_store::objects::{ObjectStoreUrl, Objects};
            let url = match &object_store {
                Some(text) => ObjectStoreUrl::parse(text).map_err(|e| anyhow::anyhow!("--object-store: {e}"))?,
                None => ObjectStoreUrl::Local(std::path::absolute(store_args.data_dir.join("objects"))?),
            };
            Some(Objects::open(&url, store.clone()).context("cannot open the object store")?)
        }
    };
    // Serving its own worker, the API knows what the runtime cannot enforce.
    let unenforceable = worker
        .as_ref()
        .map(|w| w.runtime.unenforceable().into_iter().map(|(resource, why)| (resource.to_owned(), why)).collect());
    // One reaches executors' daemons (here, or on their hosts); one reads
    // captures back out of the object store.
    let captures = objects.clone().map(|objects| Arc::new(sluice_capture_store::reader::CaptureReader::new(objects)));
    let local = Arc::new(sluice_worker::executors::LocalExecutors::new(store.clone(), objects.clone()));
    let here = worker.as_ref().map(|w| w.config.host.clone());
    let control = internal::routed(&store, here, local.clone())?;
    let mut config = ApiConfig {
        api_tokens,
        gateway_tokens,
        default_ttl_seconds: api_args.default_ttl_seconds,
        http: api_args.http_limits(),
        unenforceable,
        capture_defaults: api_args.capture_defaults(),
        control: Some(control.clone()),
        captures,
        cluster_authority: Some(internal::authority(&store)?),
        previews: None,
        metrics,
        webhook_allow_private: webhooks.webhook_allow_private,
    };
    tracing::info!(address = %listener.local_addr()?, backend = ?store.backend(), "sluice API listening");

    let previews = match (&api_args.preview_listen, &api_args.preview_domain) {
        (Some(address), Some(domain)) => {
            let listener =
                tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
            let listen_port = listener.local_addr()?.port();
            let url_port = api_args.preview_url_port.unwrap_or(listen_port);
            config.previews = Some(sluice_api::PreviewSettings {
                domain: domain.clone(),
                scheme: "https",
                url_port: (url_port != 443).then_some(url_port),
            });
            let tls =
                if api_args.preview_plaintext { None } else { Some(preview_tls(&store_args, &api_args, domain)?) };
            tracing::info!(
                address = %listener.local_addr()?,
                %domain,
                tls = if tls.is_some() { "here" } else { "terminated in front" },
                "previews listening at https://PORT-WORKSPACEID.{domain}/"
            );
            Some((listener, tls.map(|t| t.acceptor)))
        }
        _ => None,
    };
    let stopped = watch_of(&stop);
    let mut state = AppState::new(store.clone(), config);
    state.closing = Some(stopped.clone());
    let internal = match (&worker, &worker_args) {
        (Some(worker), Some(args)) => {
            let host = worker.config.host.clone();
            let executors = worker.executors.clone();
            internal::serve_on(args, loopback_internal, &store, &host, executors, wait(stopped.clone())).await?
        }
        _ => None,
    };
    let worker = worker.map(|worker| {
        state.wake = Some(wake);
        tokio::spawn(sluice_worker::run(worker, wait(stopped.clone())))
    });
    let broker = match &api_args.broker_listen {
        Some(address) => {
            let tls = broker_tls(&store_args, &api_args)?;
            let listener =
                tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
            tracing::info!(
                address = %listener.local_addr()?,
                certificate = %tls.cert_path.display(),
                fingerprint = %tls.fingerprint,
                "execution broker listening (HTTPS only) at /broker/v1"
            );
            let router = sluice_broker::router(sluice_broker::BrokerState {
                store: store.clone(),
                wake: Some(broker_wake.clone()),
                control: Some(control.clone()),
            });
            let limits = sluice_api::listener::HttpLimits {
                max_body_bytes: sluice_broker::MAX_BODY_BYTES,
                ..api_args.http_limits()
            };
            let serving =
                sluice_api::listener::serve_over(router, listener, limits, Some(tls.acceptor), wait(stopped.clone()));
            Some(tokio::spawn(serving))
        }
        None => None,
    };
    let scraped = serve_metrics(&metrics_args, state.clone(), stopped.clone()).await?;
    let previews = previews.map(|(listener, tls)| {
        tokio::spawn(sluice_api::preview_proxy::serve(state.clone(), listener, tls, wait(stopped.clone())))
    });
    // HTTP stops first: in-flight requests get a bounded time to finish.
    let mut http = tokio::spawn(sluice_api::serve(state, listener, wait(stopped.clone())));
    tokio::select! {
        result = &mut http => result??,
        _ = wait(stopped) => match tokio::time::timeout(HTTP_DRAIN_DEADLINE, &mut http).await {
            Ok(result) => result??,
            Err(_) => {
                tracing::warn!(deadline_s = HTTP_DRAIN_DEADLINE.as_secs(), "requests still running at the deadline were cut off");
                http.abort();
            }
        },
    }
    if let Some(broker) = broker {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, broker).await;
    }
    if let Some(previews) = previews {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, previews).await;
    }
    if let Some(scraped) = scraped {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, scraped).await;
    }
    if let Some(worker) = worker {
        worker.await?;
    }
    if let Some((_, serving)) = internal {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, serving).await;
    }
    store.close().await;
    tracing::info!("sluice stopped");
    Ok(())
}

/// Serves `GET /metrics` with no token on `--metrics-listen`, if given.
async fn serve_metrics(
    args: &MetricsArgs,
    state: AppState,
    stopped: watch::Receiver<bool>,
) -> anyhow::Result<Option<tokio::task::JoinHandle<std::io::Result<()>>>> {
    let Some(address) = &args.metrics_listen else { return Ok(None) };
    let listener =
        tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
    tracing::info!(address = %listener.local_addr()?, "metrics listening at /metrics (no token)");
    let limits = state.config.http.clone();
    let router = sluice_api::metrics_router(state);
    Ok(Some(tokio::spawn(sluice_api::listener::serve(router, listener, limits, wait(stopped)))))
}

/// The preview listener's TLS: the operator's pair, or one generated for
/// `*.DOMAIN` (kept per domain).
fn preview_tls(store: &StoreArgs, api: &ApiArgs, domain: &str) -> anyhow::Result<sluice_broker::tls::BrokerTls> {
    let (cert, key) = match (&api.preview_tls_cert, &api.preview_tls_key) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => {
            let dir = store.data_dir.join("preview-tls").join(domain);
            sluice_broker::tls::ensure_self_signed_for(&dir, &[&format!("*.{domain}"), domain])?
        }
    };
    // HTTP/2 for the clients that offer it, HTTP/1.1 for the others.
    Ok(sluice_broker::tls::load_offering(&cert, &key, &[b"h2", b"http/1.1"])?)
}

/// The broker listener's TLS: the operator's pair, or the generated one.
fn broker_tls(store: &StoreArgs, api: &ApiArgs) -> anyhow::Result<sluice_broker::tls::BrokerTls> {
    let (cert, key) = match (&api.tls_cert, &api.tls_key) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => sluice_broker::tls::ensure_self_signed(&store.data_dir.join("broker-tls"))?,
    };
    Ok(sluice_broker::tls::load(&cert, &key)?)
}

/// A channel that flips once `stop` is cancelled: what the listeners and
/// the worker wait on.
fn watch_of(stop: &CancellationToken) -> watch::Receiver<bool> {
    let (flip, stopped) = watch::channel(stop.is_cancelled());
    let stop = stop.clone();
    tokio::spawn(async move {
        stop.cancelled().await;
        let _ = flip.send(true);
    });
    stopped
}

async fn wait(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stopped| *stopped).await;
}
